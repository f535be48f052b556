"""A LangChain retriever (``pip install "bulkhead-client[langchain]"``): each search context as a
``Document`` whose metadata holds its citation (document title, heading path, console URL) and the
knowledge base's screening verdict, when the server gives one. Spotlighting is asked for unless
``search_options={"spotlight": False}``: the page content is the context's spotlighted block
(``bulkhead_client._retrieval.content``); a context screening flagged is never plain page content."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, SecretStr, field_validator

from bulkhead_client import AsyncClient, Client, RetryPolicy
from bulkhead_client._retrieval import (
    check_limits,
    check_options,
    content,
    contexts,
    limit,
    metadata,
    retry_policy,
    search_options,
)


class BulkheadRetriever(BaseRetriever):
    """``BulkheadRetriever(base_url=..., token=..., top_k=5)``; ``search_options`` go to every search
    (e.g. ``{"mode": "keyword"}``; spotlighting is on unless ``{"spotlight": False}``). The token is a
    ``SecretStr``: never in the retriever's repr or in what LangChain serialises of it (a trace). ``top_k`` (1 to
    100) and a budget in ``search_options`` (``budget`` or ``context_token_budget``, 1 to 100,000; ``max_contexts``
    1 to 100) are whole numbers within the search API's bounds, else ``ValueError`` (pydantic's, naming the field)
    before any request. ``retry``: the ``RetryPolicy`` its clients search under (None: the client's default)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base_url: str
    token: SecretStr
    top_k: int = 5
    search_options: dict[str, Any] = Field(default_factory=dict)
    allow_http: bool = False  # http:// to another host than this machine (the token in clear): see ``Client``
    retry: RetryPolicy | None = None

    @field_validator("top_k", mode="before")
    @classmethod
    def _top_k(cls, value: Any) -> int:
        return limit("top_k", value)

    @field_validator("retry", mode="before")
    @classmethod
    def _retry(cls, value: Any) -> RetryPolicy | None:
        return retry_policy(value)

    @field_validator("search_options")
    @classmethod
    def _search_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        check_options(value)
        return value

    def _documents(self, answer: dict, options: dict) -> list[Document]:
        return [Document(page_content=content(c), metadata=metadata(self.base_url, c, answer))
                for c in contexts(answer, options)]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        options = search_options(self.search_options)
        check_limits(self.top_k, options)
        with Client(self.base_url, self.token.get_secret_value(), allow_http=self.allow_http,
                    retry=self.retry) as client:
            return self._documents(client.search(query, top_k=self.top_k, **options), options)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        options = search_options(self.search_options)
        check_limits(self.top_k, options)
        async with AsyncClient(self.base_url, self.token.get_secret_value(), allow_http=self.allow_http,
                               retry=self.retry) as client:
            return self._documents(await client.search(query, top_k=self.top_k, **options), options)
