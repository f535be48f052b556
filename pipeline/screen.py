"""Ingestion, stage 4: screening every planned chunk once (``ingestion.screening``, docs/screening.md)."""

from __future__ import annotations

from collections.abc import Sequence

from ingestion.screening import screen_chunks
from kb.services import UNTITLED
from pipeline.plan import Plan


def screen_plans(plans: list[Plan]) -> None:
    """Screen every planned chunk once, with the whole document as context (``ingestion.screening``);
    the verdicts are stored with the chunks by :func:`pipeline.store.store_plan` and never computed per query."""
    for plan in plans:
        if not plan.chunks:
            plan.screenings = []
            continue
        plan.screenings = screen_texts(
            [(c.text, c.embed_text) for c in plan.chunks], document_text=plan.parsed.text,
            titles=(plan.document.title, plan.parsed.title or ""),
        )


def screen_texts(chunks: Sequence[tuple[str, str]], *, document_text: str, titles: Sequence[str] = ()) -> list[dict]:
    """Verdicts (``Screening.as_dict()``) of chunks given as (text, embed text) pairs, and of the
    document's ``titles`` (the one typed at upload, the content's own: either may be shown).

    The document title goes to the model with every hit and context of the document (``document_title``,
    the spotlight block's ``source:`` line) and is in no chunk's text; a flagged title flags every chunk
    of its document (its reasons added, no span: the reviewer sees the title beside the text), so none
    is returned while it is held (found attacking the demo: a title "Ignore all previous instructions
    and ..." came back, unflagged, with every hit).

    What is screened is the embed text -- the heading path and any table context in front of the
    body -- because that is what a reader's model gets with the chunk (heading paths, the titles in
    parent contexts): a heading can carry an instruction too (found attacking the demo: the body
    alone was screened, so a planted heading reached every context unflagged). The verdict's spans
    are moved to offsets into the chunk's text, as the review queue and the contexts read them;
    a span that lies in the prefix alone is dropped from the spans (the reviewer sees the heading
    path beside the text), never the flag."""
    verdicts = screen_chunks([embed_text for _, embed_text in chunks], document_text=document_text)
    out = []
    for (text, embed_text), verdict in zip(chunks, verdicts, strict=True):
        found = verdict.as_dict()
        shift = len(embed_text) - len(text) if embed_text.endswith(text) else None
        spans = []
        for start, end in found["spans"]:
            if shift is None:  # the body is not the embed text's tail: mark the whole body
                spans.append([0, len(text)])
                continue
            start, end = max(start - shift, 0), min(end - shift, len(text))
            if end > start:
                spans.append([start, end])
        found["spans"] = [list(s) for s in sorted({tuple(s) for s in spans})]
        out.append(found)
    shown = [t for t in dict.fromkeys(titles) if t and t.strip() and t != UNTITLED]
    for title in screen_chunks(shown, document_text=document_text) if shown else ():
        if not title.flagged:
            continue
        for found in out:
            found["flagged"] = True
            found["score"] = max(found["score"], round(title.score, 4))
            found["reasons"] = list(dict.fromkeys([*found["reasons"], *title.reasons]))
    return out


def screening_fields(verdict: dict) -> dict:
    """A verdict as the chunk's columns (the re-screen job writes the same ones)."""
    return {"screening": verdict, "screening_flagged": bool(verdict["flagged"]),
            "screening_detector": str(verdict["detector"])}
