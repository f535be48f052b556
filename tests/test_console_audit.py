"""The console's audit page (issue 27): records in sentences, titles only where the viewing admin may
read them, and filters by document title and by member -- the title filter searching only titles the
admin may read, so it is no oracle for a hidden one."""

from __future__ import annotations

import html
import re

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Section
from kb.services import document_delete, document_set_access, section_set_access
from tests.api_helpers import POLICY_SECTIONS, console_client, make_document

pytestmark = pytest.mark.django_db

VAULT = [("root", None, "", AccessLevel.RESTRICTED, [], "Vault preamble."),
         ("keys", "root", "Key ceremony", AccessLevel.RESTRICTED, [], "Key material.")]


@pytest.fixture
def trail():
    """A restricted admin changes a restricted section of *Handbook*, the default of the all-restricted
    *Merger plans*, and deletes *Old notes*; a second admin has internal clearance only."""
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    high = membership_create(tenant=tenant, email="high@acme.test", role="admin", clearance="restricted",
                             group_slugs=["security-team"])
    low = membership_create(tenant=tenant, email="low@acme.test", role="admin", clearance="internal")
    handbook = make_document(tenant, title="Handbook", sections=POLICY_SECTIONS)
    merger = make_document(tenant, title="Merger plans", sections=VAULT, default=AccessLevel.RESTRICTED)
    old = make_document(tenant, title="Old notes", sections=POLICY_SECTIONS[:1])
    incident = Section.objects.get(pk=handbook.section_ids["incident"])
    section_set_access(actor=high, section=incident, access_level="confidential", groups=None)
    document_set_access(actor=high, document=merger, access_level="restricted", groups=["security-team"])
    document_delete(document=old, actor=high)
    return {"high": high, "low": low}


def _page(viewer, **params) -> str:
    response = console_client(viewer).get("/audit/", params)
    assert response.status_code == 200
    body = response.content.decode()
    return html.unescape(re.sub(r"<[^>]+>", "", body.split("<main", 1)[1]))


def test_an_admin_reads_sentences_with_the_titles_they_may_read(trail):
    said = _page(trail["high"])
    assert ("high@acme.test changed Incident response in Handbook from restricted (groups: security-team) "
            "to confidential (groups: security-team)") in said
    assert ("high@acme.test changed the default access of Merger plans from restricted to restricted "
            "(groups: security-team)") in said
    assert "high@acme.test deleted a document" in said
    assert "Technical details" in said  # the record itself, folded away, as JSON
    assert '{"after": {"effective": {"groups": ["security-team"], "level": "confidential"}' in said


def test_an_admin_below_a_section_sees_no_title_and_the_title_filter_does_not_find_it(trail):
    low = trail["low"]
    said = _page(low)
    assert "high@acme.test changed a section you cannot read in Handbook" in said
    assert "high@acme.test changed the default access of a document you cannot read" in said
    for hidden in ("Incident response", "Merger", "Key ceremony", "Old notes"):
        assert hidden not in said
    # The title filter searches only what the admin may read: a hidden title matches nothing ...
    assert "No records match" in _page(low, title="Merger")
    assert "No records match" in _page(low, title="plans")
    # ... while the admin who may read it finds its record, and a readable title finds its own.
    assert "changed the default access of Merger plans" in _page(trail["high"], title="merger")
    handbook = _page(low, title="handbook")
    assert "changed a section you cannot read in Handbook" in handbook and "Merger" not in handbook
    assert "default access of" not in handbook


def test_the_member_filter_is_a_choice_of_the_tenants_members_and_the_id_filter_still_works(trail):
    high, low = trail["high"], trail["low"]
    body = console_client(low).get("/audit/").content.decode()
    options = re.findall(r'<option value="(\d+)"[^>]*>([^<]+)</option>', body)
    assert {email for _, email in options} == {"high@acme.test", "low@acme.test"}
    assert "No records match" in _page(low, member=low.pk)
    assert "deleted a document" in _page(low, member=high.pk)
    # The id filter of a document page's "who retrieved this" keeps working, and names the document.
    handbook = Section.objects.filter(title="Incident response").get().document_id
    only = _page(low, document=str(handbook))
    assert "Only the records of Handbook" in only and "changed a section you cannot read" in only
    assert "deleted a document" not in only


def test_a_title_filter_that_cannot_be_read_is_said_not_a_500(trail):
    for title in ("a\x00b", "x" * 201):
        response = console_client(trail["low"]).get("/audit/", {"title": title})
        assert response.status_code == 200
        assert 'role="alert"' in response.content.decode() and "No records match" in response.content.decode()
