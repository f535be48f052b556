"""The dashboard: documents by status, chunks, members, the active index version, jobs."""

from __future__ import annotations

from django.shortcuts import render

from console.membership import member_required
from kb.overview import tenant_overview
from kb.selectors import error_in_full
from kb.serializers import error_for


@member_required()
def dashboard(request):
    member = request.member
    overview = tenant_overview(member=member)
    for job in overview.recent_failures:
        # In full for admins and whoever uploaded the bytes; others see the error without document text,
        # and without numbers where the document is not theirs to see (``error_numbers_shown``).
        job.shown_error = error_for(job, error_in_full(member=member, job=job), numbers=job.error_numbers_shown)
    template = "console/_dashboard_jobs.html" if request.htmx else "console/dashboard.html"
    return render(request, template, {"member": member, "overview": overview, "nav": "dashboard"})
