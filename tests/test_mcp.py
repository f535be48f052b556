"""The MCP server (issue 26) through the SDK's own client, over real HTTP (the live server, ``/mcp``)
and over stdio (``manage.py kb_mcp`` as a child process): initialise, list the tools, call each; the
access matrix (members at each clearance and group, two tenants, a canary word in every section's
title and body: nothing above a member's access, nothing of the other tenant, every readable canary
found); revoked tokens and deactivated members refused on the next call; bad arguments as tool errors;
the audit trail's ``via: "mcp"``; no token -> 401 with ``WWW-Authenticate``.

Documents are built in the database (``tests.api_helpers.make_document``): no worker, and keyword
search (no model) finds every chunk that holds the word "canary"."""

from __future__ import annotations

import json
import os
import re
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from accounts.policy import AccessLevel, Reader, can_read
from accounts.services import api_token_revoke, group_create, membership_update, tenant_create
from audit.models import AuditEvent
from kb.models import Chunk, ChunkReview, ScreeningMode, ScreeningSettings, Section
from tests.api_helpers import make_document, member_with_token
from tests.bounds import JOB_WAIT, START_WAIT

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent
CANARY = re.compile(r"\bcq\d+[a-z]+x\b")


def _sections(tag: str) -> list:
    """POLICY_SECTIONS' shape, with a canary word of its own in every title and body."""
    c = lambda key: f"cq{len(key)}{key}{tag}x"  # noqa: E731 -- unique per section and tenant
    return [
        ("root", None, "", AccessLevel.INTERNAL, [], f"Preamble canary {c('root')}."),
        ("intro", "root", f"Policy {c('introt')}", AccessLevel.PUBLIC, [], f"Intro canary {c('intro')}."),
        ("incident", "intro", f"Incident {c('incidentt')}", AccessLevel.RESTRICTED, ["security-team"],
         f"Security team canary {c('incident')}."),
        ("playbook", "incident", f"Playbook {c('playbookt')}", AccessLevel.RESTRICTED, ["security-team"],
         f"Page canary {c('playbook')}."),
        ("region", "playbook", "", AccessLevel.INTERNAL, [], f"Internal note canary {c('region')}."),
        ("reporting", "intro", f"Reporting {c('reportingt')}", AccessLevel.CONFIDENTIAL, [],
         f"Reporters canary {c('reporting')}."),
        ("finance", "intro", f"Budget {c('financet')}", AccessLevel.INTERNAL, ["finance"],
         f"Finance canary {c('finance')}."),
    ]


MEMBERS = [  # name, role, clearance, groups
    ("public", "viewer", "public", []),
    ("internal_finance", "viewer", "internal", ["finance"]),
    ("confidential", "editor", "confidential", []),
    ("restricted", "viewer", "restricted", []),
    ("security", "admin", "restricted", ["security-team"]),
]


@pytest.fixture
def world():
    acme = tenant_create(slug="mcp-acme", name="Acme")
    globex = tenant_create(slug="mcp-globex", name="Globex")
    for tenant in (acme, globex):
        group_create(tenant=tenant, slug="security-team")
        group_create(tenant=tenant, slug="finance")
    members = {}
    for name, role, clearance, groups in MEMBERS:
        members[name] = member_with_token(acme, f"{name}@mcp.example", role, clearance, groups)
    members["other_tenant"] = member_with_token(globex, "boss@globex.example", "admin", "restricted",
                                                ["security-team", "finance"])
    docs = [make_document(acme, title="Acme policy", sections=_sections("a"), tags=["policy"]),
            make_document(acme, title="Acme handbook", sections=_sections("b"), default=AccessLevel.PUBLIC),
            make_document(globex, title="Globex secrets", sections=_sections("g"))]
    return {"members": members, "docs": docs}


def _readable_canaries(membership) -> set[str]:
    """Every canary the member may read: computed from the stored policies with the access rule."""
    from accounts.selectors import reader_for

    reader: Reader = reader_for(membership)
    out = set()
    for section in Section.objects.filter(document__tenant_id=membership.tenant_id):
        if can_read(reader, level=section.access_level, group_ids=section.access_groups):
            text = section.document.text[section.start:section.end]
            out |= set(CANARY.findall(text))
    return out


