"""Screening: does a chunk carry instructions addressed to the model that will read it?

Pure Python (no Django). The pipeline screens every chunk once, at ingestion, and stores the
verdict with the chunk; search never screens. The public seam is fixed so the Django side,
``kb_chunk --jsonl`` and the benchmark all call the same thing:

* ``screen_chunks(texts, document_text=...)`` -> one ``Screening`` per text;
* ``Screening`` (``flagged``, ``score`` in 0..1, ``reasons``, ``detector``, ``spans``);
* ``DETECTOR_VERSION``: stored with each verdict; a new version re-screens stored chunks;
* ``FAMILIES``: the kinds of planted instruction a reason may name;
* ``seam_window(text, first, second)`` and ``screen_seams(seams, document_text=...)``: the window a model reads
  across the cut between two consecutive chunks, and its verdict (:mod:`ingestion.screening.seams`).
"""

from __future__ import annotations

from ingestion.screening.detector import DETECTOR_VERSION, FAMILIES, Screening, screen_chunks, screen_seams
from ingestion.screening.seams import Seam, seam_window

__all__ = ["DETECTOR_VERSION", "FAMILIES", "Screening", "Seam", "screen_chunks", "screen_seams", "seam_window"]
