"""Jobs: the list (filters, pages), a job with live progress, and retrying a failed one.

Jobs are read through ``kb.overview.job_list`` / ``kb.selectors.job_get`` (one rule: admins
every job of the tenant, others the jobs they created and those of documents they can see and read
whole from the job's creation on, ``kb.selectors.jobs_shown``);
errors as ``kb.serializers.error_for`` shows them to this member (an error's numbers only where
``error_numbers_shown``), and progress only where ``progress_shown``, else a dash
(``console/jobs/_progress_numbers.html``); a retry is
``kb.services.job_retry``, which checks who may.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.errors import ApplicationError, NotFound
from console.membership import member_required
from kb.models import IngestionJob
from kb.overview import job_list
from kb.screening import document_screening_summary
from kb.selectors import error_in_full, job_get
from kb.serializers import error_for
from kb.services import job_retry, job_retry_allowed

PAGE_SIZE = 25
FINISHED = (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED)


def _shown_error(member, job: IngestionJob) -> str:
    """In full for the uploader of the bytes and admins who may read every section; others see it without
    document text, and without numbers where the job's ``error_numbers_shown`` is not (``kb.selectors.jobs_shown``)."""
    return error_for(job, error_in_full(member=member, job=job), numbers=job.error_numbers_shown)


@member_required()
def job_index(request):
    member = request.member
    params = request.GET
    status = params.get("status", "") if params.get("status", "") in IngestionJob.Status.values else ""
    kind = params.get("kind", "") if params.get("kind", "") in IngestionJob.Kind.values else ""
    page = Paginator(job_list(member=member, status=status, kind=kind), PAGE_SIZE).get_page(params.get("page"))
    for job in page.object_list:
        job.shown_error = _shown_error(member, job)
    query = params.copy()
    query.pop("page", None)
    context = {
        "member": member, "nav": "jobs", "page": page, "statuses": IngestionJob.Status.values,
        "kinds": IngestionJob.Kind.values, "filters": {"status": status, "kind": kind}, "query": query.urlencode(),
    }
    template = "console/jobs/_table.html" if request.htmx else "console/jobs/list.html"
    return render(request, template, context)


def _job(member, job_id) -> IngestionJob:
    # One statement, with its document and creator (its title only where ``document_visible``): a job that left the
    # member's sight (a policy change committed meanwhile) is the 404 of any hidden id.
    try:
        return job_get(member=member, job_id=job_id)
    except NotFound:
        raise Http404("No such job.") from None


@member_required()
def job_card(request, job_id):
    """One job as a line of the upload page, polled every second until it ends: its stage and progress,
    then the new document's link or the error (with its line, as the member may see it)."""
    member = request.member
    job = _job(member, job_id)
    job.shown_error = _shown_error(member, job)
    return render(request, "console/jobs/_card.html", {"job": job, "finished": job.status in FINISHED})


@member_required()
def job_detail(request, job_id):
    member = request.member
    job = _job(member, job_id)
    job.shown_error = _shown_error(member, job)
    children = []
    if job.kind != IngestionJob.Kind.DOCUMENT:
        # Narrowing the member's own list: a batch shows the children this member may see.
        children = list(job_list(member=member).filter(batch_id=job.pk).order_by("created_at", "id"))
        for child in children:
            child.shown_error = _shown_error(member, child)
    # Why parts of the document are held for review, as this member may know it (sections they may read).
    summary = None
    if job.document_id is not None and job.document_visible:
        summary = document_screening_summary(member=member, document_id=job.document_id)
    context = {
        "member": member, "nav": "jobs", "job": job, "children": children, "finished": job.status in FINISHED,
        "screening": summary,
        "can_retry": job.status == IngestionJob.Status.FAILED and job_retry_allowed(job=job, actor=member),
        "retry_of": job.stats.get("retry_of"),
    }
    template = "console/jobs/_progress.html" if request.htmx else "console/jobs/detail.html"
    return render(request, template, context)


@member_required()
@require_POST
def job_retry_view(request, job_id):
    member = request.member
    job = _job(member, job_id)
    try:
        retry = job_retry(job=job, actor=member)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("console:job", job_id=job.pk)
    messages.success(request, "A new job runs the document again.")
    return redirect("console:job", job_id=retry.pk)
