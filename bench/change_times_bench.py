"""What a reader's time of a document costs (``kb.changed``; docs/benchmarks.md, "Change times").

Not a test: it prints the median and p95 of each statement and asserts nothing::

    BULKHEAD_DATA_DIR=.data/change-times-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/change-times-bench .venv/bin/python -m bench.change_times_bench --documents 5000 --sections 20

It builds a throwaway tenant of ``--documents`` documents of ``--sections`` sections each (a chunk each; every
other section above the reader; all a month old but for a section changed today in one document of ten, and an
internal one in one of twenty), then times, for an internal reader and on the same rows, the statements that
changed against the shape they had before: the first page of the documents list (the API's: 25 rows, newest
first) with and without the time annotation, and a search's readable-chunk count under ``updated_after``
(the reader's time, ``kb.changed.documents_updated``) against the document column joined (``updated_at``). The
tenant is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import uuid
from datetime import timedelta

from bench.timing import p50_p95


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    from bulkhead import embedded_services

    embedded_services.ensure_started()
    import django

    django.setup()


def _build(documents: int, sections: int):
    from accounts.policy import AccessLevel
    from accounts.services import membership_create, tenant_create
    from accounts.tenancy import tenant_activate
    from kb.index_versions import index_version_active
    from kb.models import Chunk, Document, Section

    tenant = tenant_create(slug=f"times-bench-{uuid.uuid4().hex[:8]}", name="Change times bench")
    tenant_activate(tenant.pk)
    reader = membership_create(tenant=tenant, email=f"reader@{tenant.slug}.invalid", role="viewer",
                               clearance="internal")
    version = index_version_active(tenant=tenant)
    rows = [Document(tenant=tenant, title=f"Doc {i}", content_type="text/markdown", raw=b"x", text="x" * sections,
                     sha256="0" * 64, status=Document.Status.READY) for i in range(documents)]
    Document.objects.bulk_create(rows, batch_size=2000)
    section_rows, chunk_rows = [], []
    for document in rows:
        for order in range(sections):
            level = AccessLevel.INTERNAL if order % 2 == 0 else AccessLevel.RESTRICTED
            section = Section(id=uuid.uuid4(), tenant=tenant, document=document, key=str(order), order=order,
                              start=order, end=order + 1, access_level=level, title=f"S{order}")
            section_rows.append(section)
            chunk_rows.append(Chunk(
                id=uuid.uuid4(), tenant=tenant, document=document, section=section, index_version=version,
                ordinal=order, start=order, end=order + 1, text="x", embed_text="x", token_count=1,
                content_hash=uuid.uuid4().hex, embedding=[0.01] * 384, access_level=level))
    Section.objects.bulk_create(section_rows, batch_size=5000)
    Chunk.objects.bulk_create(chunk_rows, batch_size=5000)
    # A month old, all of it; then one document in ten had a restricted section changed today, and one in twenty an
    # internal one: the reader's time moves for the latter only, ``updated_at`` for both.
    from datetime import timedelta

    from django.db import connections
    from django.utils import timezone

    from accounts.tenancy import owner_alias

    old, today = timezone.now() - timedelta(days=30), timezone.now()
    Document.objects.filter(tenant=tenant).update(updated_at=old, shown_changed_at=old)
    Section.objects.filter(tenant=tenant).update(changed_at=old)
    tenth, twentieth = [d.pk for d in rows[::10]], [d.pk for d in rows[::20]]
    Document.objects.filter(pk__in=tenth).update(updated_at=today)
    Section.objects.filter(document_id__in=tenth, order=1).update(changed_at=today)
    Section.objects.filter(document_id__in=twentieth, order=0).update(changed_at=today)

    with connections[owner_alias()].cursor() as cursor:  # fresh planner statistics (ANALYZE: the tables' owner)
        cursor.execute("ANALYZE kb_document, kb_section, kb_chunk, kb_sectiongone")
    return tenant, reader




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    _setup()
    from django.utils import timezone

    from accounts.selectors import reader_for
    from accounts.tenancy import acting_tenant
    from kb import retrieval, selectors
    from kb.changed import updated_at_shown
    from kb.models import Document
    from kb.search_types import SearchFilters

    tenant, reader = _build(args.documents, args.sections)
    try:
        member_reader = reader_for(reader)
        version = selectors.active_index_version_id(tenant_id=tenant.pk)
        listed = selectors.document_list(member=reader)
        before = listed.values("pk", "created_at", "sections_count", "chunks_count", "updated_at")
        now = listed.values("pk", "created_at", "sections_count", "chunks_count", "updated_at_shown")
        after = SearchFilters(updated_after=timezone.now() - timedelta(days=1))
        joined = retrieval.readable_chunks(member_reader, version, SearchFilters()).filter(
            document__updated_at__gte=after.updated_after)
        shown = retrieval.readable_chunks(member_reader, version, after)
        until = SearchFilters(updated_before=after.updated_after)
        joined_before = retrieval.readable_chunks(member_reader, version, SearchFilters()).filter(
            document__updated_at__lt=until.updated_before)
        shown_before = retrieval.readable_chunks(member_reader, version, until)
        # The first way tried: the reader's time computed for every document, then compared (kb.changed's docstring).
        greatest = retrieval.readable_chunks(member_reader, version, SearchFilters()).filter(
            document_id__in=Document.objects.filter(tenant_id=tenant.pk)
            .alias(t=updated_at_shown(member_reader)).filter(t__gte=after.updated_after).values("pk"))
        assert greatest.count() == shown.count()
        print(f"readable chunks under updated_after: {joined.count()} by updated_at, {shown.count()} by the reader's time")
        cases = {
            "documents list, first 25 rows, updated_at column (before)": lambda: list(before[:25]),
            "documents list, first 25 rows, the reader's time (now)": lambda: list(now[:25]),
            "readable chunks under updated_after, document column joined (before)": lambda: joined.count(),
            "readable chunks under updated_after, the reader's time (now)": lambda: shown.count(),
            "readable chunks under updated_after, the reader's time as one greatest per document (tried)":
                lambda: greatest.count(),
            "readable chunks under updated_before, document column joined (before)": lambda: joined_before.count(),
            "readable chunks under updated_before, the reader's time (now)": lambda: shown_before.count(),
        }
        print(f"{args.documents} documents x {args.sections} sections, internal reader, {args.repeat} runs each")
        for name, run in cases.items():
            p50, p95 = p50_p95(run, args.repeat)
            print(f"  {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    finally:
        with acting_tenant(tenant.pk):
            tenant.delete()


if __name__ == "__main__":
    main()
