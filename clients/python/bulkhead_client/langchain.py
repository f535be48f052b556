"""A LangChain retriever (``pip install "bulkhead-client[langchain]"``): each search context as a
``Document`` whose metadata holds its citation (document title, heading path, console URL) and the
knowledge base's screening verdict, when the server gives one. With ``search_options={"spotlight": True}``
the page content is the context's spotlighted block (``bulkhead_client._retrieval.content``)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from bulkhead_client import AsyncClient, Client
from bulkhead_client._retrieval import content, metadata


class BulkheadRetriever(BaseRetriever):
    """``BulkheadRetriever(base_url=..., token=..., top_k=5)``; ``search_options`` go to every search
    (e.g. ``{"mode": "keyword"}``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    base_url: str
    token: str
    top_k: int = 5
    search_options: dict[str, Any] = Field(default_factory=dict)

    def _documents(self, answer: dict) -> list[Document]:
        return [Document(page_content=content(c), metadata=metadata(self.base_url, c, answer)) for c in answer["contexts"]]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        with Client(self.base_url, self.token) as client:
            return self._documents(client.search(query, top_k=self.top_k, **self.search_options))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        async with AsyncClient(self.base_url, self.token) as client:
            return self._documents(await client.search(query, top_k=self.top_k, **self.search_options))
