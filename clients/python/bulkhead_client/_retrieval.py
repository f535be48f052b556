"""What both retrievers share, with neither framework imported."""

from __future__ import annotations

from typing import Any

from bulkhead_client import citation_url

# Metadata an uploader writes (a document's title, its headings): with spotlighting asked for, a model
# reads them only on the block's ``source:`` line, inside the boundaries.
WRITTEN_BY_UPLOADERS = ("document_title", "heading_path")
# For the application's system prompt, not the model's context.
SPOTLIGHT_PROMPT = "spotlight_system_prompt"


def content(context: dict) -> str:
    """The text a model reads of a context: with spotlighting asked for (``search_options={"spotlight": True}``),
    its ``spotlighted`` block -- the text between the answer's random boundary lines, its source line first --
    never the bare ``text`` (which a model would read as outside any data block); else its ``text``."""
    return context["spotlighted"] if spotlighted(context) else context["text"]


def metadata(base_url: str, context: dict, answer: dict | None = None) -> dict[str, Any]:
    """A context's citation and flags, as retriever metadata (shared with the LlamaIndex retriever). With
    spotlighting, also the answer's system-prompt snippet (``spotlight_system_prompt``: it explains the
    boundary to the model, and belongs in the application's system prompt)."""
    data = {
        "document_id": context["document_id"], "section_id": context["section_id"],
        "document_title": context.get("document_title", ""), "heading_path": list(context.get("heading_path", [])),
        "url": citation_url(base_url, context), "score": context.get("score"),
        "truncated": context.get("truncated", False), "screening": context.get("screening"),
    }
    spotlight = (answer or {}).get("spotlight")
    if isinstance(spotlight, dict) and spotlight.get("system_prompt"):
        data[SPOTLIGHT_PROMPT] = spotlight["system_prompt"]
    return data


def spotlighted(context: dict) -> bool:
    """Whether :func:`content` gives this context's spotlighted block."""
    return isinstance(context.get("spotlighted"), str) and bool(context["spotlighted"])
