"""Found reviewing the fourteenth session's changes (2026-12-04).

* The audit trail's record ids were made opaque in the API's list and both exports (``audit.exports.shown_id``), but
  the console's audit page still named each row by the table's own sequence (``<tr id="event-{{ e.pk }}">``): an
  admin reading the page's source read the gaps between their records, as before the fix.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from audit.exports import shown_id
from audit.models import AuditEvent
from tests.api_helpers import sign_in_fail

pytest_plugins = ["tests.api_fixtures"]


@pytest.mark.django_db
def test_the_console_audit_page_names_no_record_by_the_shared_sequence(world):
    """The attack of ``test_attack_demo14``'s trail ids, on the console: the admin searches, an address of another
    tenant fails to sign in, the admin searches again, and reads the audit page's source."""
    admin = world.client("admin")
    for query in ("before", "after"):
        admin.post("/api/v1/search/", {"query": query}, format="json")
        if query == "before":
            sign_in_fail(world.actors["other_tenant"].membership.user.email, "203.0.113.15")
    browser = Client()
    browser.force_login(world.actors["admin"].membership.user)
    page = browser.get("/audit/")
    assert page.status_code == 200, page.content[:300]
    html = page.content.decode()
    mine = list(AuditEvent.objects.filter(tenant_id=world.tenant.pk).order_by("-created_at", "-pk")[:50])
    assert len(mine) >= 2
    # Each row is named, and by the id the API and the exports give it -- never by the row's own number.
    named = re.findall(r'<tr id="event-([^"]+)"', html)
    assert named and set(named) <= {shown_id(event) for event in mine}, named
    numbers = {str(pk) for pk in AuditEvent.objects.values_list("pk", flat=True)}
    assert not set(named) & numbers
    for event in mine:
        assert f'id="event-{event.pk}"' not in html
