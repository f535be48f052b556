"""Review of the 2026-12-04 fixes, attacked (review 12): what they missed.

- The console's index build report showed a failed child's error in full, unscreened, to any admin who may
  see the document -- not only to its uploader and admins who may read every section (``error_in_full``), as
  every other place that shows a job's error does.
- A local Git repository checked by ``sources.listing._local_repo`` read objects through an alternate's own
  alternates, and through links inside an alternate's object folder, neither of which was checked.
"""

from __future__ import annotations

import os
import uuid

import pytest

from accounts.models import Tenant
from accounts.policy import AccessLevel
from accounts.services import tenant_create
from kb.models import IngestionJob

pytestmark = pytest.mark.django_db


def test_a_builds_failure_is_quoted_in_full_only_to_who_may_read_every_section():
    """The build report quoted a failed child's error in full to an admin who sees the document but not its
    restricted section -- the error may quote any line of it -- and unscreened. Now it is shown as the job
    pages show it (``kb.serializers.error_for`` under ``error_in_full``): the line and the kind of problem."""
    from ingestion.chunking.config import ChunkingConfig
    from kb.index_versions import index_version_create
    from tests.api_helpers import console_client, make_document, member_with_token

    tenant = tenant_create(slug=f"build12-{uuid.uuid4().hex[:6]}", name="Build Co")
    try:
        low, _ = member_with_token(tenant, f"low@{tenant.slug}.test", "admin", "internal")
        high, _ = member_with_token(tenant, f"high@{tenant.slug}.test", "admin", "restricted")
        document = make_document(tenant, title="Handbook", default=AccessLevel.INTERNAL, sections=[
            ("root", None, "Handbook", AccessLevel.INTERNAL, [], "Ordinary words."),
            ("merger", "root", "Merger", AccessLevel.RESTRICTED, [], "The codename is Bluebird."),
        ])
        version, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=90), name="small")
        build = IngestionJob.objects.create(tenant=tenant, kind=IngestionJob.Kind.REINDEX, index_version=version,
                                            status=IngestionJob.Status.SUCCEEDED, total=1, done=1)
        IngestionJob.objects.create(tenant=tenant, document=document, batch=build, index_version=version,
                                    status=IngestionJob.Status.FAILED,
                                    error="line 4: a malformed access marker 'codename Bluebird'")
        body = console_client(low).get(f"/versions/{version.short_id}/").content.decode()
        assert "Handbook" in body and "line 4: a malformed access marker" in body, body  # they see the document
        assert "Bluebird" not in body
        full = console_client(high).get(f"/versions/{version.short_id}/").content.decode()
        assert "malformed access marker &#x27;codename Bluebird&#x27;" in full, full  # may read every section
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
