"""What both retrievers share, with neither framework imported."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bulkhead_client import RetryPolicy, citation_url
from bulkhead_client.errors import BulkheadError, MalformedAnswer

# Metadata an uploader writes (a document's title, its headings): with spotlighting asked for, a model
# reads them only on the block's ``source:`` line, inside the boundaries.
WRITTEN_BY_UPLOADERS = ("document_title", "heading_path")
# For the application's system prompt, not the model's context.
SPOTLIGHT_PROMPT = "spotlight_system_prompt"
# The search request's bounds on what a retriever is given (the server's SearchInputSerializer, kb/serializers.py:
# top_k and max_contexts 1 to MAX_TOP_K, context_token_budget 1 to 100,000; ``budget`` is the client's name of it).
# A value outside them is refused when the retriever is made, and again before each search, naming it -- never a
# 400 at the first query, nor a value quietly clamped.
MAX_TOP_K = 100
MAX_BUDGET = 100_000
LIMITS = {"top_k": (1, MAX_TOP_K), "max_contexts": (1, MAX_TOP_K), "budget": (1, MAX_BUDGET),
          "context_token_budget": (1, MAX_BUDGET)}


def limit(name: str, value: Any) -> int:
    """``value`` of the search field ``name`` (a key of :data:`LIMITS`), a whole number within the API's bounds,
    else :class:`ValueError` (a bool, a float or a string of digits too: nothing is converted)."""
    low, high = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high} (the search API's bounds), "
                         f"not {value!r:.40}")
    return value


def retry_policy(value: Any) -> RetryPolicy | None:
    """A retriever's ``retry``: the :class:`~bulkhead_client.RetryPolicy` its clients search under, or None (the
    clients' default policy); anything else is :class:`ValueError` when the retriever is made."""
    if value is not None and not isinstance(value, RetryPolicy):
        raise ValueError(f"retry must be a bulkhead_client.RetryPolicy or None, not {type(value).__name__}")
    return value


def check_options(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """A retriever's search options, their limits checked (:func:`limit`): ``top_k`` is the retriever's own
    argument, and the budget is given once (``budget`` or ``context_token_budget``). ``budget`` and ``max_contexts``
    may be None (not sent: the server's default), as in ``Client.search``."""
    if "top_k" in options:
        raise ValueError("top_k is the retriever's own argument, not a search option")
    if "budget" in options and "context_token_budget" in options:
        raise ValueError("give the context budget once: budget or context_token_budget")
    for name in ("max_contexts", "budget", "context_token_budget"):
        if name in options and not (options[name] is None and name != "context_token_budget"):
            limit(name, options[name])
    return options


def check_limits(top_k: Any, options: Mapping[str, Any]) -> None:
    """Before a search: the retriever's ``top_k`` and its options within the API's bounds (its attributes may have
    been changed since it was made)."""
    limit("top_k", top_k)
    check_options(options)


def search_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A retriever's search options: spotlighting asked for unless the caller says ``spotlight=False`` -- each
    context's text then reaches the model between the answer's boundary lines, as data."""
    return {"spotlight": True, **options}


def contexts(answer: Any, options: Mapping[str, Any]) -> list[dict]:
    """The answer's contexts, checked before any reaches a model: an answer of another shape (a hostile server,
    a proxy's page) is :class:`MalformedAnswer`, never passed on; with spotlighting asked for, every context has
    its block between the answer's boundary lines. A context screening flagged reaches a model only inside its
    block: with spotlighting turned off it is :class:`BulkheadError` (code ``flagged_unmarked``) -- its text would
    be plain context, a planted instruction among it (ask with ``exclude_flagged=True`` to leave them out)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("contexts"), list):
        raise MalformedAnswer(200, "the search answer has no list of contexts")
    boundary = None
    if options.get("spotlight"):
        spotlight = answer.get("spotlight")
        if not (isinstance(spotlight, dict) and isinstance(spotlight.get("boundary"), str) and spotlight["boundary"]
                and isinstance(spotlight.get("system_prompt"), str)):
            raise MalformedAnswer(200, "spotlighting was asked for and the answer has no boundary")
        boundary = spotlight["boundary"]
    for context in answer["contexts"]:
        _check(context, boundary)
    return answer["contexts"]


def _check(context: Any, boundary: str | None) -> None:
    if not isinstance(context, dict):
        raise MalformedAnswer(200, "a search context is not an object")
    for key in ("document_id", "section_id", "text"):
        if not isinstance(context.get(key), str):
            raise MalformedAnswer(200, f"a search context's {key} is not a string")
    if not isinstance(context.get("document_title", ""), str):
        raise MalformedAnswer(200, "a search context's document_title is not a string")
    path = context.get("heading_path", [])
    if not isinstance(path, list) or not all(isinstance(h, str) for h in path):
        raise MalformedAnswer(200, "a search context's heading_path is not a list of strings")
    score = context.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise MalformedAnswer(200, "a search context's score is not a number")
    screening = context.get("screening")
    if screening is not None and not (isinstance(screening, dict) and isinstance(screening.get("flagged"), bool)):
        raise MalformedAnswer(200, "a search context's screening is not a verdict")
    if boundary is not None:
        block = context.get("spotlighted")
        if not (isinstance(block, str) and block.startswith(f"<<<DATA {boundary}>>>\n")
                and block.endswith(f"\n<<<END DATA {boundary}>>>")):
            raise MalformedAnswer(200, "spotlighting was asked for and a context is not inside its boundary lines")
    elif screening is not None and screening["flagged"]:
        raise BulkheadError(200, "flagged_unmarked",
                            f"section {context['section_id']} holds text screening flagged, and spotlighting is off: "
                            "its text would reach the model as plain context (ask with spotlight=True, or with "
                            "exclude_flagged=True to leave flagged text out)")


def content(context: dict) -> str:
    """The text a model reads of a context (checked by :func:`contexts`): with spotlighting asked for (the
    retrievers' default), its ``spotlighted`` block -- the text between the answer's random boundary lines, its
    source line first -- never the bare ``text`` (which a model would read as outside any data block); else its
    ``text``."""
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
