""""Search as another member" never shows an admin more than the admin may read (found by attacking the demo:
an internal-clearance admin searching as a restricted member read restricted text)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounts.policy import Reader, can_read, common_reader
from accounts.services import group_create, membership_create, tenant_create
from tests.api_helpers import POLICY_SECTIONS, console_client, make_document

SECRET = "Only the security team."
RESTRICTED = "Page the on-call engineer."


def _search(client, as_member) -> str:
    response = client.get("/search/", {
        "query": "security team on-call engineer", "mode": "keyword", "expand": "parent", "expand_level": "leaf",
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


readers = st.builds(Reader, st.just(1), st.integers(0, 3), st.frozensets(st.integers(1, 4), max_size=3))


@given(readers, readers, st.integers(0, 3), st.frozensets(st.integers(1, 4), max_size=3))
def test_the_common_reader_reads_only_what_both_read(first, second, level, groups):
    if can_read(common_reader(first, second), level=level, group_ids=groups):
        assert can_read(first, level=level, group_ids=groups)
        assert can_read(second, level=level, group_ids=groups)
