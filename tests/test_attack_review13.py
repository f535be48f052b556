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


def _two_admins_and_a_handbook(tenant, content: str):
    """A restricted admin in the security team and an internal admin (with API tokens) of ``tenant``, and
    ``content`` ingested as the internal "Handbook" by the first: (that admin, the internal admin's key, the document)."""
    from tests.api_helpers import member_with_token

    group_create(tenant=tenant, slug="security-team")
    high, _ = member_with_token(tenant, f"high@{tenant.slug}.test", "admin", "restricted", ["security-team"])
    _, low_key = member_with_token(tenant, f"low@{tenant.slug}.test", "admin", "internal")
    document, job = document_create(tenant=tenant, created_by=high, upload=Upload(
        content=content.encode(), title="Handbook", content_type="text/markdown", access_level="internal"))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    return high, low_key, document


def _replaced_through_the_api(api, document, text: str) -> dict:
    """PUT new Markdown content for ``document`` as ``api``'s token, wait for its job, and return the job's answer."""
    answer = api.put(f"/api/v1/documents/{document.pk}/", {"title": "Handbook", "content": text,
                                                            "content_type": "text/markdown"}, format="json")
    assert answer.status_code == 200, answer.content
    wait_for_jobs([answer.json()["job"]["id"]])
    return api.get(f"/api/v1/jobs/{answer.json()['job']['id']}/").json()


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
    tenant = tenant_create(slug=f"carry13-{uuid.uuid4().hex[:6]}", name="Carry Co")
    try:
        high, low_key, document = _two_admins_and_a_handbook(tenant, HANDBOOK)
        salaries = Section.objects.get(document=document, title="Salaries")
        section_set_access(actor=high, section=salaries, access_level="restricted", groups=["security-team"])
        wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))

        from rest_framework.test import APIClient

        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {low_key}")

        def replace(text: str) -> dict:
            return _replaced_through_the_api(api, document, text)

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


@pytest.mark.django_db
def test_no_answer_carrying_what_a_member_may_read_may_be_kept_by_a_cache():
    """No page, API answer, MCP result or export said ``Cache-Control``: the browser kept the restricted document
    page (back after signing out on a shared machine) and any cache on the way could. Now every answer that says
    nothing of caching is ``no-store`` (``bulkhead.middleware.NoStoreMiddleware``); the sign-in page, the API's
    errors and an anonymous 404 too."""
    from django.test import Client
    from rest_framework.test import APIClient

    from accounts.policy import AccessLevel
    from tests.api_helpers import console_client, make_document, member_with_token

    tenant = tenant_create(slug=f"nostore13-{uuid.uuid4().hex[:6]}", name="No store")
    admin, key = member_with_token(tenant, f"admin@{tenant.slug}.test", "admin", "restricted")
    document = make_document(tenant, title="Nightjar", default=AccessLevel.RESTRICTED, sections=[
        ("root", None, "Nightjar", AccessLevel.RESTRICTED, [], "The codename is Osprey."),
    ])
    section = document.section_ids["root"]
    console = console_client(admin)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    answers = {
        "document page": console.get(f"/documents/{document.pk}/"),
        "search page": console.get("/search/", {"q": "Osprey"}),
        "audit export (console)": console.get("/audit/", {"export": "csv"}),
        "API document": api.get(f"/api/v1/documents/{document.pk}/"),
        "API sections": api.get(f"/api/v1/documents/{document.pk}/sections/"),
        "API section readers": api.get(f"/api/v1/sections/{section}/readers/"),
        "API search": api.post("/api/v1/search/", {"query": "Osprey", "mode": "keyword"}, format="json"),
        "API audit export": api.get("/api/v1/audit/export/", {"file": "jsonl"}),
        "API error": api.get("/api/v1/documents/not-an-id/"),
        "sign-in page": Client().get("/sign-in/"),
    }
    assert answers["document page"].status_code == 200 and b"Osprey" in answers["document page"].content
    assert all(answers[n].status_code == 200 for n in answers if n not in ("API error",)), {
        n: a.status_code for n, a in answers.items()}
    for name, answer in answers.items():
        directives = {d.strip() for d in answer.get("Cache-Control", "").split(",")}
        assert {"no-store", "private"} <= directives, (name, answer.status_code, answer.get("Cache-Control"))


