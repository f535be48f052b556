"""What both retrievers share, with neither framework imported."""

from __future__ import annotations

from typing import Any

from bulkhead_client import citation_url


def metadata(base_url: str, context: dict) -> dict[str, Any]:
    """A context's citation and flags, as retriever metadata (shared with the LlamaIndex retriever)."""
    return {
        "document_id": context["document_id"], "section_id": context["section_id"],
        "document_title": context.get("document_title", ""), "heading_path": list(context.get("heading_path", [])),
        "url": citation_url(base_url, context), "score": context.get("score"),
        "truncated": context.get("truncated", False), "screening": context.get("screening"),
    }
