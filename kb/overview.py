"""Reads for the console's lists and dashboard -- as one member, through the same rules as the API.

``job_list`` admits exactly the jobs ``kb.selectors.job_get`` admits (admins: every job of
the tenant; others: the jobs they created and the jobs of documents they can see and read whole
from the job's creation on: ``kb.selectors.jobs_shown``), a
job's document title is shown only where the member can see the document, and its numbers
(progress, the numbers of its error) only where ``progress_shown`` and ``error_numbers_shown``
(``kb.selectors.jobs_shown``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet, Sum

from accounts.models import Membership
from kb.models import Document, IndexVersion, IngestionJob
from kb.selectors import active_index_version, document_list, jobs_shown

UNFINISHED = (IngestionJob.Status.QUEUED, IngestionJob.Status.RUNNING)


def job_list(*, member: Membership, status: str = "", kind: str = "") -> QuerySet[IngestionJob]:
    """Jobs the member may see, newest first, annotated ``document_visible`` and ``progress_shown``."""
    jobs = jobs_shown(member=member)
    if status:
        jobs = jobs.filter(status=status)
    if kind:
        jobs = jobs.filter(kind=kind)
    return jobs.select_related("document", "created_by").order_by("-created_at", "-id")


@dataclass(frozen=True)
class Overview:
    documents_by_status: dict[str, int]
    documents: int
    readable_chunks: int
    members: int
    active_version: IndexVersion | None
    running_jobs: list[IngestionJob]
    recent_failures: list[IngestionJob]


def tenant_overview(*, member: Membership, running: int = 10, failures: int = 10) -> Overview:
    """The dashboard: what the member can see of their tenant right now."""
    documents = document_list(member=member)
    by_status = {row["status_shown"]: row["n"]  # as shown (kb.statuses)
                 for row in documents.order_by().values("status_shown").annotate(n=Count("id"))}
    chunks = documents.aggregate(n=Sum("chunks_count"))["n"] or 0
    jobs = job_list(member=member).filter(batch__isnull=True)
    return Overview(
        documents_by_status={status: by_status.get(status, 0) for status in Document.Status.values},
        documents=sum(by_status.values()),
        readable_chunks=chunks,
        members=Membership.objects.filter(tenant_id=member.tenant_id, is_active=True).count(),
        active_version=active_index_version(tenant_id=member.tenant_id),
        running_jobs=list(jobs.filter(status__in=UNFINISHED)[:running]),
        recent_failures=list(jobs.filter(status=IngestionJob.Status.FAILED)[:failures]),
    )
