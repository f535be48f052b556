"""A LlamaIndex retriever (``pip install "bulkhead-client[llama-index]"``): each search context as a
``NodeWithScore`` whose node's metadata holds its citation and screening verdict. With spotlighting (asked for
unless ``spotlight=False``; a context screening flagged is never a plain node) the node's text is the context's
spotlighted block, and the metadata an uploader wrote
(title, headings) is kept out of what LlamaIndex gives the model (it prepends metadata to a node's text):
a model reads them only inside the block."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from bulkhead_client import AsyncClient, Client, RetryPolicy
from bulkhead_client._retrieval import (
    SPOTLIGHT_PROMPT,
    WRITTEN_BY_UPLOADERS,
    check_limits,
    content,
    contexts,
    metadata,
    retry_policy,
    search_options,
    spotlighted,
)


class BulkheadRetriever(BaseRetriever):
    """``BulkheadRetriever(base_url, token, top_k=5, allow_http=False, retry=None, **search_options)``
    (spotlighting on unless ``spotlight=False``). ``top_k`` (1 to 100) and a budget among the options (``budget`` or
    ``context_token_budget``, 1 to 100,000; ``max_contexts`` 1 to 100) are whole numbers within the search API's
    bounds, else ``ValueError`` when it is made, and before each search. ``retry``: the ``RetryPolicy`` its
    clients search under (None: the client's default), else ``ValueError``."""

    def __init__(self, base_url: str, token: str, *, top_k: int = 5, allow_http: bool = False,
                 retry: RetryPolicy | None = None, **options: Any):
        check_limits(top_k, options)
        retry = retry_policy(retry)
        super().__init__()
        self.base_url, self.top_k, self.allow_http, self.retry = base_url, top_k, allow_http, retry
        self.search_options = search_options(options)
        self.token = token

    def _nodes(self, answer: dict) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(id_=f"{c['section_id']}:{i}", text=content(c),
                                        metadata=metadata(self.base_url, c, answer),
                                        excluded_llm_metadata_keys=_excluded(c),
                                        excluded_embed_metadata_keys=_excluded(c)), score=c.get("score"))
            for i, c in enumerate(contexts(answer, self.search_options))
        ]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        check_limits(self.top_k, self.search_options)
        with Client(self.base_url, self.token, allow_http=self.allow_http, retry=self.retry) as client:
            return self._nodes(client.search(query_bundle.query_str, top_k=self.top_k, **self.search_options))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        check_limits(self.top_k, self.search_options)
        async with AsyncClient(self.base_url, self.token, allow_http=self.allow_http, retry=self.retry) as client:
            return self._nodes(await client.search(query_bundle.query_str, top_k=self.top_k, **self.search_options))


def _excluded(context: dict) -> list[str]:
    return [*WRITTEN_BY_UPLOADERS, SPOTLIGHT_PROMPT] if spotlighted(context) else [SPOTLIGHT_PROMPT]