@pytest.mark.django_db
def test_a_tenant_that_takes_a_slug_given_up_reads_no_folder_left_for_the_one_before(settings):
    """The known gap of 2026-12-04: a tenant's folders are ``<root>/<slug>``, so a tenant deleted (or renamed) left
    its files there, and a new tenant given the same slug read them with its first folder source. Now the database
    records every slug a tenant gave up (a trigger on ``accounts_tenant``: deletion and rename alike), and a tenant
    holding a slug another tenant held before reads no folder -- at save and at each listing -- until the operator,
    having moved the folders away, releases the slug (``kb_tenant release-folder``). The application's login cannot
    read or change those records."""
    from django.core.management import call_command
    from django.db import ProgrammingError, connection, transaction

    from accounts.errors import ApplicationError
    from accounts.services import membership_create
    from sources.models import Source, SourceSync
    from sources.services import source_create, sync_run
    from tests.sources_helpers import tenant_folder, write

    def admin_of(tenant):
        return membership_create(tenant=tenant, email=f"admin@{tenant.slug}.test", role="admin", clearance="restricted")

    def sync(source) -> SourceSync:
        run = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
        sync_run(str(run.pk))
        return SourceSync.objects.get(pk=run.pk)

    slug = f"reused13-{uuid.uuid4().hex[:6]}"
    first = tenant_create(slug=slug, name="First")
    wiki = tenant_folder(first) / "wiki"
    write(wiki, {"payroll.md": "# Payroll\n\nThe first tenant's wages, heron.\n"})
    assert source_create(actor=admin_of(first), tenant=first, kind="folder", name="wiki", path=str(wiki)).pk
    Tenant.objects.filter(pk=first.pk).delete()  # the operator deletes it; its folder stays

    second = tenant_create(slug=slug, name="Second")
    admin = admin_of(second)
    for kind, field in (("folder", "path"), ("git", "url")):
        with pytest.raises(ApplicationError, match=f"release-folder {slug}") as refused:
            source_create(actor=admin, tenant=second, kind=kind, name=f"inherited-{kind}", **{field: str(wiki)})
        assert refused.value.details == {"field": field}
    saved = Source.objects.create(tenant=second, name="saved", kind="folder", path=str(wiki))  # saved before the rule
    run = sync(saved)
    assert run.status == "failed" and "release-folder" in run.error, run.error
    from kb.models import Document

    assert not Document.objects.filter(tenant=second).exists()

    # A rename gives the old slug up as well; renamed back, a tenant reads its own folders again.
    renamed = tenant_create(slug=f"{slug}-r", name="Renamed")
    Tenant.objects.filter(pk=renamed.pk).update(slug=f"{slug}-moved")
    taker = tenant_create(slug=f"{slug}-r", name="Taker")
    write(tenant_folder(taker) / "notes", {"a.md": "# A\n\nalpha\n"})
    with pytest.raises(ApplicationError, match="release-folder"):
        source_create(actor=admin_of(taker), tenant=taker, kind="folder", name="n", path=str(tenant_folder(taker) / "notes"))
    Tenant.objects.filter(pk=taker.pk).delete()
    Tenant.objects.filter(pk=renamed.pk).update(slug=f"{slug}-r")
    renamed.refresh_from_db()
    # ... but the slug was also given up by the taker, another tenant: still refused until released.
    with pytest.raises(ApplicationError, match="release-folder"):
        source_create(actor=admin_of(renamed), tenant=renamed, kind="folder", name="n",
                      path=str(tenant_folder(renamed) / "notes"))

    # The application's login neither reads nor forgets the records (it only asks the one question).
    from tests.test_tenant_wall import application_role

    with transaction.atomic(), application_role(), connection.cursor() as cursor:
        with pytest.raises(ProgrammingError, match="permission denied"), transaction.atomic():
            cursor.execute("DELETE FROM accounts_retiredtenantslug")
        cursor.execute("SELECT bulkhead_tenant_slug_inherited(%s)", [slug])
        assert cursor.fetchone()[0] is True

    # The operator moved the folder away and releases the slug: the tenant holding it reads its folders.
    wiki.rename(wiki.with_name(f"moved-{uuid.uuid4().hex[:6]}"))
    write(wiki, {"handbook.md": "# Handbook\n\nThe second tenant's own page.\n"})
    call_command("kb_tenant", "release-folder", slug)
    source = source_create(actor=admin, tenant=second, kind="folder", name="own", path=str(wiki))
    assert sync(source).status == "succeeded"


