"""Attack review 13 (2026-12-04): what the earlier rounds left.

- A replacement whose uploader may not read a section with an API override failed quoting that section's
  headings (in full to the uploader: the error is theirs), and went through when the new content repeated
  them -- an oracle of a restricted heading (``pipeline.plan._carry_overrides``).
- No answer said ``Cache-Control``: a document page, an API answer or an audit export could be kept by the
  browser (back after signing out on a shared machine) or a cache between (``bulkhead.middleware``).
"""

from __future__ import annotations

import uuid

import pytest

from accounts.models import Tenant
from accounts.services import group_create, tenant_create
from kb.models import IngestionJob, Section
from kb.services import Upload, document_create, document_replace, section_set_access
from tests.ingestion_helpers import wait_for_jobs

HANDBOOK = """# Handbook
Welcome aboard, everyone.

## Salaries <!-- access: restricted; groups: security-team -->
The chief executive earns a great deal.

## Holidays
Twenty-five days a year.
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_replacement_never_tells_its_uploader_an_old_heading_they_may_not_read(celery_worker):
    """An admin below a section (internal; the section restricted to a group) may replace the document -- an
    admin changes any document they can see -- and the old section's API override is compared with the new
    content's headings. Before: the job failed "the section 'Handbook > Salaries' has an access policy set
    through the API, and no section of the new content has the same headings", in full to that admin (the
    uploader of the bytes); and new content holding "## Salaries" went through, confirming the guess. Now the
    job fails before any comparison, naming no heading, whatever the new content holds; one who may read the
    section still gets the heading named."""
    from tests.api_helpers import member_with_token

    tenant = tenant_create(slug=f"carry13-{uuid.uuid4().hex[:6]}", name="Carry Co")
    try:
        group_create(tenant=tenant, slug="security-team")
        high, _ = member_with_token(tenant, f"high@{tenant.slug}.test", "admin", "restricted", ["security-team"])
        low, low_key = member_with_token(tenant, f"low@{tenant.slug}.test", "admin", "internal")
        document, job = document_create(tenant=tenant, created_by=high, upload=Upload(
            content=HANDBOOK.encode(), title="Handbook", content_type="text/markdown", access_level="internal"))
        (job,) = wait_for_jobs([job.id])
        assert job.status == "succeeded", job.error
        salaries = Section.objects.get(document=document, title="Salaries")
        section_set_access(actor=high, section=salaries, access_level="restricted", groups=["security-team"])
        wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))

        from rest_framework.test import APIClient

        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {low_key}")

        def replace(text: str) -> dict:
            answer = api.put(f"/api/v1/documents/{document.pk}/", {"title": "Handbook", "content": text,
                                                                    "content_type": "text/markdown"}, format="json")
            assert answer.status_code == 200, answer.content
            wait_for_jobs([answer.json()["job"]["id"]])
            return api.get(f"/api/v1/jobs/{answer.json()['job']['id']}/").json()

        without = replace("# Handbook\nWelcome aboard, version two.\n\n## Holidays\nTwenty-six days.\n")
        assert without["status"] == "failed", without
        assert "Salaries" not in without["error"], without["error"]
        # The right guess is answered as the wrong one: nothing tells it apart.
        guessed = replace("# Handbook\nWelcome aboard.\n\n## Salaries\nNo comment.\n\n## Holidays\nSame.\n")
        assert guessed["status"] == "failed" and guessed["error"] == without["error"], (guessed, without)
        assert "Salaries" not in api.get(f"/api/v1/documents/{document.pk}/").json()["error"]

        # Who may read the section is told which one, as before.
        _, job = document_replace(document=document, created_by=high, upload=Upload(
            content=b"# Handbook\nWelcome.\n", title="Handbook", content_type="text/markdown"))
        (job,) = wait_for_jobs([job.id])
        assert job.status == "failed" and "'Handbook > Salaries'" in job.error, job.error
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
