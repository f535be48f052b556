""""Search as another member" never shows an admin more than the admin may read (found by attacking the demo:
an internal-clearance admin searching as a restricted member read restricted text)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounts.policy import AccessLevel, Reader, bounded_reader, can_read
from accounts.services import group_create, membership_create, tenant_create
from tests.api_helpers import POLICY_SECTIONS, console_client, make_document

SECRET = "Only the security team."
RESTRICTED = "Page the on-call engineer."


def _search(client, as_member, query="security team on-call engineer") -> str:
    response = client.get("/search/", {
        "query": query, "mode": "keyword", "expand": "parent", "expand_level": "leaf",
        "top_k": 20, "max_contexts": 10, "context_token_budget": 5000, "as_member": as_member.pk,
    })
    assert response.status_code == 200
    return response.content.decode().replace("<mark>", "").replace("</mark>", "")  # the highlighted words


@pytest.mark.django_db
def test_an_admin_sees_through_another_members_eyes_no_more_than_they_may_read():
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    low_admin = membership_create(tenant=tenant, email="low@acme.test", role="admin", clearance="internal")
    insider = membership_create(tenant=tenant, email="sec@acme.test", role="viewer", clearance="restricted",
                                group_slugs=["security-team"])
    high_admin = membership_create(tenant=tenant, email="high@acme.test", role="admin", clearance="restricted",
                                   group_slugs=["security-team"])
    make_document(tenant, sections=POLICY_SECTIONS)
    # The insider's own answer holds the restricted text (so the search does find it) ...
    assert SECRET in _search(console_client(high_admin), insider)
    # ... but an admin who may not read it does not get it by searching as the insider.
    page = _search(console_client(low_admin), insider)
    assert SECRET not in page and RESTRICTED not in page
    assert "Only what both you and sec@acme.test may read" in page


SHARED = "Runbook shared by the two teams."
ONLY_A = "Runbook notes for team alpha alone."
TWO_GROUPS_SECTIONS = [
    ("root", None, "", AccessLevel.INTERNAL, [], "Preamble for everyone."),
    ("shared", "root", "Shared runbook", AccessLevel.CONFIDENTIAL, ["alpha", "beta"], SHARED),
    ("alpha", "root", "Alpha runbook", AccessLevel.CONFIDENTIAL, ["alpha"], ONLY_A),
]


@pytest.mark.django_db
def test_the_console_pages_agree_on_a_section_both_may_read_through_different_groups():
    """A section open to groups {alpha, beta}, the member in alpha, the admin in beta: each may read it,
    so search-as, the document as the member and who-can-read all show it -- and none shows the
    section open to alpha alone, which the member reads and the admin may not."""
    tenant = tenant_create(slug="two-groups", name="Two groups")
    group_create(tenant=tenant, slug="alpha")
    group_create(tenant=tenant, slug="beta")
    admin = membership_create(tenant=tenant, email="admin@two.test", role="admin", clearance="restricted",
                              group_slugs=["beta"])
    member = membership_create(tenant=tenant, email="member@two.test", role="viewer", clearance="restricted",
                               group_slugs=["alpha"])
    document = make_document(tenant, title="Runbooks", sections=TWO_GROUPS_SECTIONS)
    client = console_client(admin)

    found = _search(client, member, query="runbook")
    assert SHARED in found and ONLY_A not in found

    as_member = client.get(f"/documents/{document.pk}/as/", {"member": member.pk})
    assert as_member.status_code == 200
    rows = {row["data-order"]: row for row in _rows(as_member.content.decode())}
    shared, alpha = rows["1"], rows["2"]
    assert "Shared runbook" in shared["html"] and SHARED in shared["html"] and shared["data-readable"] == "yes"
    assert "Alpha runbook" not in alpha["html"] and ONLY_A not in alpha["html"] and alpha["data-readable"] == "yes"
    assert "beyond your own access" in alpha["html"]

    readers = client.get(f"/sections/{document.section_ids['shared']}/readers/").content.decode()
    can_read_part = readers.split('id="readers"')[1].split("Cannot read")[0]
    assert "member@two.test" in can_read_part and "admin@two.test" in can_read_part
    assert "Shared runbook" in readers


def _rows(page: str) -> list[dict]:
    """The as-member table's rows: their data attributes and their markup."""
    out = []
    for match in re.finditer(r'<tr class="[^"]*" data-order="(\d+)" data-readable="(\w+)">(.*?)</tr>', page, re.S):
        out.append({"data-order": match[1], "data-readable": match[2], "html": match[3]})
    assert out, "the as-member table has rows"
    return out


readers = st.builds(Reader, st.just(1), st.integers(0, 3), st.frozensets(st.integers(1, 4), max_size=3))


@given(readers, readers, st.integers(0, 3), st.frozensets(st.integers(1, 4), max_size=3))
def test_the_bounded_reader_reads_exactly_what_both_read(first, second, level, groups):
    both = can_read(first, level=level, group_ids=groups) and can_read(second, level=level, group_ids=groups)
    assert can_read(bounded_reader(first, second), level=level, group_ids=groups) is both
