"""The shapes of the API's answers, as ``TypedDict``s (the JSON as it comes; fields a newer server
adds, such as a screening verdict per chunk, are there too, untyped)."""

from __future__ import annotations

from typing import Any, Generic, TypedDict, TypeVar

T = TypeVar("T")


class Page(TypedDict, Generic[T]):
    count: int
    next: str | None
    previous: str | None
    results: list[T]


class SearchHit(TypedDict, total=False):
    chunk_id: str
    document_id: str
    document_title: str
    section_id: str
    heading_path: list[str]
    text: str
    score: float
    distance: float | None
    start: int
    end: int
    rank: int
    screening: Any


class SearchContext(TypedDict, total=False):
    section_id: str
    document_id: str
    document_title: str
    heading_path: list[str]
    text: str
    chunk_ids: list[str]
    score: float
    token_count: int
    truncated: bool
    screening: Any


class SearchResponse(TypedDict):
    results: list[SearchHit]
    contexts: list[SearchContext]
    index_version_id: str | None
    mode: str
    expand: str


class Document(TypedDict, total=False):
    id: str
    title: str  # "(title held for review)" while screening holds it (quarantine mode)
    title_flagged: bool
    source: str
    content_type: str
    status: str
    error: str
    tags: list[str]
    sections_count: int
    chunks_count: int
    created_at: str
    updated_at: str  # the latest change of what you can read (a section you cannot read does not move it)


class Job(TypedDict, total=False):
    id: str
    kind: str
    document_id: str | None
    status: str
    stage: str
    # {"done", "total"}; None where the job's document is one you can see no part of and did not upload
    # (a document job's total counts all of its document's chunks: its size). Its error's numbers read "…" then.
    progress: dict | None
    error: str
    created_at: str
    finished_at: str | None
