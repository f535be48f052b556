"""Server time of the console's heaviest pages, and the search playground's overhead over the API call.

Not a test: it prints p50/p95 and the mean CPU time of the serving process per request, and
asserts nothing (docs/benchmarks.md, "Console pages")::

    BULKHEAD_DATA_DIR=.data/console-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/console-bench .venv/bin/python -m bench.console_bench --documents 10000 --sections 1000

It builds a throwaway tenant -- ``--documents`` small documents (a section and a chunk each) and
one document of ``--sections`` nested sections with a chunk each -- then requests the pages as
an admin and as an internal viewer, and deletes the tenant afterwards. ``--via gunicorn`` (the
default) serves them as ``make web`` does: gunicorn, gthread, one worker process, on this data
folder, over a kept-alive connection on 127.0.0.1, signed in with a session cookie; the time is
the whole request as this client sees it. ``--via client`` uses Django's test client in this
process instead (no server process, no network; the one before gunicorn was added).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    from bulkhead import embedded_services

    embedded_services.ensure_started()
    import django

    django.setup()


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered), p95


def _build(documents: int, sections: int):
    from accounts.policy import AccessLevel
    from accounts.services import membership_create, tenant_create
    from accounts.tenancy import tenant_activate
    from kb.index_versions import index_version_active
    from kb.models import Chunk, Document, Section

    tenant = tenant_create(slug=f"console-bench-{uuid.uuid4().hex[:8]}", name="Console bench")
    tenant_activate(tenant.pk)  # the rows are written under the tenant wall, as the application's role
    admin = membership_create(tenant=tenant, email=f"admin@{tenant.slug}.invalid", role="admin",
                              clearance="restricted")
    viewer = membership_create(tenant=tenant, email=f"viewer@{tenant.slug}.invalid", role="viewer",
                               clearance="internal")
    version = index_version_active(tenant=tenant)
    vector = [0.01] * 384
    levels = [AccessLevel.PUBLIC, AccessLevel.INTERNAL, AccessLevel.CONFIDENTIAL, AccessLevel.RESTRICTED]
    batch = 2000
    for first in range(0, documents, batch):
        docs, secs, chunks = [], [], []
        for i in range(first, min(documents, first + batch)):
            text = f"Document {i} about topic {i % 97}.\n\nIts only paragraph, number {i}.\n"
            level = levels[i % 4]
            doc = Document(tenant=tenant, title=f"Document {i}", source=f"bench/{i % 50}/{i}.md",
                           content_type="text/markdown", raw=text.encode(), text=text,
                           sha256=hashlib.sha256(text.encode()).hexdigest(), size_bytes=len(text),
                           tags=[f"t{i % 10}"], access_level=level, status=Document.Status.READY)
            sec = Section(id=uuid.uuid4(), tenant=tenant, document=doc, key="0", order=0, title=f"Document {i}",
                          heading_path=[f"Document {i}"], kind="heading", start=0, end=len(text),
                          body_spans=[[0, len(text)]], access_level=level, access_groups=[])
            chunks.append(Chunk(id=uuid.uuid4(), tenant=tenant, document=doc, section=sec, index_version=version,
                                ordinal=0, start=0, end=len(text), text=text, embed_text=text, token_count=12,
                                content_hash=hashlib.sha256(text.encode()).hexdigest(), embedding=vector,
                                access_level=level, access_groups=[]))
            docs.append(doc)
            secs.append(sec)
        Document.objects.bulk_create(docs)
        Section.objects.bulk_create(secs)
        Chunk.objects.bulk_create(chunks)
    # One long document: sections nested three deep, each with a paragraph and a chunk.
    parts, spans = [], []
    pos = 0
    for i in range(sections):
        part = f"{'#' * (1 + i % 3)} Heading {i}\n\nParagraph {i} of the long document, on subject {i % 31}.\n\n"
        spans.append((pos, pos + len(part)))
        parts.append(part)
        pos += len(part)
    text = "".join(parts)
    big = Document.objects.create(tenant=tenant, title="Long document", source="bench/long.md",
                                  content_type="text/markdown", raw=text.encode(), text=text,
                                  sha256=hashlib.sha256(text.encode()).hexdigest(), size_bytes=len(text),
                                  access_level=AccessLevel.INTERNAL, status=Document.Status.READY)
    rows, parents, chunks = [], {}, []
    for i, (start, end) in enumerate(spans):
        depth = i % 3
        parent = parents.get(depth - 1) if depth else None
        level = levels[(i // 3) % 4]
        row = Section(id=uuid.uuid4(), tenant=tenant, document=big, key=str(i), order=i, depth=depth,
                      parent_id=parent, title=f"Heading {i}", heading_path=[f"Heading {i}"], kind="heading",
                      start=start, end=end, body_spans=[[start, end]], access_level=level, access_groups=[])
        parents[depth] = row.id
        rows.append(row)
        chunks.append(Chunk(id=uuid.uuid4(), tenant=tenant, document=big, section=row, index_version=version,
                            ordinal=i, start=start, end=end, text=text[start:end], embed_text=text[start:end],
                            token_count=20, content_hash=hashlib.sha256(text[start:end].encode()).hexdigest(),
                            embedding=vector, access_level=level, access_groups=[]))
    Section.objects.bulk_create(rows)
    Chunk.objects.bulk_create(chunks)
    _analyze()
    return tenant, admin, viewer, big, rows


def _analyze() -> None:
    """Fresh planner statistics for the tables just filled, as autovacuum's analyse gives them a
    while after a bulk load: the pages are timed in that steady state. (Right after the load, with
    the statistics of an almost empty table, the planner estimates one row everywhere and a
    filtered list can take 0.2-0.4 s: the first "status + tag" rows of docs/benchmarks.md.)"""
    from django.db import connections

    from accounts.tenancy import owner_alias

    with connections[owner_alias()].cursor() as cursor:  # ANALYZE needs the tables' owner
        cursor.execute("ANALYZE kb_document, kb_section, kb_chunk, accounts_membership")


def _session_client(membership):
    from django.test import Client

    from console.membership import SESSION_KEY

    client = Client(raise_request_exception=True)
    client.force_login(membership.user)
    session = client.session
    session[SESSION_KEY] = membership.pk
    session.save()
    return client


class InProcess:
    """Django's test client in this process; CPU is this process's."""

    def __init__(self) -> None:
        self.clients: dict[int, object] = {}

    def sign_in(self, membership) -> None:
        self.clients[membership.pk] = _session_client(membership)

    def get(self, membership, url: str) -> tuple[int, bytes]:
        response = self.clients[membership.pk].get(url)
        return response.status_code, response.content

    def post_api(self, key: str, path: str, body: dict) -> int:
        from django.test import Client

        client = Client(raise_request_exception=True, HTTP_AUTHORIZATION=f"Token {key}")
        return client.post(path, json.dumps(body), content_type="application/json").status_code

    def cpu_seconds(self) -> float:
        return time.process_time()

    def close(self) -> None:
        pass


class Gunicorn:
    """gunicorn as ``make web`` runs it (gthread), one worker, on this data folder; CPU is that
    worker's (``/proc``: user + system, counted in clock ticks, so only the mean over many requests
    is meaningful). Requests go over the load harness's kept-alive connection (``Http``)."""

    def __init__(self) -> None:
        from bench.load_harness import Http, free_port
        from bulkhead import embedded_services

        self.port = free_port()
        self.log_path = embedded_services.data_dir() / "console-bench-web.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "bulkhead.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
             "--worker-class", "gthread", "--workers", "1", "--threads", "4", "--timeout", "120"],
            cwd=ROOT, env=dict(os.environ), stdout=open(self.log_path, "wb"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.cookies: dict[int, str] = {}
        self.http = Http(self.port)
        deadline = time.monotonic() + 120
        while self.http.request("GET", "/healthz", None)[0] == 0:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited; see {self.log_path}")
            if time.monotonic() > deadline:
                raise SystemExit(f"gunicorn did not answer within 120 s; see {self.log_path}")
            time.sleep(0.3)
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        self.worker = int(children[0])

    def sign_in(self, membership) -> None:
        from django.conf import settings

        client = _session_client(membership)
        self.cookies[membership.pk] = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"

    def get(self, membership, url: str) -> tuple[int, bytes]:
        status, _, body = self.http.request("GET", url, None, headers={"Cookie": self.cookies[membership.pk]})
        return status, body

    def post_api(self, key: str, path: str, body: dict) -> int:
        return self.http.request("POST", path, key, body)[0]

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.worker}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def close(self) -> None:
        self.http.close()
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


