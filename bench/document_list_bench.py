"""What a documents list costs a reader who may read part of each document (docs/benchmarks.md, "Documents list").

Not a test: it prints the median and p95 of each request and asserts nothing::

    BULKHEAD_DATA_DIR=.data/list-bench .venv/bin/python manage.py migrate
    BULKHEAD_DATA_DIR=.data/list-bench .venv/bin/python -m bench.document_list_bench --documents 5000 --sections 20

It builds a throwaway tenant of ``--documents`` documents of ``--sections`` sections each (every other section above
the reader, an internal viewer; ``bench.change_times_bench``'s rows), each with the upload job that made it, one in
ten with a later re-derivation job that failed (the document ``failed``), and a title taken from its content: an H1
the reader may read in half of them, one above the reader in the other half. It then times, as the reader and as the
tenant's admin, the first page of the API's documents list (``GET /api/v1/documents/``, 25 rows), the same filtered
by status (``?status=failed``), and the console's documents page (``/documents/``), as is and filtered by a word of
the titles sorted by title (``?q=Handbook&sort=title``), each the whole request
through Django's test client (no network). The same script runs on code from before the status and the title were
decided per reader (it fills only the columns the code has), so a before/after pair is two runs of it on the same
machine. The tenant is deleted afterwards.
"""

from __future__ import annotations

import argparse
import uuid

from bench.change_times_bench import _build, _setup
from bench.timing import p50_p95


def _jobs_and_titles(tenant, reader) -> None:
    from kb.models import Document, IngestionJob, Section

    fields = {f.name for f in IngestionJob._meta.get_fields()}
    documents = list(Document.objects.filter(tenant=tenant).order_by("pk"))
    jobs = []
    for n, document in enumerate(documents):
        upload = dict(cause="upload") if "cause" in fields else {}
        jobs.append(IngestionJob(tenant=tenant, document=document, kind=IngestionJob.Kind.DOCUMENT,
                                 status=IngestionJob.Status.SUCCEEDED, created_by=None, **upload))
        if n % 10 == 0:
            cause = dict(cause="policy_change") if "cause" in fields else {}
            jobs.append(IngestionJob(tenant=tenant, document=document, kind=IngestionJob.Kind.DOCUMENT,
                                     status=IngestionJob.Status.FAILED, error="re-derivation failed",
                                     stats={"rederive": True}, **cause))
    IngestionJob.objects.bulk_create(jobs, batch_size=5000)
    from django.utils import timezone

    IngestionJob.objects.filter(tenant=tenant).update(started_at=timezone.now(), finished_at=timezone.now())
    IngestionJob.objects.filter(tenant=tenant, stats__contains={"rederive": True}).update(
        finished_at=timezone.now() + timezone.timedelta(seconds=1))
    Document.objects.filter(pk__in=[d.pk for d in documents[::10]]).update(status=Document.Status.FAILED,
                                                                           error="re-derivation failed")
    per_reader = "content_title" in {f.name for f in Document._meta.get_fields()}
    section_fields = {f.name for f in Section._meta.get_fields()}
    for n, document in enumerate(documents):
        order = 0 if n % 2 == 0 else 1  # section 0 is internal (readable), 1 restricted (above the reader)
        title = f"Handbook {n}"
        candidate = dict(title_candidate=title) if "title_candidate" in section_fields else {}
        Section.objects.filter(document=document, order=order).update(title=title, **candidate)
        if per_reader:
            section = Section.objects.get(document=document, order=order)
            Document.objects.filter(pk=document.pk).update(content_title=title, title_section=section.pk)
        else:  # the one answer for every reader: shown only when every reader of any section reads the heading
            Document.objects.filter(pk=document.pk).update(
                title=title if order == 0 else "untitled", metadata={"content_title": title})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    _setup()
    from django.db import connections
    from django.test import Client
    from rest_framework.test import APIClient

    from accounts.services import api_token_create, membership_create
    from accounts.tenancy import acting_tenant, owner_alias
    from console.membership import SESSION_KEY

    tenant, reader = _build(args.documents, args.sections)
    try:
        _jobs_and_titles(tenant, reader)
        admin = membership_create(tenant=tenant, email=f"admin@{tenant.slug}.invalid", role="admin",
                                  clearance="restricted")
        with connections[owner_alias()].cursor() as cursor:
            cursor.execute("ANALYZE kb_document, kb_section, kb_ingestionjob")
        print(f"{args.documents} documents x {args.sections} sections, {args.repeat} runs each (p50 / p95 ms)")
        for who, member in (("internal viewer", reader), ("admin", admin)):
            with acting_tenant(tenant.pk):  # a request leaves no tenant active
                _, key = api_token_create(membership=member, name=f"bench {uuid.uuid4().hex[:6]}")
            api = APIClient()
            api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
            console = Client()
            console.force_login(member.user)
            session = console.session
            session[SESSION_KEY] = member.pk
            session.save()

            def get(client, url):
                response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)
                return response

            cases = {
                "API documents list, first page": (api, "/api/v1/documents/"),
                "API documents list, ?status=failed": (api, "/api/v1/documents/?status=failed"),
                "console documents page": (console, "/documents/"),
                "console documents page, ?q=Handbook&sort=title": (console, "/documents/?q=Handbook&sort=title"),
            }
            for name, (client, url) in cases.items():
                def run(client=client, url=url):
                    return get(client, url)

                run()  # warm
                p50, p95 = p50_p95(run, args.repeat)
                print(f"  {who}, {name}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    finally:
        with acting_tenant(tenant.pk):
            tenant.delete()


if __name__ == "__main__":
    main()
