"""What the jobs rule costs (``kb.selectors.jobs_shown``'s ``document_whole``; docs/benchmarks.md, "Job times").

Not a test: it prints the median and p95 of each statement and asserts nothing::

    BULKHEAD_DATA_DIR=.data/job-times-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/job-times-bench .venv/bin/python -m bench.job_times_bench --documents 2000 --sections 10 --jobs 3

It builds a throwaway tenant of ``--documents`` documents of ``--sections`` sections each -- every other document
all internal, the rest with every other section restricted; one in five with content gone under a restricted
policy -- and ``--jobs`` finished jobs per document, then times, for an internal viewer and for an admin, the
console's jobs list as it reads them (``kb.overview.job_list``: the count its pager takes and its first page of
25 rows) against the shape the rule had before (the same annotations less ``document_whole``; the viewer's
filter: created by them or of a document they can see). The tenant is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import uuid

from bench.timing import p50_p95


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    from bulkhead import embedded_services

    embedded_services.ensure_started()
    import django

    django.setup()


def _build(documents: int, sections: int, jobs: int):
    from django.db import connections
    from django.utils import timezone

    from accounts.policy import AccessLevel
    from accounts.services import membership_create, tenant_create
    from accounts.tenancy import owner_alias, tenant_activate
    from kb.models import Document, IngestionJob, Section, SectionGone

    tenant = tenant_create(slug=f"jobs-bench-{uuid.uuid4().hex[:8]}", name="Job times bench")
    tenant_activate(tenant.pk)
    viewer = membership_create(tenant=tenant, email=f"viewer@{tenant.slug}.invalid", role="viewer",
                               clearance="internal")
    admin = membership_create(tenant=tenant, email=f"admin@{tenant.slug}.invalid", role="admin",
                              clearance="internal")
    rows = [Document(tenant=tenant, title=f"Doc {i}", content_type="text/markdown", raw=b"x", text="x" * sections,
                     sha256="0" * 64, status=Document.Status.READY) for i in range(documents)]
    Document.objects.bulk_create(rows, batch_size=2000)
    section_rows, job_rows, gone_rows = [], [], []
    now = timezone.now()
    for n, document in enumerate(rows):
        for order in range(sections):
            mixed = n % 2 == 1 and order % 2 == 1
            section_rows.append(Section(
                id=uuid.uuid4(), tenant=tenant, document=document, key=str(order), order=order, start=order,
                end=order + 1, title=f"S{order}",
                access_level=AccessLevel.RESTRICTED if mixed else AccessLevel.INTERNAL))
        for _ in range(jobs):
            job_rows.append(IngestionJob(tenant=tenant, document=document, status=IngestionJob.Status.SUCCEEDED,
                                         stage="done", done=sections, total=sections, finished_at=now))
        if n % 5 == 0:
            gone_rows.append(SectionGone(tenant=tenant, document=document, access_level=AccessLevel.RESTRICTED,
                                         gone_at=now))
    Section.objects.bulk_create(section_rows, batch_size=5000)
    IngestionJob.objects.bulk_create(job_rows, batch_size=5000)
    SectionGone.objects.bulk_create(gone_rows, batch_size=5000)
    with connections[owner_alias()].cursor() as cursor:  # fresh planner statistics (ANALYZE: the tables' owner)
        cursor.execute("ANALYZE kb_document, kb_section, kb_ingestionjob, kb_sectiongone")
    return tenant, viewer, admin


def _before(member):
    """``kb.selectors.jobs_shown`` as it was before ``document_whole`` (the same annotations and filter)."""
    from django.db.models import BooleanField, Exists, ExpressionWrapper, OuterRef, Q

    from accounts.models import Role
    from accounts.selectors import reader_for
    from kb.models import CONTENT_BY, Document, IngestionJob, Section
    from kb.selectors import document_visible_q, reads_every_section

    uploaded = Q(**{f"stats__{CONTENT_BY}": member.user_id})  # kb.selectors' own, as it reads it

    visible_document = Document.objects.filter(pk=OuterRef("document_id")).filter(document_visible_q(reader_for(member)))
    everything = Q(pk__isnull=False) if reads_every_section(member) else Q(pk__in=[])
    jobs = IngestionJob.objects.filter(tenant_id=member.tenant_id).annotate(
        document_visible=Exists(visible_document),
        document_stored=Exists(Section.objects.filter(document_id=OuterRef("document_id"),
                                                      document__status=Document.Status.READY)),
    ).annotate(
        progress_shown=ExpressionWrapper(
            Q(document_id__isnull=True) | (Q(document_visible=True) & Q(document_stored=True)) | uploaded
            | everything, output_field=BooleanField()),
        error_numbers_shown=ExpressionWrapper(
            Q(document_id__isnull=True) | Q(document_visible=True) | uploaded, output_field=BooleanField()),
    )
    if member.role != Role.ADMIN:
        jobs = jobs.filter(Q(created_by_id=member.user_id) | Q(document_visible=True))
    return jobs.select_related("document", "created_by").order_by("-created_at", "-id")




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--sections", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    _setup()
    from accounts.tenancy import acting_tenant
    from kb.overview import job_list

    tenant, viewer, admin = _build(args.documents, args.sections, args.jobs)
    try:
        print(f"{args.documents} documents x {args.sections} sections, {args.jobs} jobs each, {args.repeat} runs each")
        for name, member in (("internal viewer", viewer), ("internal admin", admin)):
            before, now = _before(member), job_list(member=member)
            print(f"  {name}: {before.count()} jobs shown before, {now.count()} now")
            cases = {
                f"{name}, jobs list count (before)": lambda q=before: q.count(),
                f"{name}, jobs list count (now)": lambda q=now: q.count(),
                f"{name}, jobs list first 25 rows (before)": lambda q=before: list(q[:25]),
                f"{name}, jobs list first 25 rows (now)": lambda q=now: list(q[:25]),
            }
            for case, run in cases.items():
                p50, p95 = p50_p95(run, args.repeat)
                print(f"    {case}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    finally:
        with acting_tenant(tenant.pk):
            tenant.delete()


if __name__ == "__main__":
    main()