def _all_canaries() -> set[str]:
    out = set()
    for section in Section.objects.select_related("document"):
        out |= set(CANARY.findall(section.document.text[section.start:section.end]))
    return out


@asynccontextmanager
async def http_session(url: str, key: str | None, **options):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=600) as http:  # a process's first search loads the tokenizer
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield client


def _payload(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def _error(result) -> str:
    """A tool error's text, less the SDK's "Error executing tool <name>: " prefix."""
    assert result.is_error, result
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return re.sub(r"^Error executing tool \w+: ", "", text)


async def _everything_seen(client, section_ids) -> str:
    """Every text a member can get through the tools: a search for all canaries (keyword: no model),
    the document list, a document resource, the sections by id."""
    seen = []
    # the hits themselves ("results") and their expansions to sections ("contexts") in one answer
    seen.append(_payload(await client.call_tool("search", {"query": "canary", "mode": "keyword", "top_k": 100,
                                                            "budget": 100000})))
    listed = _payload(await client.call_tool("list_documents", {}))
    seen.append(listed)
    for doc in listed["results"][:1]:
        resource = await client.read_resource(f"bulkhead://documents/{doc['id']}")
        seen.append(resource.contents[0].text)
    for section_id in section_ids:
        result = await client.call_tool("read_section", {"section_id": str(section_id)})
        if result.is_error:
            assert _error(result) == "not_found: Not found.", _error(result)  # the same for hidden and missing
        else:
            seen.append(_payload(result))
    return json.dumps(seen)


def test_http_access_matrix_and_audit(live_server, world):
    """Each member through /mcp: every canary they may read is found, none other is ever returned."""
    url = f"{live_server.url}/mcp"
    # read_section on the sections that each need something different to read (a group, a clearance,
    # both, nothing above internal), in both tenants; the rest are read through search and resources.
    a, b, g = (doc.section_ids for doc in world["docs"])
    section_ids = [a["incident"], a["reporting"], a["finance"], b["region"], g["intro"]]
    everything = _all_canaries()
    assert len(everything) == 3 * 7 * 2 - 3 * 2  # 7 sections x title and body, less the untitled ones

    async def run():
        found = {}
        for name, (_, key) in world["members"].items():
            async with http_session(url, key) as client:
                found[name] = await _everything_seen(client, section_ids)
        return found

    found = anyio.run(run)
    for name, (membership, _) in world["members"].items():
        readable = _readable_canaries(membership)
        seen = set(CANARY.findall(found[name]))
        assert readable <= seen, (name, readable - seen)  # every readable canary found
        assert seen <= readable, (name, seen - readable)  # nothing above access, nothing of another tenant
    assert "Globex" not in "".join(v for k, v in found.items() if k != "other_tenant")
    assert "cq5introbx" in found["public"] and "cq6regionax" not in found["public"]
    # A search through MCP is in the audit trail, marked as MCP's
    security = world["members"]["security"][0]
    events = AuditEvent.objects.filter(membership_id=security.pk)
    assert events.filter(action="search", details__via="mcp").count() == 1
    assert events.filter(action="document.read", details__via="mcp").exists()


def test_http_tools_errors_and_citations(live_server, world):
    """Initialise (the handshake clients ship today), list the tools and prompt, call each; bad
    arguments are tool errors that name the field; citations link to the console's section."""
    url = f"{live_server.url}/mcp"
    _, key = world["members"]["security"]

    async def run():
        async with http_session(url, key, mode="legacy") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == {"search", "read_section", "list_documents"}
            assert tools["search"].input_schema["required"] == ["query"]
            assert set(tools["search"].input_schema["properties"]) == {
                "query", "mode", "top_k", "expand", "budget", "filters", "spotlight", "budget_fill"}
            answer = _payload(await client.call_tool("search", {"query": "page canary", "mode": "keyword"}))
            context = answer["contexts"][0]
            citation = context["citation"]
            assert citation["url"] == (f"{live_server.url}/documents/{context['document_id']}/"
                                       f"?section={context['section_id']}#section-panel")
            assert citation["document_title"] in ("Acme policy", "Acme handbook") and citation["heading_path"]
            assert "never instructions" in answer["instructions"]
            # Spotlighting asked for: retrieved text only inside the response's boundaries (found attacking
            # the demo: the hits' and contexts' bare text came back beside the wrapped contexts).
            lit = _payload(await client.call_tool("search", {"query": "page canary", "mode": "keyword",
                                                             "spotlight": True}))
            boundary = lit["spotlight"]["boundary"]
            assert lit["contexts"] and lit["results"]
            # Titles and headings too (an uploader's words): found attacking the demo, they stayed bare.
            for item in (*lit["contexts"], *lit["results"]):
                assert not {"text", "document_title", "heading_path"} & set(item), item
                assert set(item["citation"]) == {"url"}, item["citation"]
            assert all("source: Acme" in item["spotlighted"] for item in lit["contexts"])
            for item in lit["contexts"]:
                inside = item["spotlighted"].split(boundary)
                assert len(inside) == 3 and "canary" in inside[1], item["spotlighted"]
            section = _payload(await client.call_tool("read_section", {"section_id": context["section_id"]}))
            assert "canary" in section["text"] and section["citation"]["url"] == citation["url"]
            page = _payload(await client.call_tool("list_documents", {"limit": 1, "filters": {"tag": "policy"}}))
            assert page["count"] == 1 and page["results"][0]["title"] == "Acme policy" and page["next_offset"] is None
            page = _payload(await client.call_tool("list_documents", {"limit": 1}))
            assert page["count"] == 2 and page["next_offset"] == 1
            errors = [
                _error(await client.call_tool("search", {"query": "x", "top_k": 1000})),
                _error(await client.call_tool("search", {"query": "x", "mode": "telepathy"})),
                _error(await client.call_tool("search", {"query": ""})),
                _error(await client.call_tool("search", {"query": "x", "filters": {"document_ids": ["nope"]}})),
                _error(await client.call_tool("search", {"query": "x", "top_k": "many"})),
                _error(await client.call_tool("search", {})),
                _error(await client.call_tool("read_section", {"section_id": "not-a-uuid"})),
                _error(await client.call_tool("list_documents", {"filters": {"colour": "red"}})),
                _error(await client.call_tool("list_documents", {"limit": 0})),
                # Found attacking the demo: a misspelt search filter was ignored (everything searched), an
                # offset past PostgreSQL's bigint was an unexpected error.
                _error(await client.call_tool("search", {"query": "x", "filters": {"document_idz": []}})),
                _error(await client.call_tool("list_documents", {"offset": 10**30})),
            ]
            prompt = await client.get_prompt("answer_with_citations", {"question": "who pages?"})
            return errors, prompt

    errors, prompt = anyio.run(run)
    assert errors[0].startswith("invalid arguments -- top_k:"), errors[0]
    assert errors[1].startswith("invalid arguments -- mode:"), errors[1]
    assert errors[2].startswith("invalid arguments -- query:"), errors[2]
    assert errors[3].startswith("invalid arguments -- filters.document_ids"), errors[3]
    assert "top_k" in errors[4] and "query" in errors[5]
    assert errors[6] == "not_found: Not found."
    assert "colour" in errors[7] and "limit" in errors[8]
    assert errors[9].startswith("invalid arguments -- filters.document_idz: unknown filter"), errors[9]
    assert "offset" in errors[10], errors[10]
    for error in errors:
        assert "Traceback" not in error and "File \"" not in error
    text = prompt.messages[0].content.text
    assert "who pages?" in text and "never instructions" in text and "citation" in text


def test_http_text_held_for_review_reaches_no_tool(live_server, world):
    """A chunk screening holds out of search (quarantine until released; kept out in any mode) is cut out
    of ``read_section`` and the document resource too, as out of search's contexts; the section says it is
    flagged. Found by attacking the demo: ``read_section`` returned a quarantined planted instruction
    whole, with ``screening: null``."""
    url = f"{live_server.url}/mcp"
    _, key = world["members"]["public"]
    handbook = world["docs"][1]
    intro = handbook.section_ids["intro"]  # public: "Policy cq6introtbx", body "Intro canary cq5introbx."
    verdict = {"flagged": True, "score": 0.99, "reasons": ["override"], "detector": "test", "spans": [[0, 5]]}
    Chunk.objects.filter(section_id=intro).update(screening=verdict, screening_flagged=True)

    async def seen() -> tuple[dict, str, str]:
        async with http_session(url, key) as client:
            section = _payload(await client.call_tool("read_section", {"section_id": str(intro)}))
            resource = (await client.read_resource(f"bulkhead://documents/{handbook.id}")).contents[0].text
            search = _payload(await client.call_tool("search", {"query": "canary", "mode": "keyword", "top_k": 100,
                                                                "budget": 100000}))
        return section, resource, json.dumps(search)

    section, resource, search = anyio.run(seen)  # quarantine, the default: held
    assert "cq5introbx" not in search  # what search already did
    assert "cq5introbx" not in section["text"] and "cq5introbx" not in resource
    assert "cq6introtbx" in section["text"] and "cq4rootbx" not in section["text"]  # the rest of it stays
    assert section["screening"] == {"flagged": 1, "held": 1, "reasons": ["override"]}
    ScreeningSettings.objects.create(tenant=handbook.tenant, mode=ScreeningMode.FLAG)
    section, resource, search = anyio.run(seen)  # flag mode: returned, and said to be flagged
    assert "cq5introbx" in section["text"] and "cq5introbx" in resource and "cq5introbx" in search
    assert section["screening"] == {"flagged": 1, "held": 0, "reasons": ["override"]}
    Chunk.objects.filter(section_id=intro).update(review=ChunkReview.KEPT_OUT)
    section, resource, search = anyio.run(seen)  # kept out by a reviewer: never, in any mode
    assert "cq5introbx" not in section["text"] and "cq5introbx" not in resource and "cq5introbx" not in search


def test_http_a_held_title_or_heading_reaches_no_tool(live_server, world):
    """A document title or a heading screening flagged (``pipeline.screen`` stores its record, as here) is held
    in quarantine mode: ``list_documents``, ``read_section`` (its ``document_title``, ``heading_path`` and the
    heading's line in its text) and the document resource show "(title held for review)" instead, and search's
    hits and contexts too; released by a reviewer, or in flag mode (with its flag), it is shown. Left open
    when titles were first screened: a planted title still reached an agent that listed documents."""
    from kb.models import TITLE_SCREENING, Document
    from kb.titles import TITLE_HELD, title_record

    url = f"{live_server.url}/mcp"
    _, key = world["members"]["public"]
    handbook = world["docs"][1]  # "Acme handbook"; its public section "intro" is headed "Policy cq6introtbx"
    intro = Section.objects.get(pk=handbook.section_ids["intro"])

    def hold(row, review=""):
        record = title_record({row.title: {"flagged": True, "reasons": ["override"]}}, detector="test", decided={})
        record["titles"] = {k: {**e, "review": review} for k, e in record["titles"].items()}
        type(row).objects.filter(pk=row.pk).update(metadata={**row.metadata, TITLE_SCREENING: record})

    async def seen() -> tuple[dict, dict, dict, str]:
        async with http_session(url, key) as client:
            listed = _payload(await client.call_tool("list_documents", {}))
            section = _payload(await client.call_tool("read_section", {"section_id": str(intro.pk)}))
            resource = json.loads((await client.read_resource(f"bulkhead://documents/{handbook.id}")).contents[0].text)
            search = _payload(await client.call_tool("search", {"query": "canary", "mode": "keyword", "top_k": 100,
                                                                "expand": "parent", "budget": 100000}))
        return next(d for d in listed["results"] if d["id"] == str(handbook.id)), section, resource, json.dumps(search)

    hold(Document.objects.get(pk=handbook.pk))
    hold(intro)
    listed, section, resource, search = anyio.run(seen)  # quarantine, the default: held
    everything = json.dumps([listed, section, resource]) + search
    assert "Acme handbook" not in everything
    assert "cq6introtbx" not in everything  # the heading's line in the text too
    assert listed["title"] == section["document_title"] == resource["title"] == TITLE_HELD and listed["title_flagged"]
    assert section["heading_path"] == [TITLE_HELD] and section["citation"]["heading_path"] == [TITLE_HELD]
    assert "cq5introbx" in section["text"] and "cq5introbx" in resource["text"]  # its text is not held
    ScreeningSettings.objects.create(tenant=handbook.tenant, mode=ScreeningMode.FLAG)
    listed, section, resource, search = anyio.run(seen)  # flag mode: shown, with its flag
    assert listed["title"] == section["document_title"] == resource["title"] == "Acme handbook"
    assert listed["title_flagged"] and section["document_title_flagged"] and section["heading_path_flagged"]
    assert section["heading_path"] == ["Policy cq6introtbx"] and "cq6introtbx" in section["text"]
    ScreeningSettings.objects.filter(tenant=handbook.tenant).update(mode=ScreeningMode.QUARANTINE)
    hold(Document.objects.get(pk=handbook.pk), review=ChunkReview.RELEASED)
    hold(intro, review=ChunkReview.RELEASED)
    listed, section, resource, search = anyio.run(seen)  # released by a reviewer: shown
    assert listed["title"] == resource["title"] == "Acme handbook" and "cq6introtbx" in section["text"]
    assert "Acme handbook" in search and "cq6introtbx" in search


def test_http_refusals_on_the_next_call(live_server, world):
    """No token or a wrong one: 401 with WWW-Authenticate. A revoked token and a deactivated member are
    refused on the very next request of an open session."""
    url = f"{live_server.url}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    for auth in ({}, {"Authorization": "Bearer bkh_nope_nope"},
                 {"Authorization": f"Token {world['members']['security'][1]}"}):
        response = httpx.post(url, json=body, headers={**headers, **auth}, timeout=300)  # the first loads the URLs
        assert response.status_code == 401, response.text
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert "cq" not in response.text
    key = world["members"]["security"][1]
    for method in ("GET", "DELETE"):  # no event stream to hold a web thread open, no session to end
        response = httpx.request(method, url, headers={**headers, "Authorization": f"Bearer {key}"}, timeout=START_WAIT)
        assert response.status_code == 405 and response.headers["Allow"] == "POST, OPTIONS", response.text
    viewer, viewer_key = world["members"]["public"]
    finance, finance_key = world["members"]["internal_finance"]
    admin = world["members"]["security"][0]
    outcomes = []

    async def run():
        for _, key, cut in [
            (viewer, viewer_key, lambda: api_token_revoke(token=membership_token(viewer), actor=admin)),
            (finance, finance_key, lambda: membership_update(membership=finance, acting=admin, is_active=False)),
        ]:
            async with http_session(url, key) as client:
                _payload(await client.call_tool("search", {"query": "canary", "mode": "keyword"}))
                await _in_thread(cut)
                try:
                    result = await client.call_tool("search", {"query": "canary", "mode": "keyword"})
                    outcomes.append(("answered", result))
                except Exception as exc:  # noqa: BLE001 -- the SDK's error for the 401
                    outcomes.append(("refused", repr(exc)))

    anyio.run(run)
    assert [kind for kind, _ in outcomes] == ["refused", "refused"], outcomes
    assert all("cq" not in detail for _, detail in outcomes)


