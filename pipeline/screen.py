"""Ingestion, stage 4: screening every planned chunk once (``ingestion.screening``, docs/screening.md)."""

from __future__ import annotations

from ingestion.screening import screen_chunks
from pipeline.plan import Plan


def screen_plans(plans: list[Plan]) -> None:
    """Screen every planned chunk once, with the whole document as context (``ingestion.screening``);
    the verdicts are stored with the chunks by :func:`pipeline.store.store_plan` and never computed per query."""
    for plan in plans:
        if not plan.chunks:
            plan.screenings = []
            continue
        verdicts = screen_chunks([c.text for c in plan.chunks], document_text=plan.parsed.text)
        plan.screenings = [verdict.as_dict() for verdict in verdicts]


def screening_fields(verdict: dict) -> dict:
    """A verdict as the chunk's columns (the re-screen job writes the same ones)."""
    return {"screening": verdict, "screening_flagged": bool(verdict["flagged"]),
            "screening_detector": str(verdict["detector"])}
