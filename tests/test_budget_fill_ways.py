"""The budget fill (issue 30, sixteenth round) through MCP's ``search`` tool and the Python client, against the
live server: asked for, the contexts of the ``top_k`` hits are followed by the next hits' own chunks (only ones the
member may read); asked against, not; not named, the server's default (``kb.search_modes.DEFAULT_BUDGET_FILL``,
flipped here in the test process, where the live server's threads search); a non-boolean is refused naming it.
The REST API's own tests are in ``tests/test_api_search.py`` (its fill document, ``FILL_SECTIONS``, is reused)."""

from __future__ import annotations

import json

import anyio
import pytest
from bulkhead_client import Client

from accounts.policy import can_read
from accounts.selectors import reader_for
from kb import search_modes
from kb.models import Chunk
from tests.api_helpers import make_document
from tests.test_api_search import FILL_SECTIONS, FILL_WORD, VAULT_WORD
from tests.test_mcp import _error, _payload, http_session, world  # noqa: F401 -- world is a fixture

pytestmark = pytest.mark.django_db(transaction=True)


def _added(off: dict, on: dict) -> list[dict]:
    """The contexts the fill added, after checking that the hits and the hits' contexts are as without it."""
    assert on["results"] == off["results"]
    assert on["contexts"][:len(off["contexts"])] == off["contexts"]
    return on["contexts"][len(off["contexts"]):]


def _all_readable(membership, contexts) -> bool:
    reader = reader_for(membership)
    sections = [Chunk.objects.select_related("section").get(pk=cid).section for c in contexts for cid in c["chunk_ids"]]
    return all(can_read(reader, level=s.access_level, group_ids=s.access_groups) for s in sections)


def test_mcp_search_budget_fill(live_server, world, monkeypatch):  # noqa: F811
    membership, key = world["members"]["internal_finance"]  # internal: the fill document's vault is above them
    document = make_document(membership.tenant, title="Handbook", sections=FILL_SECTIONS)
    ask = {"query": FILL_WORD, "mode": "keyword", "top_k": 2, "filters": {"document_ids": [str(document.id)]}}

    async def run():
        async with http_session(f"{live_server.url}/mcp", key) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            answers = {}
            for default in (False, True):
                monkeypatch.setattr(search_modes, "DEFAULT_BUDGET_FILL", default)
                answers[default, "absent"] = _payload(await client.call_tool("search", ask))
                for value in (False, True):
                    answers[default, value] = _payload(await client.call_tool("search", {**ask, "budget_fill": value}))
            wide = [_payload(await client.call_tool("search", {**ask, "top_k": top_k, "budget_fill": True}))
                    for top_k in (1, 3, 5)]
            refused = [_error(await client.call_tool("search", {**ask, "budget_fill": value}))
                       for value in ("maybe", 3, [True])]
            return tools["search"].input_schema["properties"]["budget_fill"], answers, wide, refused

    schema, answers, wide, refused = anyio.run(run)
    assert "budget" in schema["description"] and "expand" in schema["description"]
    assert {"type": "boolean"} in schema["anyOf"] and schema["default"] is None
    for default in (False, True):
        assert answers[default, "absent"] == answers[default, default]  # not named: the server's default
        assert answers[default, True] == answers[True, True] and answers[default, False] == answers[False, False]
    off, on = answers[False, False], answers[True, True]
    added = _added(off, on)
    assert len(off["contexts"]) == 2 and len(added) == 2  # the member's other two readable sections
    assert _all_readable(membership, on["contexts"]) and all(FILL_WORD in c["text"] for c in added)
    assert all(c["citation"]["url"].startswith(live_server.url) for c in added)
    for answer in wide:  # never the vault, whatever the page
        assert VAULT_WORD not in json.dumps(answer) and _all_readable(membership, answer["contexts"])
    for message in refused:
        assert "budget_fill" in message and "unknown argument" not in message, message


def test_python_client_budget_fill(live_server, world, monkeypatch):  # noqa: F811
    membership, key = world["members"]["internal_finance"]
    document = make_document(membership.tenant, title="Handbook", sections=FILL_SECTIONS)
    ask = {"mode": "keyword", "top_k": 2, "filters": {"document_ids": [str(document.id)]}}
    with Client(live_server.url, key, timeout=600) as kb:
        off = kb.search(FILL_WORD, **ask, budget_fill=False)
        on = kb.search(FILL_WORD, **ask, budget_fill=True)
        monkeypatch.setattr(search_modes, "DEFAULT_BUDGET_FILL", True)
        default_on = kb.search(FILL_WORD, **ask)
        monkeypatch.setattr(search_modes, "DEFAULT_BUDGET_FILL", False)
        default_off = kb.search(FILL_WORD, **ask, budget_fill=None)
    added = _added(off, on)
    assert len(added) == 2 and _all_readable(membership, on["contexts"])
    assert default_on == on and default_off == off  # None: not sent, the server's default