def _next_link(server, membership, url: str) -> str:
    """The address the "Older" link of ``url`` leads to (the seek cursor the list gives its pages)."""
    import re

    found = re.search(r'<a href="\?([^"]*)" id="next-page">', server.get(membership, url)[1].decode())
    return url.split("?")[0] + "?" + found.group(1).replace("&amp;", "&") if found else url


def _time(run, repeat: int, cpu_seconds) -> tuple[float, float, float]:
    """p50 and p95 of the wall time of ``run()``, and the mean CPU time per call of the serving
    process, all in ms, after one warm-up call (template loading, first query plans)."""
    run()
    samples = []
    cpu_before = cpu_seconds()
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return (*_percentiles(samples), (cpu_seconds() - cpu_before) * 1000 / repeat)


def _page(server, membership, url: str):
    def run():
        status, _ = server.get(membership, url)
        if status != 200:
            raise SystemExit(f"{url} answered {status}")
    return run


SEARCH = {"query": "paragraph about subject 7", "mode": "keyword", "expand": "parent", "expand_level": "leaf",
          "top_k": 5, "max_contexts": 5, "context_token_budget": 2000}


def _api_key(member) -> str:
    from accounts.services import api_token_create
    from accounts.tenancy import acting_tenant

    with acting_tenant(member.tenant_id):
        return api_token_create(membership=member, name="console-bench")[1]


