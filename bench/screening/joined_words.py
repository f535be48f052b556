"""Planted instructions written as one word -- "_" or "." for their spaces, or CamelCase -- against the same
instructions in prose (found reviewing the tag rule, 2026-12-04; ``lexical-5.2`` also reads a token of four joined
words or more with its spaces, docs/screening.md).

Each distinct one-line attack of the validation, test4 and test5 splits is put into a short document as a sentence
of prose (``prose``), and with its spaces written as ``_`` (``underscores``), ``.`` (``dots``) or CamelCase
(``camel``); every text is screened alone with itself as the document. Prints the flagged counts per split and way,
as JSON (run it on two checkouts to compare detector versions).

    python -m bench.screening.joined_words
"""

from __future__ import annotations

import json

LEAD = "The release notes below list what changed in this version."
TAIL = "Each change is reviewed before the release."


def planted_text(attack: str, way: str) -> str:
    words = attack.split()
    if way == "underscores":
        attack = "_".join(words)
    elif way == "dots":
        attack = ".".join(words)
    elif way == "camel":
        attack = "".join(w[:1].upper() + w[1:] for w in words)
    return f"{LEAD} {attack} {TAIL}"


def main() -> None:
    from bench.screening.table_rows import planted_flags

    print(json.dumps(planted_flags(planted_text, ("prose", "underscores", "dots", "camel"))))


if __name__ == "__main__":
    main()
