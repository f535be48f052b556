"""A client of Bulkhead's REST API (``/api/v1/``): sync and async, paginated, retrying on 429 and 502/503/504,
bounded (answer size, pages; a deadline per call when asked).

    from bulkhead_client import Client
    with Client("http://127.0.0.1:8000", token="bkh_...") as kb:
        for context in kb.search("how long must passwords be?")["contexts"]:
            print(context["document_title"], context["heading_path"], context["text"][:80])

Retrievers for LangChain (``bulkhead_client.langchain``) and LlamaIndex (``bulkhead_client.llama_index``)
come with the ``langchain`` and ``llama-index`` extras.
"""

from bulkhead_client._client import AsyncClient, Client, RetryPolicy
from bulkhead_client.errors import (
    AnswerTooLarge,
    AuthenticationError,
    BulkheadError,
    MalformedAnswer,
    NotFound,
    PaginationError,
    PermissionDenied,
    RateLimited,
    Unavailable,
    ValidationError,
)
from bulkhead_client.types import Document, Job, Page, SearchContext, SearchHit, SearchResponse

__all__ = [
    "AnswerTooLarge", "AsyncClient", "AuthenticationError", "BulkheadError", "Client", "Document", "Job", "MalformedAnswer",
    "NotFound", "Page", "PaginationError", "PermissionDenied", "RateLimited", "RetryPolicy", "SearchContext", "SearchHit", "SearchResponse", "Unavailable",
    "ValidationError", "citation_url",
]


def citation_url(base_url: str, context: SearchContext | SearchHit) -> str:
    """The console's page of a context's (or hit's) section."""
    return (f"{base_url.rstrip('/')}/documents/{context['document_id']}/?section={context['section_id']}"
            "#section-panel")
