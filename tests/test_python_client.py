"""The Python client (``clients/python``, the ``bulkhead_client`` package) and its LangChain and
LlamaIndex retrievers against the live server: search, pages, documents, errors in the API's shape,
retries that wait what the throttled server's ``Retry-After`` says. Only what the token's member may
read comes back (the canaries of ``tests.test_mcp``'s world)."""

from __future__ import annotations

import asyncio
import re

import pytest
from bulkhead_client import AsyncClient, AuthenticationError, Client, NotFound, RateLimited, RetryPolicy
from bulkhead_client import ValidationError as ClientValidationError
from django.core.cache import cache

from accounts.authentication import TokenRateThrottle
from tests.test_mcp import CANARY, _readable_canaries, world  # noqa: F401 -- world is a fixture

pytestmark = pytest.mark.django_db(transaction=True)

KEYWORD = {"mode": "keyword", "budget": 100000}


def test_client_sync_and_async(live_server, world, unserved_queue):  # noqa: F811
    membership, key = world["members"]["internal_finance"]
    readable = _readable_canaries(membership)
    with Client(live_server.url, key, timeout=600) as kb:  # the process's first search loads the tokenizer
        answer = kb.search("canary", top_k=100, **KEYWORD)
        documents = list(kb.iter_documents(page_size=1))  # two pages of one
        first = kb.documents_page(limit=1)
        sections = kb.document_sections(documents[0]["id"])
        paged = [s for offset in range(len(sections)) for s in kb.document_sections(documents[0]["id"], offset=offset,
                                                                                     limit=1)]
        with pytest.raises(NotFound) as missing:
            kb.get_document("00000000-0000-0000-0000-000000000000")
        with pytest.raises(ClientValidationError) as invalid:
            kb.search("x", top_k=1000)
    assert set(CANARY.findall(str(answer))) == readable
    assert len(documents) == 2 and first["count"] == 2 and first["next"]
    assert sections and all(s["document_id"] == documents[0]["id"] for s in sections)
    assert paged == sections  # a page at a time, the same tree
    assert (missing.value.status, missing.value.code) == (404, "not_found")
    assert invalid.value.code == "invalid" and "top_k" in invalid.value.details

    async def run():
        async with AsyncClient(live_server.url, key) as kb:
            answer = await kb.search("canary", top_k=100, **KEYWORD)
            titles = [d["title"] async for d in kb.iter_documents(page_size=1)]
            return answer, titles

    answer, titles = asyncio.run(run())
    assert set(CANARY.findall(str(answer))) == readable and sorted(titles) == ["Acme handbook", "Acme policy"]

    editor_key = world["members"]["confidential"][1]
    with Client(live_server.url, editor_key) as kb:
        accepted = kb.upload_document("# Notes\n\nA new canary cq9uploadedx.\n", title="notes.md",
                                      content_type="text/markdown", access_level="internal")
        job = kb.get_job(accepted["job"]["id"])
        preview = kb.preview_document("# Draft\n\nText.\n", title="draft.md", content_type="text/markdown")
        kb.delete_document(accepted["id"])
        with pytest.raises(NotFound):
            kb.get_document(accepted["id"])
    assert job["document_id"] == accepted["id"] and job["status"] in ("queued", "running")
    assert preview["sections"]
    with Client(live_server.url, "bkh_wrong_key") as kb, pytest.raises(AuthenticationError) as refused:
        kb.search("canary")
    assert refused.value.status == 401 and refused.value.code


def test_client_retries_honour_retry_after(live_server, world, monkeypatch):  # noqa: F811
    """The server's throttle at 2 calls a minute: the third call is a 429 with Retry-After; the client
    waits what it says (counted, not slept) and tries again, then gives up with RateLimited -- or
    succeeds once the window has passed (here: the counts cleared during the wait)."""
    monkeypatch.setattr(TokenRateThrottle, "THROTTLE_RATES", {"token": "2/minute"})
    _, key = world["members"]["security"]
    waits: list[float] = []
    with Client(live_server.url, key, retry=RetryPolicy(max_retries=2, max_wait=120, sleep=waits.append)) as kb:
        kb.documents_page()
        kb.documents_page()
        with pytest.raises(RateLimited) as limited:
            kb.documents_page()
        assert len(waits) == 2 and all(50 <= w <= 60 for w in waits), waits
        assert limited.value.status == 429 and limited.value.retry_after and limited.value.code == "throttled"
        waits.clear()

        def pass_the_window(seconds: float) -> None:
            waits.append(seconds)
            cache.clear()

        kb.retry.sleep = pass_the_window
        assert kb.documents_page()["count"] == 2
        assert len(waits) == 1


def test_retrievers(live_server, world):  # noqa: F811
    """LangChain's BaseRetriever and LlamaIndex's retriever, sync and async: contexts with citations."""
    from bulkhead_client.langchain import BulkheadRetriever as LangChainRetriever
    from bulkhead_client.llama_index import BulkheadRetriever as LlamaIndexRetriever

    membership, key = world["members"]["public"]
    readable = _readable_canaries(membership)
    options = {"mode": "keyword", "budget": 100000}
    chain = LangChainRetriever(base_url=live_server.url, token=key, top_k=100, search_options=options)
    documents = chain.invoke("canary")
    documents_async = asyncio.run(chain.ainvoke("canary"))
    llama = LlamaIndexRetriever(live_server.url, key, top_k=100, **options)
    nodes = llama.retrieve("canary")
    nodes_async = asyncio.run(llama.aretrieve("canary"))
    for texts in ([d.page_content + str(d.metadata) for d in documents],
                  [d.page_content + str(d.metadata) for d in documents_async],
                  [n.node.get_content() + str(n.node.metadata) for n in nodes],
                  [n.node.get_content() + str(n.node.metadata) for n in nodes_async]):
        assert set(CANARY.findall(" ".join(texts))) == readable
    meta = documents[0].metadata
    assert re.fullmatch(rf"{live_server.url}/documents/{meta['document_id']}/\?section={meta['section_id']}"
                        r"#section-panel", meta["url"])
    assert meta["document_title"] in ("Acme policy", "Acme handbook") and "screening" in meta
    assert nodes[0].score is not None and nodes[0].node.metadata["url"].startswith(live_server.url)


def test_client_reads_a_document_as_a_member_a_page_at_a_time(live_server, world):  # noqa: F811
    # The API pages a document as one member sees it (twenty-first session: past 10,000 sections it refuses the whole);
    # the client passes offset and limit as it does for the sections' list.
    admin, key = world["members"]["security"]
    viewer, _ = world["members"]["public"]
    with Client(live_server.url, key) as kb:
        document_id = kb.documents_page(limit=1)["results"][0]["id"]
        whole = kb.document_as_member(document_id, viewer.pk)
        pages = [kb.document_as_member(document_id, viewer.pk, offset=offset, limit=1)
                 for offset in range(len(whole["sections"]))]
        with pytest.raises(ClientValidationError) as invalid:
            kb.document_as_member(document_id, viewer.pk, limit=0)
    assert len(whole["sections"]) > 1
    assert [s for page in pages for s in page["sections"]] == whole["sections"]
    assert all(len(page["sections"]) == 1 for page in pages)
    assert invalid.value.status == 400
