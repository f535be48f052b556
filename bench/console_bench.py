"""Server time of the console's heaviest pages, and the search playground's overhead over search().

Not a test: it prints p50/p95 (and the median CPU time of the Django side) and asserts nothing (docs/benchmarks.md, "Console pages")::

    BULKHEAD_DATA_DIR=.data/console-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/console-bench .venv/bin/python -m bench.console_bench --documents 10000 --sections 1000

It builds a throwaway tenant -- ``--documents`` small documents (a section and a chunk each) and
one document of ``--sections`` nested sections with a chunk each -- then requests the pages
through Django's test client (the whole request: middleware, the selectors' SQL, the templates;
no network) as an admin and as an internal viewer, and deletes the tenant afterwards.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time
import uuid


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
    from kb.index_versions import index_version_active
    from kb.models import Chunk, Document, Section

    tenant = tenant_create(slug=f"console-bench-{uuid.uuid4().hex[:8]}", name="Console bench")
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
    return tenant, admin, viewer, big, rows


def _client(membership):
    from django.test import Client

    from console.membership import SESSION_KEY

    client = Client(raise_request_exception=True)
    client.force_login(membership.user)
    session = client.session
    session[SESSION_KEY] = membership.pk
    session.save()
    return client


def _next_link(client, url: str) -> str:
    """The address the "Older" link of ``url`` leads to (the seek cursor the list gives its pages)."""
    import re

    found = re.search(r'<a href="\?([^"]*)" id="next-page">', client.get(url).content.decode())
    return url.split("?")[0] + "?" + found.group(1).replace("&amp;", "&") if found else url


def _time_pages(client, urls: dict[str, str], repeat: int) -> dict[str, tuple[float, float, float]]:
    """p50 and p95 of the wall time, and the p50 of this process's CPU time (the Django side: views,
    templates, the ORM; not PostgreSQL's), which a loaded machine inflates far less than the wall time."""
    out = {}
    for name, url in urls.items():
        client.get(url)  # warm (template loading, first query plans)
        samples, cpu = [], []
        for _ in range(repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            response = client.get(url)
            samples.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")
        out[name] = (*_percentiles(samples), statistics.median(cpu))
    return out


def _playground_overhead(client, member, repeat: int) -> dict[str, tuple[float, float, float]]:
    """The same search three ways, interleaved: ``search()`` itself, the REST call a team app makes
    (``POST /api/v1/search/`` with a token: authentication, the serializers, the audit write), and
    the playground page. The issue's budget is the page's overhead over the API call."""
    import json
    from urllib.parse import urlencode

    from accounts.services import api_token_create
    from kb.search import search

    params = {"query": "paragraph about subject 7", "mode": "keyword", "expand": "parent", "expand_level": "leaf",
              "top_k": 5, "max_contexts": 5, "context_token_budget": 2000}
    url = "/search/?" + urlencode(params)
    _, key = api_token_create(membership=member, name="console-bench")
    api = _api_client(key)
    body = json.dumps(params)

    def call_api():
        response = api.post("/api/v1/search/", body, content_type="application/json")
        if response.status_code != 200:
            raise SystemExit(f"the API answered {response.status_code}: {response.content[:300]!r}")

    ways = {"kb.search.search()": lambda: search(member=member, **params), "POST /api/v1/search/": call_api,
            "GET /search/ (the playground page)": lambda: client.get(url)}
    samples = {name: ([], []) for name in ways}
    for run in ways.values():
        run()  # warm
    for _ in range(repeat):
        for name, run in ways.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            run()
            samples[name][0].append((time.perf_counter() - started) * 1000)
            samples[name][1].append((time.process_time() - started_cpu) * 1000)
    return {name: (*_percentiles(wall), statistics.median(cpu)) for name, (wall, cpu) in samples.items()}


def _api_client(key: str):
    from django.test import Client

    return Client(raise_request_exception=True, HTTP_AUTHORIZATION=f"Token {key}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--sections", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=40)
    options = parser.parse_args(argv)
    _setup()
    started = time.perf_counter()
    tenant, admin, viewer, big, rows = _build(options.documents, options.sections)
    print(f"built {options.documents} documents and a {options.sections}-section document "
          f"in {time.perf_counter() - started:.0f} s (tenant {tenant.slug})")
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
        print("\n| page | member | p50 ms | p95 ms | CPU p50 ms |\n|---|---|---:|---:|---:|")
        for label, membership in (("admin (restricted)", admin), ("viewer (internal)", viewer)):
            client = _client(membership)
            pages = {**urls, "documents list, page 200 (its Older link)": _next_link(client, "/documents/?page=199")}
            for name, (p50, p95, cpu) in _time_pages(client, pages, options.repeat).items():
                print(f"| {name} | {label} | {p50:.1f} | {p95:.1f} | {cpu:.1f} |")
        timed = _playground_overhead(_client(admin), admin, options.repeat)
        print("\n| search (keyword, expand parent), admin | p50 ms | p95 ms | CPU p50 ms |\n|---|---:|---:|---:|")
        for name, (p50, p95, cpu) in timed.items():
            print(f"| {name} | {p50:.1f} | {p95:.1f} | {cpu:.1f} |")
        page, api = timed["GET /search/ (the playground page)"], timed["POST /api/v1/search/"]
        direct = timed["kb.search.search()"]
        print(f"| overhead of the page over the API call | {page[0] - api[0]:.1f} | {page[1] - api[1]:.1f} | "
              f"{page[2] - api[2]:.1f} |")
        print(f"| overhead of the page over search() | {page[0] - direct[0]:.1f} | {page[1] - direct[1]:.1f} | "
              f"{page[2] - direct[2]:.1f} |")
        print("\nload average (1, 5, 15 min) after the requests: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    finally:
        tenant.delete()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
