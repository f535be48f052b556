"""Planted instructions whose words markup cuts in pieces, and the clean Markdown of this machine (fifteenth session,
attack16b; ``lexical-5.3`` reads a sentence with markup inside a word with the markup out, docs/screening.md).

``planted``: each distinct English attack of :mod:`bench.screening.attacks` (``GROUPS``, ``TRAIN_GROUPS``, fillers
filled) in a two-sentence document, as prose and with each word of three letters or more cut in half by ``**``,
``<b>``/``</b>`` or backticks, and broken at its middle word by a line break or a blank line (and ``every-wrap``/``every-blank-line``: flagged
at every word boundary it can be broken at, the attacker's choice); every text screened alone with itself as the document. ``clean``: every chunk of the
Markdown files over 1 KB under the environment's ``site-packages``, this repository's ``docs/``, ``evaluation/`` and
``samples/``, and the Markdown descriptions of the packages' ``METADATA``, chunked by the real parser and chunker and
screened with its document; prints the flagged chunks (run on two checkouts and compare).

    python -m bench.screening.markup_words planted
    python -m bench.screening.markup_words clean > flagged.json
"""

from __future__ import annotations

import glob
import json
import sys
import sysconfig
from pathlib import Path

LEAD = "The release notes below list what changed in this version."
TAIL = "Each change is reviewed before the release."
WAYS = {"prose": None, "strong": ("**", "**"), "html": ("<b>", "</b>"), "code": ("`", "`"), "wrapped": "\n",
        "blank-line": "\n\n"}
ROOT = Path(__file__).resolve().parents[2]


def _cut(word: str, left: str, right: str) -> str:
    middle = max(1, len(word) // 2)
    return f"{left}{word[:middle]}{right}{word[middle:]}" if len(word) > 2 and word.isalpha() else word


def _written(attack: str, marks) -> str:
    """The attack as prose, each word cut by ``marks`` (a pair), or broken at its middle word by ``marks`` (a line
    break or a blank line: a soft-wrapped paragraph, two paragraphs)."""
    words = attack.split()
    if marks is None:
        return attack
    if isinstance(marks, str):
        middle = len(words) // 2
        return " ".join(words[:middle]) + marks + " ".join(words[middle:])
    return " ".join(_cut(w, *marks) for w in words)


def planted() -> dict:
    from bench.screening.attacks import english_attacks
    from ingestion.screening import screen_chunks

    attacks = english_attacks()
    counts: dict = {"attacks": len(attacks)}
    for way, marks in WAYS.items():
        texts = [f"{LEAD} {_written(a, marks)} {TAIL}" for a in attacks]
        counts[way] = sum(screen_chunks([text], document_text=text)[0].flagged for text in texts)
    # The attacker's cut: flagged however the attack is broken by a line break (at every word boundary).
    for way, brk in (("every-wrap", "\n"), ("every-blank-line", "\n\n")):
        held = 0
        for attack in attacks:
            words = attack.split()
            texts = [f"{LEAD} {' '.join(words[:k])}{brk}{' '.join(words[k:])} {TAIL}" for k in range(1, len(words))]
            held += all(v.flagged for text in texts for v in screen_chunks([text], document_text=text))
        counts[way] = held
    return counts


def clean_texts() -> list[tuple[str, bytes]]:
    """(name, bytes) of each clean Markdown text of this machine (the module's docstring says which)."""
    site = Path(sysconfig.get_paths()["purelib"])
    files = sorted(p for p in [*site.rglob("*.md"), *(q for d in ("docs", "evaluation", "samples")
                                                      for q in (ROOT / d).rglob("*.md"))]
                   if p.is_file() and p.stat().st_size > 1024)
    texts = [(str(p), p.read_bytes()) for p in files]
    for meta in sorted(glob.glob(str(site / "*.dist-info" / "METADATA"))):
        head, _, body = Path(meta).read_text(encoding="utf-8", errors="replace").partition("\n\n")
        if "text/markdown" in head and len(body) > 500:
            texts.append((meta, body.encode()))
    return texts


def clean() -> dict:
    from accounts.policy import Policy
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks
    from ingestion.structure import resolve_policies

    texts = clean_texts()
    config, counter = ChunkingConfig(), default_counter()
    chunks, flagged = 0, {}
    for name, data in texts:
        try:
            doc = resolve_policies(parse(data, filename="doc.md"), Policy())
        except Exception:  # noqa: BLE001 -- a file the parser refuses is no clean chunk
            continue
        embedded = [c.embed_text for c in chunk_document(doc, config, counter)]
        for number, verdict in enumerate(screen_chunks(embedded, document_text=doc.text)):
            chunks += 1
            if verdict.flagged:
                flagged[f"{Path(name).relative_to(ROOT) if name.startswith(str(ROOT)) else name}#{number}"] = round(
                    verdict.score, 3)
    return {"chunks": chunks, "flagged": flagged}


if __name__ == "__main__":
    print(json.dumps(planted() if sys.argv[1:] == ["planted"] else clean()))