def _playground_overhead(server, member, key: str, repeat: int) -> dict[str, tuple[float, float, float]]:
    """The same search three ways: ``search()`` in this process, the REST call a team app makes
    (``POST /api/v1/search/`` with a token: authentication, the serializers, the audit write), and
    the playground page. The issue's budget is the page's overhead over the API call."""
    from urllib.parse import urlencode

    from accounts.tenancy import tenant_activate
    from kb.search import search

    params = SEARCH

    def call_search():
        tenant_activate(member.tenant_id)  # as a request's middleware does
        search(member=member, **params)

    def call_api():
        status = server.post_api(key, "/api/v1/search/", params)
        if status != 200:
            raise SystemExit(f"the API answered {status}")

    return {
        "kb.search.search() (in this process)": _time(call_search, repeat, time.process_time),
        "POST /api/v1/search/": _time(call_api, repeat, server.cpu_seconds),
        "GET /search/ (the playground page)": _time(_page(server, member, "/search/?" + urlencode(params)), repeat,
                                                    server.cpu_seconds),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--sections", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--via", choices=("gunicorn", "client"), default="gunicorn",
                        help="serve the pages with gunicorn (as make web) or Django's test client in this process")
    options = parser.parse_args(argv)
    _setup()
    started = time.perf_counter()
    tenant, admin, viewer, big, rows = _build(options.documents, options.sections)
    print(f"built {options.documents} documents and a {options.sections}-section document "
          f"in {time.perf_counter() - started:.0f} s (tenant {tenant.slug}); served by {options.via}")
    server = Gunicorn() if options.via == "gunicorn" else InProcess()
    key = _api_key(admin)
    # A web worker serves searches too: the first loads the embedding model (and its libraries)
    # into the worker. The pages are timed in that state, not in a worker that never searched.
    if server.post_api(key, "/api/v1/search/", {**SEARCH, "mode": "vector"}) != 200:
        raise SystemExit("the warm-up search failed")
    print("load average (1, 5, 15 min) before the requests: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    try:
        chosen = rows[len(rows) // 2].id
        urls = {
            "documents list, page 1": "/documents/",
            "documents list, page 200 (typed in: by offset)": "/documents/?page=200",
            "documents list, title search": "/documents/?q=Document+12",
            "documents list, status + tag filter": "/documents/?status=ready&tag=t3",
            f"document page, {options.sections} sections": f"/documents/{big.pk}/",
            "document page, a section chosen": f"/documents/{big.pk}/?section={chosen}",
        }
        print("\n| page | member | p50 ms | p95 ms | CPU mean ms |\n|---|---|---:|---:|---:|")
        for label, membership in (("admin (restricted)", admin), ("viewer (internal)", viewer)):
            server.sign_in(membership)
            pages = {**urls, "documents list, page 200 (its Older link)":
                     _next_link(server, membership, "/documents/?page=199")}
            for name, url in pages.items():
                p50, p95, cpu = _time(_page(server, membership, url), options.repeat, server.cpu_seconds)
                print(f"| {name} | {label} | {p50:.1f} | {p95:.1f} | {cpu:.1f} |")
        server.sign_in(admin)
        timed = _playground_overhead(server, admin, key, options.repeat)
        print("\n| search (keyword, expand parent), admin | p50 ms | p95 ms | CPU mean ms |\n|---|---:|---:|---:|")
        for name, (p50, p95, cpu) in timed.items():
            print(f"| {name} | {p50:.1f} | {p95:.1f} | {cpu:.1f} |")
        page, api = timed["GET /search/ (the playground page)"], timed["POST /api/v1/search/"]
        print(f"| overhead of the page over the API call | {page[0] - api[0]:.1f} | {page[1] - api[1]:.1f} | "
              f"{page[2] - api[2]:.1f} |")
        print("\nload average (1, 5, 15 min) after the requests: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    finally:
        from accounts.tenancy import acting_tenant

        server.close()
        with acting_tenant(tenant.pk):
            tenant.delete()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