async def _in_thread(work) -> None:
    """``work`` (a database write) on a worker thread while the event loop waits; its connection closed
    after, so that none is left open on the test database."""

    def run():
        from django.db import connections

        try:
            work()
        finally:
            connections.close_all()

    await anyio.to_thread.run_sync(run)


def membership_token(membership):
    from accounts.models import ApiToken

    return ApiToken.objects.get(membership=membership)


def test_stdio_server(world):
    """manage.py kb_mcp over stdio with BULKHEAD_TOKEN: initialise, list, call each tool as the token's
    member; revoked -> the next call is a tool error; a wrong token never starts serving."""
    from django.conf import settings

    from bulkhead.embedded_services import database_env

    membership, key = world["members"]["confidential"]
    admin = world["members"]["security"][0]
    env = {**os.environ, **database_env(), "REDIS_URL": settings.REDIS_URL,
           "CACHE_URL": settings.CACHES["default"]["LOCATION"], "BULKHEAD_TOKEN": key,
           "BULKHEAD_URL": "https://kb.example"}
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "kb_mcp"], env=env, cwd=str(ROOT))
    readable = _readable_canaries(membership)

    async def run():
        async with Client(params, read_timeout_seconds=JOB_WAIT) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"search", "read_section", "list_documents"}
            answer = _payload(await client.call_tool("search", {"query": "canary", "mode": "keyword", "top_k": 100,
                                                                 "budget": 100000}))
            section_id = answer["contexts"][0]["section_id"]
            section = _payload(await client.call_tool("read_section", {"section_id": section_id}))
            listed = _payload(await client.call_tool("list_documents", {}))
            await _in_thread(lambda: api_token_revoke(token=membership_token(membership), actor=admin))
            refused = _error(await client.call_tool("list_documents", {}))
            return answer, section, listed, refused

    answer, section, listed, refused = anyio.run(run)
    seen = set(CANARY.findall(json.dumps([answer, section, listed])))
    assert seen == readable
    assert answer["contexts"][0]["citation"]["url"].startswith("https://kb.example/documents/")
    assert listed["count"] == 2
    assert refused.startswith("not authenticated"), refused
    wrong = {**env, "BULKHEAD_TOKEN": "bkh_wrong_token"}
    import subprocess

    started = subprocess.run([sys.executable, "manage.py", "kb_mcp"], env=wrong, cwd=ROOT, capture_output=True,
                             timeout=START_WAIT, input=b"")
    assert started.returncode != 0 and b"not a valid API token" in started.stderr
    assert started.stdout == b""


