"""What a title decided per reader costs the documents list (``kb.titles.reader_annotations``; docs/benchmarks.md,
"seventeenth session").

Not a test: it prints the median and p95 of each statement (it asserts only that both shapes list the same titles)::

    BULKHEAD_DATA_DIR=.data/title-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/title-bench .venv/bin/python -m bench.title_bench --documents 5000 --sections 20

It builds the change-times bench's throwaway tenant (``bench.change_times_bench``: ``--documents`` documents of
``--sections`` sections, every other one restricted, an internal reader), gives every document a content title
borne by its first section (internal) or, in one document of two, its second (restricted), and a front matter's
tag -- its stored title and tags what the old one-answer rule gave every reader, so both shapes answer the same --
then times on the same rows the statements the per-reader title changed against the shape they had before
(the same queryset without the reader's annotations, as the list read one stored title and tag list for every
reader): the list's first page (25 rows, newest first, every column the API serializes), its first page sorted by
title (the console's sort: the title as shown computed for every row), a title filter (the console's ``q``) and a
tag filter. The tenant is deleted afterwards.
"""

from __future__ import annotations

import argparse

from django.db.models import OuterRef

from bench.change_times_bench import _build, _setup
from bench.timing import p50_p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--explain", action="store_true", help="print the first page's plans, before and now")
    args = parser.parse_args()
    _setup()

    from accounts.tenancy import acting_tenant
    from kb import selectors
    from kb.titles import TITLE_READ, screening_mode, shown_tags_sql

    tenant, reader = _build(args.documents, args.sections)
    try:
        titled(tenant)
        mode = screening_mode(tenant_id=tenant.pk)
        now = selectors.document_list(member=reader)
        before = _before(reader, mode)
        shown = sum(1 for d in now.all() if getattr(d, TITLE_READ))
        answers = [(d.pk, d.title_shown) for d in now.all()], [(d.pk, d.title_shown) for d in before.all()]
        assert answers[0] == answers[1]  # the same titles: only the way to them differs
        print(f"{args.documents} documents x {args.sections} sections, internal reader (a content title shown to "
              f"them in {shown}), {args.repeat} runs each")
        cases = {
            "list, first 25 rows (before)": lambda: list(before.all()[:25]),
            "list, first 25 rows (now)": lambda: list(now.all()[:25]),
            "list sorted by title, first 25 rows (before)": lambda: list(before.order_by("title_shown", "id")[:25]),
            "list sorted by title, first 25 rows (now)": lambda: list(now.order_by("title_shown", "id")[:25]),
            "title filter 'content', first 25 (before)": lambda: list(
                before.filter(title_shown__icontains="content")[:25]),
            "title filter 'content', first 25 (now)": lambda: list(now.filter(title_shown__icontains="content")[:25]),
            "title filter 'untitled', first 25 (before)": lambda: list(
                before.filter(title_shown__icontains="untitled")[:25]),
            "title filter 'untitled', first 25 (now)": lambda: list(
                now.filter(title_shown__icontains="untitled")[:25]),
            "tag filter 'kestrel', first 25 (before)": lambda: list(
                before.alias(tags_shown=shown_tags_sql(mode)).filter(tags__contains=["kestrel"],
                                                                     tags_shown__contains=["kestrel"])[:25]),
            "tag filter 'kestrel', first 25 (now)": lambda: list(
                selectors.document_list(member=reader, tag="kestrel")[:25]),
        }
        if args.explain:
            for name, listed in (("before", before), ("now", now)):
                print(f"--- first page, {name}\n" + listed.all()[:25].explain(analyze=True))
            return
        for round_ in (1, 2):
            print(f" round {round_}")
            for name, run in cases.items():
                p50, p95 = p50_p95(run, args.repeat)
                print(f"  {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    finally:
        with acting_tenant(tenant.pk):
            tenant.delete()


def titled(tenant) -> None:
    """Make the change-times bench's tenant (``bench.change_times_bench._build``) this bench's: a tree of sections,
    a content title borne by each document's first (internal) or, in one document of two, second (restricted)
    section -- its one title candidate -- and a front matter's tag; fresh planner statistics."""
    from django.db import connections
    from django.db.models import Subquery

    from accounts.tenancy import acting_tenant, owner_alias
    from kb.models import Document, Section

    with acting_tenant(tenant.pk):
        # A tree: the first section of each document its root, the others under it (the change-times bench
        # leaves every section a root; the root's EXISTS would then find one of twenty).
        root = Section.objects.filter(document_id=OuterRef("document_id"), order=0).values("pk")[:1]
        Section.objects.filter(tenant=tenant, order__gt=0).update(parent_id=Subquery(root), depth=1)
        # "Doc 0", "Doc 1", ...: half and half. The stored title is what the old rule gave every reader (the
        # content's where every reader reads its bearer), so both shapes answer the same on the same rows.
        for order, digits, old in ((0, "[02468]$", "Content title"), (1, "[13579]$", "untitled")):
            bearer = Section.objects.filter(document_id=OuterRef("pk"), order=order).values("pk")[:1]
            Document.objects.filter(tenant=tenant, title__regex=digits).update(
                title=old, content_title="Content title", title_section=Subquery(bearer), tags=["kestrel"],
                content_tags=["kestrel"])
        # Each bearer its document's one title candidate (a member is shown the first candidate they may read).
        Section.objects.filter(tenant=tenant, pk__in=Document.objects.filter(tenant=tenant).values(
            "title_section")).update(title_candidate="Content title")
    with connections[owner_alias()].cursor() as cursor:  # fresh planner statistics after the updates
        cursor.execute("ANALYZE kb_document, kb_section")


def _before(member, mode):
    """The documents list as it was read before the per-reader title (``kb.selectors.document_list`` less
    ``kb.titles.reader_annotations``: the stored title and tags for every reader)."""
    from django.db.models import Count, IntegerField, Subquery, Value
    from django.db.models.functions import Coalesce

    from accounts.access import readable_q
    from accounts.selectors import reader_for
    from kb.changed import updated_at_shown
    from kb.models import Chunk, Document, Section
    from kb.selectors import active_index_version_id, document_visible_q, jobs_shown
    from kb.statuses import with_status_shown
    from kb.titles import shown_source_sql, shown_title_sql

    def _count(queryset):  # as kb.selectors counts a document's readable rows
        counted = queryset.order_by().values("document").annotate(n=Count("pk")).values("n")
        return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))

    reader = reader_for(member)
    version_id = active_index_version_id(tenant_id=reader.tenant_id)
    sections = Section.objects.filter(readable_q(reader), document=OuterRef("pk"))
    chunks = Chunk.objects.filter(readable_q(reader), document=OuterRef("pk"), index_version_id=version_id)
    documents = (Document.objects.filter(tenant_id=reader.tenant_id).filter(document_visible_q(reader))
                 .defer("raw", "text").annotate(sections_count=_count(sections), chunks_count=_count(chunks),
                                                updated_at_shown=updated_at_shown(reader)))
    return (with_status_shown(documents, jobs_shown(member=member))
            .annotate(title_shown=shown_title_sql(mode), source_shown=shown_source_sql(mode))
            .order_by("-created_at", "-id"))


if __name__ == "__main__":
    main()
