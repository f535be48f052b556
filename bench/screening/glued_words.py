"""Planted instructions whose first word is glued to something or misspelt (twenty-first session, screen21;
``lexical-5.4`` reads a key word glued to digits, underscores or a stray letter, or one edit off, as itself, and
terminal codes as separators: docs/screening.md).

``planted``: each distinct English attack of :mod:`bench.screening.attacks` (``GROUPS``, ``TRAIN_GROUPS``, fillers
filled) in a two-sentence document, as prose and with its first word written each way of :data:`WAYS` -- the ways
the attacker's finding named, and one more of each kind (two digits, an SGR colour code, a letter dropped) -- screened
alone with itself as the document; ``parsed``: the same with a terminal code before the attack in a Markdown
document, through the real parser and chunker (which drop the ESC and keep ``[1m``). ``clean``: the clean Markdown
of this machine, as :mod:`bench.screening.markup_words` reads it (run on two checkouts and compare).

    python -m bench.screening.glued_words planted
    python -m bench.screening.glued_words clean > flagged.json
"""

from __future__ import annotations

import json
import sys

LEAD = "The release notes below list what changed in this version."
TAIL = "Each change is reviewed before the release."


def _dropped(word: str) -> str:
    return word[:2] + word[3:] if len(word) > 4 else word


def _swapped(word: str) -> str:
    return word[:2] + word[3] + word[2] + word[4:] if len(word) > 4 else word


WAYS = {
    "prose": lambda w: w,
    "stray letter (xIgnore)": lambda w: "x" + w,
    "letter doubled at the end (Ignoree)": lambda w: w + w[-1],
    "leading digit (1Ignore)": lambda w: "1" + w,
    "two digits (00Ignore)": lambda w: "00" + w,
    "underscore (_Ignore)": lambda w: "_" + w,
    "ESC[1m": lambda w: "\x1b[1m" + w,
    "[1m (ESC dropped)": lambda w: "[1m" + w,
    "[0;31m (ESC dropped)": lambda w: "[0;31m" + w,
    "a letter dropped (Igore)": _dropped,
    # the twenty-second session's shapes (screen22, lexical-5.5)
    "two neighbours swapped (Emial)": _swapped,
    "swapped and the last letter doubled (Igonree)": lambda w: _swapped(w) + w[-1],
    "two letters before it (xxIgnore)": lambda w: "xx" + w,
    "one letter before it, lower-cased (xrespond)": lambda w: "x" + w.lower(),
}


def _written(attack: str, way) -> str:
    first, _, rest = attack.partition(" ")
    return f"{way(first)} {rest}"


def planted() -> dict:
    from bench.screening.attacks import english_attacks
    from ingestion.screening import screen_chunks

    attacks = english_attacks()
    counts: dict = {"attacks": len(attacks)}
    for name, way in WAYS.items():
        texts = [f"{LEAD} {_written(a, way)} {TAIL}" for a in attacks]
        counts[name] = sum(screen_chunks([text], document_text=text)[0].flagged for text in texts)
    counts["parsed Markdown, ESC[1m before the attack"] = sum(_parsed_flagged(f"{LEAD} \x1b[1m{a} {TAIL}")
                                                              for a in attacks)
    return counts


def _parsed_flagged(body: str) -> bool:
    from accounts.policy import Policy
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks
    from ingestion.structure import resolve_policies

    doc = resolve_policies(parse(f"# Notes\n\n{body}\n".encode(), filename="notes.md"), Policy())
    texts = [c.embed_text for c in chunk_document(doc, ChunkingConfig(), default_counter())]
    return any(v.flagged for v in screen_chunks(texts, document_text=doc.text))


if __name__ == "__main__":
    if sys.argv[1:] == ["planted"]:
        print(json.dumps(planted()))
    else:
        from bench.screening.markup_words import clean

        print(json.dumps(clean()))