NESTED = """# Handbook
Welcome aboard, everyone.

## Salaries <!-- access: restricted; groups: security-team -->
The chief executive earns a great deal.

### Bands
Band A to band F, published.

## Holidays
Twenty-five days a year.
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_replacement_never_tells_its_uploader_an_ancestor_heading_they_may_not_read(celery_worker):
    """Found reviewing the fix above (review 13): the uploader was checked against the override sections only, but
    an override's heading chain -- compared with the new content's, and quoted when none matches -- holds its
    ancestors' titles too. An override may widen a section past its parent (``Bands``, internal, under the
    restricted ``Salaries``): the internal admin may read ``Bands`` -- its heading path leaves ``Salaries`` out --
    so the check passed, and the job failed quoting 'Handbook > Salaries > Bands' to them; new content holding
    "## Salaries / ### Bands" went through (an oracle of the restricted heading). Now every section on an
    override's chain must be readable by the uploader, else the job fails naming none, whatever the content."""
    from rest_framework.test import APIClient

    tenant = tenant_create(slug=f"chain13-{uuid.uuid4().hex[:6]}", name="Chain Co")
    try:
        high, low_key, document = _two_admins_and_a_handbook(tenant, NESTED)
        bands = Section.objects.get(document=document, title="Bands")
        section_set_access(actor=high, section=bands, access_level="internal", groups=[])
        wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))
        bands.refresh_from_db()
        assert bands.access_level == 1 and not bands.access_groups  # internal: the low admin reads it

        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {low_key}")
        sections = api.get(f"/api/v1/documents/{document.pk}/sections/").content
        assert b"Bands" in sections and b"Salaries" not in sections  # what the low admin is shown

        def replace(text: str) -> dict:
            return _replaced_through_the_api(api, document, text)

        without = replace("# Handbook\nWelcome aboard, version two.\n\n## Holidays\nTwenty-six days.\n")
        assert without["status"] == "failed", without
        assert "Salaries" not in without["error"], without["error"]
        guessed = replace("# Handbook\nWelcome.\n\n## Salaries\nNo comment.\n\n### Bands\nA to F.\n\n## Holidays\nSame.\n")
        assert guessed["status"] == "failed" and guessed["error"] == without["error"], (guessed, without)
        assert "Salaries" not in api.get(f"/api/v1/documents/{document.pk}/").content.decode()

        # Who may read the whole chain is told which section, as before.
        _, job = document_replace(document=document, created_by=high, upload=Upload(
            content=b"# Handbook\nWelcome.\n", title="Handbook", content_type="text/markdown"))
        (job,) = wait_for_jobs([job.id])
        assert job.status == "failed" and "'Handbook > Salaries > Bands'" in job.error, job.error
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()


@pytest.mark.django_db
def test_a_page_of_syncs_reads_the_member_and_the_documents_once():
    """Found reviewing review 13's source rule: each sync of ``GET /api/v1/sources/{id}/syncs/`` read the admin's
    reader, the tenant's groups and the documents its errors and skips name again, twice (errors, skips): about
    six queries a sync, 297 for a page of 40, where the list read one (its ingestion counts). Now a page's rows
    are decided at once (``sources.selectors.syncs_rows_shown``): the queries grow by one a sync, as before the
    rule, for an admin who reads everything and one who does not; and the sources list reads the member once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from accounts.services import api_token_create, membership_create
    from sources import access
    from sources.models import Source, SourceSync

    tenant = tenant_create(slug=f"pages13-{uuid.uuid4().hex[:6]}", name="Pages")
    group_create(tenant=tenant, slug="finance")
    top = membership_create(tenant=tenant, email="top@pages.test", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    low = membership_create(tenant=tenant, email="low@pages.test", role="admin", clearance="internal")
    source = Source.objects.create(tenant=tenant, name="wiki", kind="folder", path="/nowhere")
    rows = [{"path": f"page-{i}.md", "error": "unreadable", "access": access.item_access((1, ()), document_id=uuid.uuid4())}
            for i in range(20)]

    def queries(member, count: int) -> tuple[int, int]:
        SourceSync.objects.filter(source__tenant=tenant).delete()
        Source.objects.filter(tenant=tenant).exclude(pk=source.pk).delete()
        for n in range(count):
            SourceSync.objects.create(tenant=tenant, source=source, errors=rows, skips=rows, status="succeeded")
            other = Source.objects.create(tenant=tenant, name=f"other-{n}", kind="folder", path="/nowhere")
            SourceSync.objects.create(tenant=tenant, source=other, errors=rows, skips=rows, status="succeeded")
        _, key = api_token_create(membership=member, name=f"k{count}")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        with CaptureQueriesContext(connection) as syncs:
            answer = api.get(f"/api/v1/sources/{source.pk}/syncs/")
        assert answer.status_code == 200 and len(answer.json()["results"]) == count
        # The documents are gone: below the top, none of their paths; the top admin sees every row.
        assert all(r["errors_hidden"] == (0 if member == top else 20) for r in answer.json()["results"])
        with CaptureQueriesContext(connection) as sources:
            assert api.get("/api/v1/sources/").status_code == 200
        return len(syncs.captured_queries), len(sources.captured_queries)

    for member in (top, low):
        few, many = queries(member, 2), queries(member, 8)
        # One a sync (its ingestion counts), and the connection's set-up, which varies by one between requests.
        assert many[0] - few[0] <= 6 + 2, (member.clearance, few, many)
        # A source's row reads its last sync, documents, groups and ingestion counts (and, below the top, the
        # documents its rows name): five a source, not the member again.
        assert many[1] - few[1] <= 6 * 5 + 2, (member.clearance, few, many)
