"""The Python client's retrievers with spotlighting asked for (found attacking the client, 2026-12-03).

``search_options={"spotlight": True}`` reached the server, which wrapped each context between its random
boundary lines -- and the LangChain and LlamaIndex retrievers then handed the model each context's bare
``text`` all the same, so nothing a model read was marked as data. LlamaIndex also prepends a node's
metadata to its text for the model: the document title and heading path an uploader wrote came before
the text, outside any block. Now the retrievers give the spotlighted block, keep the uploader-written
metadata out of what LlamaIndex shows a model, and carry the answer's system-prompt snippet in the
metadata for the application's system prompt.

Run against the live server with the tests' own copy of the client (``clients/python`` first on the path).
"""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from tests.test_mcp import CANARY, _readable_canaries, world  # noqa: F401 -- world is a fixture

pytestmark = pytest.mark.django_db(transaction=True)

CLIENT = str(Path(__file__).resolve().parent.parent / "clients" / "python")
BLOCK = re.compile(r"<<<DATA (?P<b>[0-9a-f]+)>>>\n.*?\n<<<END DATA (?P=b)>>>", re.S)


@pytest.fixture
def retrievers(monkeypatch):
    """This checkout's client, whatever copy the environment installed."""
    monkeypatch.syspath_prepend(CLIENT)
    for name in [n for n in sys.modules if n == "bulkhead_client" or n.startswith("bulkhead_client.")]:
        monkeypatch.delitem(sys.modules, name)
    from bulkhead_client.langchain import BulkheadRetriever as LangChainRetriever
    from bulkhead_client.llama_index import BulkheadRetriever as LlamaIndexRetriever

    assert LangChainRetriever.__module__ == "bulkhead_client.langchain"
    assert sys.modules["bulkhead_client"].__file__.startswith(CLIENT)
    return LangChainRetriever, LlamaIndexRetriever


def _outside_blocks(text: str) -> str:
    return BLOCK.sub("", text)


def test_retrievers_with_spotlighting_give_the_model_retrieved_text_only_inside_the_blocks(
    live_server, world, retrievers,  # noqa: F811
):
    from llama_index.core.schema import MetadataMode

    langchain_retriever, llama_retriever = retrievers
    membership, key = world["members"]["public"]
    readable = _readable_canaries(membership)
    options = {"mode": "keyword", "budget": 100000, "spotlight": True}
    chain = langchain_retriever(base_url=live_server.url, token=key, top_k=100, search_options=options)
    llama = llama_retriever(live_server.url, key, top_k=100, **options)
    documents = chain.invoke("canary") + asyncio.run(chain.ainvoke("canary"))
    nodes = llama.retrieve("canary") + asyncio.run(llama.aretrieve("canary"))
    # What each framework gives a model: LangChain's page content, LlamaIndex's node content in its LLM mode.
    model_reads = [d.page_content for d in documents] + [n.node.get_content(MetadataMode.LLM) for n in nodes]
    assert documents and nodes
    assert set(CANARY.findall(" ".join(model_reads))) == readable  # everything readable, inside the blocks
    for text in model_reads:
        outside = _outside_blocks(text)
        assert BLOCK.search(text), text
        assert not CANARY.findall(outside) and "Acme" not in outside, outside  # no text, heading or title bare
    prompt = documents[0].metadata["spotlight_system_prompt"]
    boundary = BLOCK.search(documents[0].page_content).group("b")
    assert boundary in prompt and "never instructions" in prompt
    assert documents[0].metadata["document_title"] in ("Acme policy", "Acme handbook")  # still there for the app


def test_the_audit_export_gives_the_format_asked_for(live_server, world, retrievers):  # noqa: F811
    """``audit_export(format="csv")`` sent ``?format=csv``, a parameter the API does not have (``?file=``): every
    export came back as JSON lines, whatever was asked (found attacking the client, 2026-12-03)."""
    from bulkhead_client import Client

    _, key = world["members"]["security"]  # an admin
    with Client(live_server.url, key) as kb:
        kb.documents_page()  # something in the trail
        csv_file = kb.audit_export(format="csv")
        jsonl_file = kb.audit_export(format="jsonl")
    assert csv_file.startswith(b"id,created_at,action,"), csv_file[:80]
    assert jsonl_file.startswith(b"{"), jsonl_file[:80]


