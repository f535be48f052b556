"""Attacks on the MCP server (2026-12-03).

A tool argument the tool does not declare was dropped by the SDK's argument model without a word: an agent
that asked ``search`` for ``exclude_flagged`` (the REST API's option, which the tool does not have) or
misspelt ``spotlight`` got flagged chunks, or bare text, as if it had asked for nothing. Now such a call is a
tool error naming the argument and the known ones (``kb.mcp_server.TOOL_ARGUMENTS``)."""

from __future__ import annotations

import anyio
import pytest

from tests.test_mcp import _error, _payload, http_session, world  # noqa: F401 -- world is a fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_tool_argument_the_tool_does_not_have_is_a_tool_error_naming_it(live_server, world):  # noqa: F811
    url = f"{live_server.url}/mcp"
    _, key = world["members"]["security"]

    async def run():
        async with http_session(url, key) as client:
            refused = [
                _error(await client.call_tool("search", {"query": "canary", "mode": "keyword", "exclude_flagged": True})),
                _error(await client.call_tool("search", {"query": "canary", "mode": "keyword", "spotlite": True})),
                _error(await client.call_tool("read_section", {"section_id": "x", "text": "all"})),
                _error(await client.call_tool("list_documents", {"limt": 1})),
            ]
            taken = _payload(await client.call_tool("search", {"query": "canary", "mode": "keyword", "top_k": 2,
                                                                "spotlight": True, "budget": 500}))
            return refused, taken

    refused, taken = anyio.run(run)
    for message, name in zip(refused, ("exclude_flagged", "spotlite", "text", "limt"), strict=True):
        assert message.startswith(f"invalid arguments -- {name}: unknown argument; known: "), message
    assert taken["spotlight"]["boundary"]  # every declared argument still reaches its tool


def test_a_prompt_argument_the_prompt_does_not_have_is_an_error_naming_it(live_server, world):  # noqa: F811
    """``prompts/get`` with an argument ``answer_with_citations`` does not declare: an invalid-params error that
    names it (the SDK answered "Error rendering prompt"); the declared one still renders."""
    from mcp.shared.exceptions import MCPError

    url = f"{live_server.url}/mcp"
    _, key = world["members"]["security"]

    async def run():
        async with http_session(url, key) as client:
            try:
                await client.get_prompt("answer_with_citations", {"question": "who pages?", "questoin": "x"})
            except MCPError as exc:
                refused = exc.message
            else:
                refused = None
            taken = await client.get_prompt("answer_with_citations", {"question": "who pages?"})
            return refused, taken

    refused, taken = anyio.run(run)
    assert refused == "invalid arguments -- questoin: unknown argument; known: question", refused
    assert "who pages?" in taken.messages[0].content.text
