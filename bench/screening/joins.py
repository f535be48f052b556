"""The joins screened when read (seventeenth session; ``kb.joins``) on the clean Markdown of this machine: how many
flag, and what one costs.

The corpus of ``bench.screening.seams clean`` (the real parser and chunker, the default configuration). Two kinds of
join a reader may be served that ingestion never screened, each scored by ``kb.joins.JoinScreen.verdict`` exactly as
a read does (the window, ``may_cross``, the detector against the two texts; a fresh screen a join, so no bound):

* ``trimmed``: a trimmed context's windows -- each chunk's last paragraph joined with the first paragraph of the
  chunk two further on (a chunk left out between), a blank line between;
* ``neighbours``: every two consecutive chunks of different sections, a heading between (as neighbours of
  incomparable policies are read by a member of both).

Joins with a chunk flagged alone are left out (held in quarantine: never served). Prints the counts, the flagged
windows, and the process time of the scored joins (the cache emptied first: every verdict made) and of the skipped
ones (no unit crosses: no scoring).

    DJANGO_SETTINGS_MODULE=bulkhead.settings python -m bench.screening.joins > joins.json
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

_PARAGRAPH = re.compile(r"\n[ \t]*\n")


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in _PARAGRAPH.split(text) if p.strip()]


def run() -> dict:
    import django

    django.setup()
    from accounts.policy import Policy
    from bench.screening.markup_words import ROOT, clean_texts
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks
    from ingestion.screening.seams import seam_window
    from ingestion.structure import resolve_policies
    from kb.joins import VERDICTS, JoinScreen

    VERDICTS.clear()
    config, counter = ChunkingConfig(), default_counter()
    counts = {kind: {"joins": 0, "scored": 0, "flagged": 0} for kind in ("trimmed", "neighbours")}
    flagged: dict[str, list[str]] = {"trimmed": [], "neighbours": []}
    spent = {"scored": 0.0, "skipped": 0.0}
    chunks = 0
    for name, data in clean_texts():
        try:
            doc = resolve_policies(parse(data, filename="doc.md"), Policy())
        except Exception:  # noqa: BLE001 -- a file the parser refuses is no clean chunk
            continue
        found = chunk_document(doc, config, counter)
        chunks += len(found)
        own = screen_chunks([c.embed_text for c in found], document_text=doc.text)
        label = str(Path(name).relative_to(ROOT)) if name.startswith(str(ROOT)) else name
        joins = []
        for i, chunk in enumerate(found):
            if i + 2 < len(found):
                joins.append(("trimmed", i, i + 2, "\n\n"))
            if i + 1 < len(found) and found[i + 1].section_key != chunk.section_key:
                joins.append(("neighbours", i, i + 1, "\n\n## \n\n"))
        for kind, a, b, between in joins:
            if own[a].flagged or own[b].flagged:
                continue
            first, second = _paragraphs(found[a].text), _paragraphs(found[b].text)
            if not first or not second:
                continue
            first, second = first[-1], second[0]
            screen = JoinScreen(0, "quarantine")
            started = time.process_time()
            verdict = screen.verdict(first, between, second)
            took = time.process_time() - started
            counts[kind]["joins"] += 1
            counts[kind]["scored"] += screen.scored
            spent["scored" if screen.scored else "skipped"] += took
            if verdict.flagged:
                counts[kind]["flagged"] += 1
                text = first + "\n\n" + second
                window = seam_window(text, (0, len(first)), (len(first) + 2, len(text)))
                flagged[kind].append(f"{label}#{a}-{b}: {verdict.score} {window.text if window else ''!r}")
    scored = sum(c["scored"] for c in counts.values())
    skipped = sum(c["joins"] - c["scored"] for c in counts.values())
    return {"chunks": chunks, "counts": counts,
            "ms_per_scored_join": round(1000 * spent["scored"] / max(scored, 1), 3),
            "ms_per_skipped_join": round(1000 * spent["skipped"] / max(skipped, 1), 4),
            "flagged": flagged}


if __name__ == "__main__":
    print(json.dumps(run(), indent=1))
