"""What a search takes and gives: its filters, hits, contexts and response.

Values only, shared by the three search modules -- :mod:`kb.retrieval` (candidates), :mod:`kb.expansion`
(contexts) and :mod:`kb.search` (the selector that runs one after the other) -- so neither of the first
two needs to import the other (docs/architecture.md, "The search modules").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from kb.models import ScreeningMode


@dataclass(frozen=True)
class SearchFilters:
    """Narrow a search to some documents. ``tags`` matches documents with *any* of the tags."""

    document_ids: tuple[uuid.UUID, ...] = ()
    tags: tuple[str, ...] = ()
    content_types: tuple[str, ...] = ()
    source_prefix: str = ""
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    # Screening (kb.screening.returnable_q): no flagged chunk at all; and the tenant's mode, which
    # search() sets from the tenant's settings -- a caller that builds filters alone gets quarantine.
    exclude_flagged: bool = False
    screening_mode: str = ScreeningMode.QUARANTINE

    def cache_key(self) -> tuple:
        return (
            tuple(sorted(str(d) for d in self.document_ids)), tuple(sorted(self.tags)),
            tuple(sorted(self.content_types)), self.source_prefix, self.updated_after, self.updated_before,
            self.exclude_flagged, self.screening_mode,
        )


@dataclass(frozen=True)
class SearchHit:
    chunk_id: uuid.UUID
    document_id: uuid.UUID
    document_title: str
    section_id: uuid.UUID
    heading_path: list[str]
    text: str
    score: float
    distance: float | None
    start: int
    end: int
    rank: int
    ordinal: int = 0
    vector_rank: int | None = None
    keyword_rank: int | None = None
    # The chunk's stored verdict (flagged, score, reasons, detector, spans into ``text``, review);
    # None when the tenant's screening mode is off.
    screening: dict | None = None


@dataclass(frozen=True)
class SearchContext:
    section_id: uuid.UUID
    document_id: uuid.UUID
    document_title: str
    heading_path: list[str]
    text: str
    chunk_ids: list[uuid.UUID]
    score: float
    token_count: int
    spans: list[tuple[int, int]]
    truncated: bool = False
    # Flagged chunks returned inside this context (flag mode, or released): each one's id and verdict,
    # spans as document offsets; None when the tenant's screening mode is off.
    screening: dict | None = None
    spotlighted: str | None = None  # the context wrapped for a model (search(spotlight=True))
    # The reasons of joins of this context screened when read and flagged, served joined (flag mode; kb.joins).
    join_reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchResponse:
    results: list[SearchHit]
    contexts: list[SearchContext]
    index_version_id: uuid.UUID | None
    mode: str
    expand: str
    plan: str = ""  # how the vector list was found: "exact", "hnsw", "hnsw+exact" (fallback) or ""
    timings_ms: dict[str, float] = field(default_factory=dict)
    screening: str = ""  # the tenant's screening mode the search ran under
    spotlight: dict | None = None  # {"boundary", "system_prompt"} when asked for (see :func:`kb.search.spotlight_wrap`)