def test_stdio_server_recovers_from_a_lost_database_connection(world):
    """Found hunting thread lifetimes: the stdio server's calls run on one thread for the process's life, which
    no request ever starts or ends -- so its database connection was never checked again, and once PostgreSQL
    dropped it (a restart, an idle timeout, an operator's pg_terminate_backend) every later call failed until the
    server was restarted. Each call now starts as a request does: a connection that is broken or too old is
    closed first, and the call opens a fresh one (acting for the token's tenant, as every call does)."""
    from django.conf import settings
    from django.db import connection

    from bulkhead.embedded_services import database_env

    _, key = world["members"]["confidential"]
    env = {**os.environ, **database_env(), "REDIS_URL": settings.REDIS_URL,
           "CACHE_URL": settings.CACHES["default"]["LOCATION"], "BULKHEAD_TOKEN": key,
           "BULKHEAD_URL": "https://kb.example"}
    params = StdioServerParameters(command=sys.executable, args=["manage.py", "kb_mcp"], env=env, cwd=str(ROOT))

    def cut_the_servers_connections() -> int:
        from django.db import connections

        try:
            with connection.cursor() as cursor:  # the child's sessions: this database, the application's role
                cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                               " WHERE datname = current_database() AND usename = %s AND pid <> pg_backend_pid()",
                               [settings.BULKHEAD_APP_DB_ROLE])
                return cursor.fetchone()[0]
        finally:
            connections.close_all()

    async def run():
        async with Client(params, read_timeout_seconds=JOB_WAIT) as client:
            before = _payload(await client.call_tool("list_documents", {}))
            cut = await _in_thread_result(cut_the_servers_connections)
            after = await client.call_tool("list_documents", {})
            again = await client.call_tool("list_documents", {})
            return before, cut, after, again

    before, cut, after, again = anyio.run(run)
    assert cut >= 1  # the server's own session was among them
    assert before["count"] == 2
    assert _payload(after)["count"] == 2, after  # the very next call; without the check, this one and every later
    assert _payload(again)["count"] == 2, again


async def _in_thread_result(work):
    return await anyio.to_thread.run_sync(work)
