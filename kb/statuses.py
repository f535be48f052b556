"""A document's status and error as one member may know them (seventeenth session; docs/security.md, "Job times").

A document's ``status`` and ``error`` columns are set by its jobs (``pipeline.claim``, ``pipeline.store``,
``kb.services``): an upload or replacement, a retry -- and a re-derivation, which a policy change starts only when it
changes a stored heading path, that is when a section under the changed one has readers the change left out of it.
A member who may not see that job (``kb.selectors.jobs_shown``: every member who is not an admin and does not read
the document whole, the policy change's own author among them) was told by the column what the job would have told
them: the document turned ``failed`` (a re-derivation that failed, with its error) -- or ``ready`` again -- with no
change they could see, so a policy changed above them, and its readers were not those of the sections under it.

``status_shown`` (:func:`with_status_shown`) is the status as such a member may know it: when the job that last set
the column is a re-derivation (a policy change's, or a retry of one: ``stats["rederive"]``) they may not see, the status the latest
other job of the document would have left (queued: ``pending``, running: ``processing``, succeeded: ``ready``, failed:
``failed`` with its error) -- ``ready`` when there is none. Anyone who may see that job (admins, whoever reads the
document whole from its creation on) is shown the column.
"""

from __future__ import annotations

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Exists,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Left

from kb.models import Document, IngestionJob

ERROR_CHARS = 4000  # a document's error holds a failed job's message cut to this (``pipeline.claim.job_fail``)
_REDERIVE = Q(stats__contains={"rederive": True})
_AS_DOCUMENT_STATUS = {
    IngestionJob.Status.QUEUED: Document.Status.PENDING,
    IngestionJob.Status.RUNNING: Document.Status.PROCESSING,
    IngestionJob.Status.SUCCEEDED: Document.Status.READY,
    IngestionJob.Status.FAILED: Document.Status.FAILED,
}


def _jobs_by_latest_event() -> QuerySet[IngestionJob]:
    """The document's own jobs (a build of a version other than the active one leaves its status alone; such a job
    names its version), the one whose last step -- creation, start, end -- came last first: what set the status."""
    return (
        IngestionJob.objects.filter(document_id=OuterRef("pk"), index_version_id__isnull=True)
        .alias(event=Coalesce("finished_at", "started_at", "created_at"))
        .order_by("-event", "-id")
    )


def with_status_shown(
    documents: QuerySet[Document], shown_jobs: QuerySet[IngestionJob] | None = None, *, every_job_shown: bool = False,
) -> QuerySet[Document]:
    """``documents`` annotated ``status_shown`` and ``error_shown``: the status and error as the member whose visible
    jobs are ``shown_jobs`` (``kb.selectors.jobs_shown``) may know them (see the module docstring). Fail closed: a
    re-derivation is hidden unless it is among ``shown_jobs``. ``every_job_shown``: the member sees every job of the
    tenant (an admin): the columns as they are (``shown_jobs`` is not read; without it and without this: an error).

    Asked row by row only where the job that last set the status is a re-derivation (a ``CASE``: the rest read the
    column), and then of that one job (``shown_jobs`` filtered by its id): asked of every job of the tenant at once
    (``pk__in``), it was planned as a scan of the jobs table per document and made a partial reader's status filter
    ten times slower (``bench.document_list_bench``, docs/benchmarks.md)."""
    if every_job_shown:
        return documents.annotate(status_shown=F("status"), error_shown=F("error"))
    if shown_jobs is None:
        raise ValueError("a member's status needs the jobs they may see (or every_job_shown)")
    latest = _jobs_by_latest_event()
    other = latest.exclude(_REDERIVE)
    other_status = Subquery(other.annotate(shown=Case(
        *[When(status=job, then=Value(document)) for job, document in _AS_DOCUMENT_STATUS.items()],
        default=Value(Document.Status.FAILED), output_field=CharField())).values("shown")[:1], output_field=CharField())
    other_error = Subquery(other.annotate(shown=Case(
        When(status=IngestionJob.Status.FAILED, then=Left("error", ERROR_CHARS)), default=Value(""),
        output_field=TextField())).values("shown")[:1], output_field=TextField())
    last_rederives = Exists(IngestionJob.objects.filter(_REDERIVE, pk=OuterRef("status_job")))
    shown = Exists(shown_jobs.order_by().filter(pk=OuterRef("status_job")))
    return documents.alias(status_job=Subquery(latest.values("pk")[:1]), last_rederives=last_rederives).alias(
        status_hidden=Case(When(last_rederives=True, then=~shown), default=Value(False), output_field=BooleanField()),
    ).annotate(
        status_shown=Case(When(status_hidden=True, then=Coalesce(other_status, Value(Document.Status.READY))),
                          default=F("status"), output_field=CharField()),
        error_shown=Case(When(status_hidden=True, then=Coalesce(other_error, Value(""))), default=F("error"),
                         output_field=TextField()),
    )