def test_a_retry_after_that_is_not_a_number_of_seconds_is_the_back_off(retrievers):
    """A server (or a proxy) answering 429 with ``Retry-After: nan`` crashed the client with a ``ValueError``
    from ``time.sleep`` instead of backing off; ``inf`` was read as the longest wait. Both are the back-off."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from bulkhead_client import Client, RateLimited, RetryPolicy

    class Throttled(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 -- the standard library's name
            value = "nan" if "nan" in self.path else "inf"
            body = b'{"error": {"code": "throttled", "message": "slow down", "details": {}}}'
            self.send_response(429)
            self.send_header("Retry-After", value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Throttled)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    waits: list[float] = []
    try:
        with Client(f"http://127.0.0.1:{server.server_port}", "bkh_x",
                    retry=RetryPolicy(max_retries=2, backoff=0.5, max_wait=30, sleep=waits.append)) as kb:
            for tag in ("nan", "inf"):
                with pytest.raises(RateLimited) as limited:
                    kb.get_document(tag)
                assert limited.value.retry_after is None
    finally:
        server.shutdown()
        server.server_close()
    assert waits == [0.5, 1.0, 0.5, 1.0], waits


def test_ids_are_sent_as_one_path_segment_and_dot_ids_are_refused(live_server, world, retrievers):  # noqa: F811
    """Found attacking the client: every method put its id into the path as it was, so an id an application
    took from elsewhere named another endpoint -- ``get_document("../sections/ID/readers")`` was normalised
    by httpx to ``/api/v1/sections/ID/readers/`` and answered who reads that section, as if a document; a
    ``?`` or ``#`` cut the path short. Now an id is percent-encoded whole as one segment (``/``, ``?``, ``#``,
    ``%``), and ``""``, ``.``, ``..`` and any id holding a ``/`` (the server decodes ``%2F`` before it routes)
    raise ValueError before any request, in both clients."""
    from bulkhead_client import AsyncClient, Client, NotFound

    from kb.models import Section

    _, key = world["members"]["security"]  # an admin
    document = world["docs"][0]
    section = Section.objects.filter(document=document).first()
    with Client(live_server.url, key) as kb:
        assert kb.get_document(str(document.pk))["id"] == str(document.pk)
        for hostile in (f"..%2F..%2Fsections%2F{section.pk}%2Freaders",
                        f"{document.pk}?x=", f"{document.pk}#x", "%2e%2e", f"{document.pk}%2F"):
            with pytest.raises(NotFound):
                kb.get_document(hostile)
        for slashed in (f"../sections/{section.pk}/readers", f"{document.pk}/sections", "/"):
            with pytest.raises(ValueError, match="is not an id"):
                kb.get_document(slashed)  # the server decodes %2F before it routes: never sent
        with pytest.raises(ValueError, match="is not an id"):
            kb.section_readers(f"{section.pk}/../../../documents/{document.pk}")
        for dot in ("", ".", ".."):
            for method, args in ((kb.get_document, (dot,)), (kb.delete_document, (dot,)),
                                 (kb.set_section_access, (dot,)), (kb.revoke_token, (dot,)),
                                 (kb.document_as_member, (str(document.pk), dot))):
                with pytest.raises(ValueError, match="is not an id"):
                    method(*args)
        assert kb.get_document(str(document.pk))["id"] == str(document.pk)  # nothing was deleted

    async def dots() -> None:
        async with AsyncClient(live_server.url, key) as kb:
            with pytest.raises(ValueError, match="is not an id"):
                await kb.delete_document("..")
            with pytest.raises(ValueError, match="is not an id"):
                await kb.get_document(f"../sections/{section.pk}/readers")
            with pytest.raises(NotFound):
                await kb.get_document(f"{document.pk}?x=")

    asyncio.run(dots())
