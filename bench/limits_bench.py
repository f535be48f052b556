"""Benchmarks of the resource limits (docs/benchmarks.md, "Fairness and parse budgets"). Prints; asserts nothing.

    python -m bench.limits_bench nesting    # chunking cost against nesting depth
    python -m bench.limits_bench overhead   # what the budgeted child costs per document
    python -m bench.limits_bench fairness   # a small upload's latency while a heavy one runs
    python -m bench.limits_bench preview    # what an upload preview costs the web process (time, peak memory)

``fairness`` boots the embedded PostgreSQL and Redis of ``BULKHEAD_DATA_DIR`` (like
the tests) and starts its own workers on queues of its own, in two layouts: one
worker on one queue (the layout before the lanes) and the two-lane layout of the
demo (one worker on the interactive lane alone, one on both).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable


def nested_html(depth: int) -> bytes:
    """``depth`` nested <section>s, each with a heading and a paragraph."""
    opened = "".join(
        f"<section><h2>Heading number {i} with words</h2><p>Some text about topic {i}.</p>" for i in range(depth)
    )
    return f"<html><body>{opened}{'</section>' * depth}</body></html>".encode()


def nested_markdown_regions(depth: int) -> bytes:
    """``depth`` nested access regions, each with a paragraph (a heading in the first six: levels end there)."""
    lines = []
    for i in range(depth):
        heading = [f"{'#' * (1 + i)} Heading {i}", ""] if i < 6 else []
        lines += ["<!-- access: internal -->", *heading, f"Text about topic {i}.", ""]
    lines += ["<!-- /access -->"] * depth
    return "\n".join(lines).encode()


def nested_markdown_lists(depth: int) -> bytes:
    return "".join(f"{'  ' * i}- item {i} with words\n" for i in range(depth)).encode()


def _counting_counter():
    from ingestion.chunking import default_counter

    inner = default_counter()

    class Counting:
        calls = 0
        chars = 0

        def count(self, text: str) -> int:
            Counting.calls += 1
            Counting.chars += len(text)
            return inner.count(text)

        def __getattr__(self, name):
            return getattr(inner, name)

    return Counting()


def bench_nesting(out: Callable[[str], None]) -> None:
    from ingestion.chunking import ChunkingConfig, chunk_document
    from ingestion.parsers import parse

    cases = [(f"html depth {d}", nested_html(d), "page.html") for d in (50, 100, 200, 400, 1000)]
    depth = 1000
    while len(nested_html(depth)) < 115 * 1024:
        depth += 1
    cases.append((f"html 115 KB (depth {depth})", nested_html(depth), "page.html"))
    cases += [(f"md regions {d}", nested_markdown_regions(d), "n.md") for d in (100, 400, 1000)]
    cases += [(f"md list depth {d}", nested_markdown_lists(d), "n.md") for d in (100, 400, 1000)]
    out(f"{'input':<28}{'bytes':>9}{'sections':>10}{'parse s':>9}{'chunk s':>9}{'tok calls':>11}{'tok chars':>12}")
    for name, data, filename in cases:
        started = time.perf_counter()
        try:
            doc = parse(data, filename=filename)
        except ValueError as exc:
            out(f"{name:<28}{len(data):>9}  refused: {exc}")
            continue
        parsed = time.perf_counter()
        counter = _counting_counter()
        chunk_document(doc, ChunkingConfig(), counter)
        done = time.perf_counter()
        out(f"{name:<28}{len(data):>9}{len(doc.sections):>10}{parsed - started:>9.3f}{done - parsed:>9.3f}"
            f"{type(counter).calls:>11}{type(counter).chars:>12}")


def bench_overhead(out: Callable[[str], None], *, rounds: int = 40) -> None:
    from pathlib import Path

    from ingestion import limits
    from ingestion.chunking import ChunkingConfig, chunk_document
    from ingestion.parsers import parse

    budget = {"memory_bytes": 2048 * 1024 * 1024, "seconds": 120}
    started = time.perf_counter()
    limits.parse_limited(b"warm", filename="a.txt", **budget)
    out(f"parse server start (first call): {1000 * (time.perf_counter() - started):.0f} ms")
    samples = Path(__file__).resolve().parent.parent / "samples"
    files = [("note.md (40 bytes)", b"# Note\n\nCall the front desk after six.\n", "note.md")]
    files += [(p.name, p.read_bytes(), p.name) for p in sorted(samples.iterdir()) if p.suffix in (".md", ".txt", ".pdf")]
    config = ChunkingConfig()

    def median_ms(fn) -> float:
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            fn()
            times.append(1000 * (time.perf_counter() - t))
        return statistics.median(times)

    out(f"{'document':<32}{'bytes':>9}{'parse':>8}{'limited':>9}{'chunk':>8}{'limited':>9}{'added/doc':>11}")
    for name, data, filename in files:
        doc = parse(data, filename=filename)
        parse_ms = median_ms(lambda d=data, f=filename: parse(d, filename=f))
        parse_lim = median_ms(lambda d=data, f=filename: limits.parse_limited(d, filename=f, **budget))
        chunk_ms = median_ms(lambda d=doc: chunk_document(d, config))
        chunk_lim = median_ms(lambda d=doc: limits.chunk_limited(d, config, **budget))
        added = parse_lim - parse_ms + chunk_lim - chunk_ms
        out(f"{name:<32}{len(data):>9}{parse_ms:>8.1f}{parse_lim:>9.1f}{chunk_ms:>8.1f}{chunk_lim:>9.1f}{added:>11.1f}")
    out(f"(milliseconds, median of {rounds}; 'limited' = in the budgeted child)")


# ----------------------------------------------------------------------------- fairness


def heavy_text(megabytes: float, *, seed: int | None = None) -> bytes:
    """Varied prose of ``megabytes`` (a few thousand chunks a MB); without a seed, new text each run,
    so no embedding-cache hits."""
    import random

    rnd = random.Random(uuid.uuid4().int if seed is None else seed)
    words = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(3, 10))) for _ in range(5000)]
    paragraphs, size = [], 0
    while size < megabytes * 1024 * 1024:
        paragraph = " ".join(rnd.choice(words) for _ in range(rnd.randint(40, 120))) + "."
        paragraphs.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(paragraphs).encode()


def _start_worker(name: str, queues: str):
    from django.conf import settings

    from bulkhead.celery import app
    from bulkhead.embedded_services import database_env

    env = {**os.environ, **database_env(), "REDIS_URL": settings.REDIS_URL}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "bulkhead", "worker", "--pool=solo", "-Q", queues, "-n", f"{name}@%h",
         "--loglevel=WARNING", "--without-mingle", "--without-gossip"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while not app.control.ping(timeout=0.5, destination=[f"{name}@{os.uname().nodename}"]):
        if process.poll() is not None or time.monotonic() > deadline:
            _stop(process)
            raise RuntimeError(f"worker {name} did not start")
    return process


def _stop(process) -> None:
    import signal

    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def _wait(job_id, states: tuple[str, ...], timeout: float = 1800) -> str:
    from kb.models import IngestionJob

    deadline = time.monotonic() + timeout
    while True:
        status = IngestionJob.objects.get(pk=job_id).status
        if status in states:
            return status
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} still {status}")
        time.sleep(0.02)


def _scenario(layout: str, heavy_mb: float, out: Callable[[str], None]) -> dict:
    from accounts.services import tenant_create
    from bench.private_worker import _set_routes
    from bulkhead.celery import app
    from kb.jobs import BULK
    from kb.jobs import INGEST_TASK as TASK
    from kb.services import Upload, document_create

    tag = uuid.uuid4().hex[:6]
    fast_q, bulk_q = f"bench-fast-{tag}", f"bench-bulk-{tag}"
    one = layout == "one queue, one worker"

    def route(name, args, kwargs, options, task=None, **kw):
        if name != TASK:
            return None
        return {"queue": bulk_q if not one and (kwargs or {}).get("lane") == BULK else fast_q}

    previous = app.conf.task_routes
    workers = []
    try:
        a = tenant_create(slug=f"bench-a-{tag}", name="A")
        b = tenant_create(slug=f"bench-b-{tag}", name="B")
        if one:
            workers.append(_start_worker(f"bench-one-{tag}", fast_q))
        else:
            workers.append(_start_worker(f"bench-both-{tag}", f"{fast_q},{bulk_q}"))
            workers.append(_start_worker(f"bench-fast-{tag}", fast_q))
        _set_routes(app, [route])
        # B alone first: the latency of a small upload on an idle system.
        started = time.perf_counter()
        _, idle = document_create(tenant=b, created_by=None, upload=Upload(
            content=b"# Warm\n\nA first small note.\n", title="warm", content_type="text/markdown"))
        _wait(idle.pk, ("succeeded", "failed"))
        idle_s = time.perf_counter() - started

        heavy_started = time.perf_counter()
        _, heavy = document_create(tenant=a, created_by=None, upload=Upload(
            content=heavy_text(heavy_mb), title="archive", source="archive.txt", content_type="text/plain"))
        _wait(heavy.pk, ("running",))
        time.sleep(1.0)  # well inside the heavy job
        small_started = time.perf_counter()
        _, small = document_create(tenant=b, created_by=None, upload=Upload(
            content=b"# Note\n\nCall the front desk after six.\n", title="note", content_type="text/markdown"))
        _wait(small.pk, ("succeeded", "failed"))
        small_s = time.perf_counter() - small_started
        heavy_status_then = _wait(heavy.pk, ("running", "succeeded", "failed"))
        _wait(heavy.pk, ("succeeded", "failed"))
        heavy_s = time.perf_counter() - heavy_started
    finally:
        _set_routes(app, previous)
        for worker in workers:
            _stop(worker)
    row = {"layout": layout, "idle_small_s": idle_s, "small_during_heavy_s": small_s, "heavy_s": heavy_s,
           "heavy_when_small_done": heavy_status_then}
    out(f"{layout:<34}{idle_s:>10.2f}{small_s:>14.2f}{heavy_s:>10.1f}  {heavy_status_then}")
    return row


def bench_fairness(out: Callable[[str], None], *, heavy_mb: float) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    import django

    from bulkhead import embedded_services

    embedded_services.ensure_started()  # settings only name the servers
    django.setup()
    out(f"heavy document: {heavy_mb:g} MB of text (tenant A); small: a 40-byte Markdown note (tenant B)")
    out(f"{'layout':<34}{'B idle s':>10}{'B during A s':>14}{'A s':>10}  A when B done")
    for layout in ("one queue, one worker", "two lanes, two workers"):
        _scenario(layout, heavy_mb, out)


# ----------------------------------------------------------------------------- the upload preview


def _peak_reset() -> None:
    """Reset this process's peak resident size (VmHWM; Linux: writing 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def bench_preview(out: Callable[[str], None], *, text_mb: float) -> None:
    """Upload previews run in this process as in a web thread (``pipeline.preview.document_preview``): each
    input's answer, seconds, and this process's peak resident memory above what it held before; then a
    small note's preview while a costly one runs in another thread of the process (another tenant's
    request on the same gunicorn worker)."""
    import threading

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    import django

    from bulkhead import embedded_services

    embedded_services.ensure_started()
    django.setup()
    from django.core.management import call_command

    from accounts.tenancy import owner_login_for_this_process

    owner_login_for_this_process()  # a benchmark sets up tenants as the owner (past the tenant wall)

    from accounts.errors import ApplicationError
    from accounts.services import membership_create, tenant_create
    from bench.costly_documents import repeated_page_pdf
    from kb.services import Upload
    from pipeline.preview import document_preview

    call_command("migrate", verbosity=0)
    tag = uuid.uuid4().hex[:6]
    members = []
    for name in ("a", "b"):
        tenant = tenant_create(slug=f"preview-{tag}-{name}", name=f"Preview {name}")
        members.append(membership_create(tenant=tenant, email=f"e@{tag}{name}.example", role="editor",
                                         clearance="restricted"))
    words = ("The quarterly report lists every invoice, its approver and the date it was paid. " * 12).encode()
    inputs = [
        ("note.md (40 bytes)", b"# Note\n\nCall the front desk after six.\n", "note.md"),
        (f"text, {text_mb:g} MB", (words + b"\n\n") * int(text_mb * 1024 * 1024 / (len(words) + 2)), "big.txt"),
        ("attack PDF (4,999 refs)", repeated_page_pdf(), "attack.pdf"),
        ("PDF, 16 refs (2.2 MB content)", repeated_page_pdf(references=16), "lane.pdf"),
        ("PDF, 4 refs drawing (1.7 MB)", repeated_page_pdf(references=4, lines=20, drawing=20_000), "edge.pdf"),
    ]

    def preview(member, data: bytes, filename: str) -> str:
        try:
            result = document_preview(member=member, upload=Upload(content=data, title=filename, source=filename))
            return f"200: {getattr(result, 'section_count', len(result.sections))} sections, {result.chunks} chunks"
        except ApplicationError as exc:
            return f"{exc.status_code} {exc.code}: {exc.message[:90]}"

    preview(members[0], inputs[0][1], inputs[0][2])  # the parse server and the database connection, warm
    out(f"{'input':<32}{'bytes':>11}{'seconds':>9}{'peak +MB':>10}  answer")
    for name, data, filename in inputs:
        held = _rss_mb("VmRSS")
        _peak_reset()
        started = time.perf_counter()
        answer = preview(members[0], data, filename)
        seconds = time.perf_counter() - started
        out(f"{name:<32}{len(data):>11,}{seconds:>9.2f}{_rss_mb('VmHWM') - held:>10.0f}  {answer}")
    out("another tenant's note while tenant A's costly preview runs in another thread of this process:")
    for name, data, filename in inputs[3:]:
        done = threading.Event()
        costly = threading.Thread(target=lambda d=data, f=filename, e=done: (preview(members[0], d, f), e.set()))
        costly.start()
        time.sleep(0.5)  # A's child is running
        started = time.perf_counter()
        preview(members[1], inputs[0][1], inputs[0][2])
        seconds = time.perf_counter() - started
        out(f"  beside {name:<30} note preview {seconds:.2f} s (A still running then: {not done.is_set()})")
        costly.join()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["nesting", "overhead", "fairness", "preview"])
    parser.add_argument("--heavy-mb", type=float, default=5.0, help="size of tenant A's text document (fairness)")
    parser.add_argument("--text-mb", type=float, default=24.0, help="size of the text preview (preview)")
    args = parser.parse_args(argv)
    out = lambda line: print(line, flush=True)  # noqa: E731
    if args.what == "nesting":
        bench_nesting(out)
    elif args.what == "overhead":
        bench_overhead(out)
    elif args.what == "preview":
        bench_preview(out, text_mb=args.text_mb)
    else:
        bench_fairness(out, heavy_mb=args.heavy_mb)


if __name__ == "__main__":
    main()
