"""Found attacking the demo, 2026-12-04 (fourteenth session).

* The audit trail's record ids were the table's own sequence, shared by every tenant: an admin of one tenant read
  off how many records every other tenant's activity made between two of their own (searches, reads, sign-ins),
  and a failed sign-in (or a password reset request) makes one record in each tenant of the address -- so the gap
  told them how many tenants an address belongs to, none of them theirs.
"""

from __future__ import annotations

import json

import pytest

from accounts.services import membership_create, tenant_create
from audit.models import AuditEvent
from tests.api_helpers import sign_in_fail

pytest_plugins = ["tests.api_fixtures"]


def _shown(world) -> dict[str, dict]:
    """The admin's trail as the API's list, the JSON lines export and the CSV export show it: id -> record."""
    client = world.client("admin")
    listed = client.get("/api/v1/audit/", {"limit": 500})
    assert listed.status_code == 200, listed.content
    records = listed.json()["results"]
    lines = b"".join(client.get("/api/v1/audit/export/", {"file": "jsonl"}).streaming_content).decode()
    exported = [json.loads(line) for line in lines.splitlines()]
    rows = b"".join(client.get("/api/v1/audit/export/", {"file": "csv"}).streaming_content).decode().splitlines()
    assert rows[0].startswith("id,")
    # The same record under the same id in the three answers.
    assert ([str(r["id"]) for r in records] == [str(r["id"]) for r in exported]
            == [row.split(",", 1)[0] for row in rows[1:]])
    return {str(r["id"]): r for r in records}


@pytest.mark.django_db
def test_a_tenants_audit_ids_count_nothing_of_another_tenants_records(world):
    """The attack: the admin of acme searches (a record they read back), an address fails to sign in, the admin
    searches again. The ids of their two searches were the shared sequence's, 3 apart for an address of two other
    tenants (a record in each) and 2 apart for an address no tenant knows (one record of no tenant)."""
    initech = tenant_create(slug="initech", name="Initech")
    for tenant in (world.other, initech):
        membership_create(tenant=tenant, email="victim@elsewhere.example", role="viewer", clearance="public")
    admin = world.client("admin")
    for email in ("victim@elsewhere.example", "nobody@nowhere.example"):
        admin.post("/api/v1/search/", {"query": "before"}, format="json")
        sign_in_fail(email, "203.0.113.14")
        admin.post("/api/v1/search/", {"query": "after"}, format="json")
    assert AuditEvent.objects.filter(action="sign_in.failed", tenant_id__in=[world.other.pk, initech.pk]).count() == 2

    shown = _shown(world)
    theirs = set(_shown_as(world, "other_tenant"))
    rows = {event.pk: event for event in AuditEvent.objects.filter(tenant_id=world.tenant.pk)}
    assert len(shown) == len(rows) >= 4  # every record once: the ids are the tenant's own, never two the same
    # No id shown is the shared sequence's number, in any spelling: the gaps between them counted the others.
    numbers = {str(pk) for pk in AuditEvent.objects.values_list("pk", flat=True)}
    assert not set(shown) & numbers
    assert not set(shown) & theirs  # and another tenant's records are not named by the same ids
    searches = [r for r in shown.values() if r["action"] == "search"]
    assert len(searches) == 4 and all(str(r["id"]) not in numbers for r in searches)


def _shown_as(world, actor: str) -> list:
    listed = world.client(actor).get("/api/v1/audit/", {"limit": 500})
    assert listed.status_code == 200, listed.content
    return [str(r["id"]) for r in listed.json()["results"]]
