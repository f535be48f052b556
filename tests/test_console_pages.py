"""The console's long lists and long pages (issue #14), for what they show, not how fast: the documents
list walked by its seek links in every sort (every visible document once, in the selector's order,
forwards and back; ``?page=`` by offset agrees; a forged cursor is the first page); members and
tokens paged; a document's section rows without their access forms, each fetched on demand."""

from __future__ import annotations

import base64
import json
import re

import pytest

from accounts.policy import AccessLevel
from accounts.services import api_token_create, group_create, membership_create, tenant_create
from console.views import documents as documents_view
from console.views import members as members_view
from kb.models import Document
from kb.selectors import document_list
from tests import factories
from tests.api_helpers import POLICY_SECTIONS, console_client, make_document

pytestmark = pytest.mark.django_db

ROW = re.compile(r'<td><a href="/documents/([0-9a-f-]{36})/">')
NEXT = re.compile(r'<a href="\?([^"]*)" id="next-page">')
PREVIOUS = re.compile(r'<a href="\?([^"]*)" id="previous-page">')


@pytest.fixture
def listed(monkeypatch):
    """31 documents -- ties in title and size, some the viewer may not see, some without sections --
    and pages of 4 with a count capped at 20."""
    monkeypatch.setattr(documents_view, "PAGE_SIZE", 4)
    monkeypatch.setattr(documents_view, "COUNT_CAP", 20)
    tenant = tenant_create(slug="acme", name="Acme")
    viewer = membership_create(tenant=tenant, email="viewer@acme.test", role="viewer", clearance="internal")
    levels = [AccessLevel.PUBLIC, AccessLevel.INTERNAL, AccessLevel.RESTRICTED]
    for i in range(31):
        level = levels[i % 3]
        document = factories.document(tenant, title=f"Doc {i % 5}", size_bytes=100 * (i % 4), access_level=level,
                                      status=Document.Status.READY if i % 2 else Document.Status.PENDING)
        if i % 7:  # the rest have no sections: their default policy decides
            factories.section(document, key="0", order=0, title="", kind="document", start=0, end=11,
                              body_spans=[[0, 11]], access_level=level, access_groups=[])
    return viewer


def _ids(body: str) -> list[str]:
    return ROW.findall(body)


def _walk(client, first: str) -> tuple[list[list[str]], list[str]]:
    """The pages from ``first`` by "Older" links, then back by "Newer" links (their ids each)."""
    pages, bodies, url = [], [], first
    while True:
        body = client.get(url).content.decode()
        pages.append(_ids(body))
        bodies.append(body)
        found = NEXT.search(body)
        if not found:
            break
        assert len(pages) < 20, "the Older links go round in circles"
        url = "/documents/?" + found.group(1).replace("&amp;", "&")
    back = []
    for body in reversed(bodies[1:]):
        url = "/documents/?" + PREVIOUS.search(body).group(1).replace("&amp;", "&")
        back.append(_ids(client.get(url).content.decode()))
    return pages, back


@pytest.mark.parametrize("sort", sorted(documents_view.SORTS))
def test_the_seek_links_walk_every_visible_document_once_in_order(listed, sort):
    client = console_client(listed)
    expected = [str(pk) for pk in document_list(member=listed).order_by(*documents_view.SORTS[sort])
                .values_list("pk", flat=True)]
    assert 20 < len(expected) < 31  # some are hidden from the viewer; more than the cap are not
    pages, back = _walk(client, f"/documents/?sort={sort}")
    assert [pk for page in pages for pk in page] == expected
    assert all(len(page) == 4 for page in pages[:-1])
    assert back == pages[:-1][::-1]  # "Newer" from each page is the page before it
    for number, page in enumerate(pages, start=1):  # a typed-in ?page= (by offset) is the same page
        assert _ids(client.get(f"/documents/?sort={sort}&page={number}").content.decode()) == page


def test_the_count_is_exact_below_the_cap_and_capped_above_it(listed):
    client = console_client(listed)
    body = client.get("/documents/?status=ready").content.decode()
    ready = document_list(member=listed, status="ready").count()
    assert ready <= 20 and f"page 1 of {-(-ready // 4)} · {ready} documents" in body
    assert "page 1 · more than 20 documents" in client.get("/documents/").content.decode()


@pytest.mark.parametrize("cursor", [
    "not base64 !", base64.urlsafe_b64encode(b"[1, 2]").decode(), base64.urlsafe_b64encode(b'["x", "y"]').decode(),
    base64.urlsafe_b64encode(json.dumps(["2026-01-01T00:00:00+00:00", 10**30]).encode()).decode(),
    base64.urlsafe_b64encode(b'{"a": 1}').decode(), base64.urlsafe_b64encode(b"[null, true]").decode(),
])
@pytest.mark.parametrize("direction", ["after", "before"])
def test_a_forged_cursor_is_the_first_page(listed, cursor, direction):
    client = console_client(listed)
    first = _ids(client.get("/documents/").content.decode())
    response = client.get("/documents/", {direction: cursor, "page": "7"})
    assert response.status_code == 200
    assert _ids(response.content.decode()) == first


def test_members_and_tokens_are_paged(monkeypatch):
    monkeypatch.setattr(members_view, "PAGE_SIZE", 3)
    tenant = tenant_create(slug="acme", name="Acme")
    admin = membership_create(tenant=tenant, email="admin@acme.test", role="admin", clearance="restricted")
    for i in range(6):
        member = membership_create(tenant=tenant, email=f"m{i}@acme.test", role="viewer", clearance="internal")
        api_token_create(membership=member, name=f"t{i}")
    client = console_client(admin)
    emails, tokens = [], []
    for number in (1, 2, 3):
        body = client.get(f"/members/?page={number}").content.decode()
        emails += re.findall(r'data-email="([^"]+)"', body)
        assert f"page {number} of 3 · 7 members" in body
        if number < 3:  # six tokens: two pages
            body = client.get(f"/tokens/?page={number}").content.decode()
            tokens += re.findall(r'<tr id="token-(\d+)">', body)
            assert f"page {number} of 2 · 6 tokens" in body
    assert emails == ["admin@acme.test"] + [f"m{i}@acme.test" for i in range(6)]  # by e-mail, each once
    assert len(tokens) == len(set(tokens)) == 6


def test_a_refused_member_change_shows_the_page_the_row_is_on(monkeypatch):
    monkeypatch.setattr(members_view, "PAGE_SIZE", 2)
    tenant = tenant_create(slug="acme", name="Acme")
    admin = membership_create(tenant=tenant, email="a@acme.test", role="admin", clearance="restricted")
    for i in range(4):
        membership_create(tenant=tenant, email=f"m{i}@acme.test", role="viewer", clearance="internal")
    client = console_client(admin)
    body = client.get("/members/?page=3").content.decode()
    member = re.search(r'<tr id="member-(\d+)" data-email="m3@acme.test"', body).group(1)
    assert f'action="/members/{member}/?page=3"' in body
    response = client.post(f"/members/{member}/?page=3", {"role": "viewer", "clearance": "internal", "groups": "nope"})
    assert response.status_code == 400 and 'data-email="m3@acme.test"' in response.content.decode()
    response = client.post(f"/members/{member}/?page=3", {"role": "viewer", "clearance": "public"})
    assert response.status_code == 302 and response["Location"] == "/members/?page=3"


@pytest.fixture
def policy_document():
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    editor = membership_create(tenant=tenant, email="editor@acme.test", role="editor", clearance="confidential")
    viewer = membership_create(tenant=tenant, email="viewer@acme.test", role="viewer", clearance="internal")
    return make_document(tenant, sections=POLICY_SECTIONS), editor, viewer


def test_section_rows_come_without_forms_and_each_fetches_its_own(policy_document):
    document, editor, viewer = policy_document
    client = console_client(editor)
    body = client.get(f"/documents/{document.pk}/").content.decode()
    rows = re.findall(r'data-section="([0-9a-f-]{36})"', body)
    assert rows and "Save access" not in body and "<select" not in body
    for section in rows:  # each row: htmx fetches the form when opened; without JavaScript, a link to it
        url = f"/sections/{section}/access/"
        assert f'hx-get="{url}"' in body and f'<a class="small" href="{url}">Open the access form</a>' in body
        fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
        assert fragment.lstrip().startswith("<form") and f'hx-post="{url}"' in fragment
        assert "Save access" in fragment and "<html" not in fragment
        page = client.get(url).content.decode()
        assert "<html" in page and "Save access" in page and "hx-post" not in page
    assert client.get(f"/sections/{rows[0]}/access/").status_code == 200
    assert console_client(viewer).get(f"/sections/{rows[0]}/access/").status_code == 403


def test_a_refused_plain_post_answers_with_the_form_and_the_reason(policy_document):
    document, editor, _ = policy_document
    section = document.section_ids["intro"]
    response = console_client(editor).post(f"/sections/{section}/access/", {f"s-{section}-access_level": "restricted"})
    assert response.status_code == 403
    body = response.content.decode()
    assert "above your clearance" in body and '<option value="restricted" selected>' in body


def test_section_rows_built_in_python_escape_what_they_show():
    """The rows of the section tree are markup built by a template tag (``section_rows``), not by the
    template: titles, paths and errors in them are escaped as the template would have."""
    tenant = tenant_create(slug="acme", name="Acme")
    editor = membership_create(tenant=tenant, email="editor@acme.test", role="admin", clearance="restricted")
    hostile = "<script>x</script>\"'&amp;"
    document = make_document(tenant, title="Hostile", sections=[
        ("root", None, "", AccessLevel.INTERNAL, [], "Preamble."),
        ("a", "root", hostile, AccessLevel.INTERNAL, [], "Body."),
        ("b", "a", "Below <i>it</i>", AccessLevel.INTERNAL, [], "Body."),
    ])
    client = console_client(editor)
    body = client.get(f"/documents/{document.pk}/").content.decode()
    assert "<script>x" not in body and "<i>it" not in body
    assert "&lt;script&gt;x&lt;/script&gt;&quot;&#x27;&amp;amp;" in body  # its title, and the path of the row below
    assert body.count("&lt;script&gt;x") >= 2 and "Below &lt;i&gt;it&lt;/i&gt;" in body
    section = document.section_ids["b"]
    refused = client.post(f"/sections/{section}/access/", {f"s-{section}-access_level": "nonsense"},
                          HTTP_HX_REQUEST="true").content.decode()
    assert 'role="alert"' in refused and "<script>x" not in refused


def test_a_long_documents_section_tree_is_shown_a_page_at_a_time(monkeypatch):
    """A document may hold 100,000 sections; its page rendered them all (tens of megabytes of HTML and
    seconds of a web thread for any member who may read it: found attacking the demo). The tree is paged:
    each section the member may read on exactly one page, the chosen section's page by default, and the
    sections above the member's access counted on no page."""
    from console.views import document_page

    monkeypatch.setattr(document_page, "TREE_PAGE", 4)
    tenant = tenant_create(slug="acme", name="Acme")
    viewer = membership_create(tenant=tenant, email="viewer@acme.test", role="viewer", clearance="internal")
    sections = [("root", None, "", AccessLevel.INTERNAL, [], "Preamble.")]
    for i in range(12):  # every third one restricted: 8 readable + the root = 9, three pages of 4
        level = AccessLevel.RESTRICTED if i % 3 == 2 else AccessLevel.INTERNAL
        sections.append((f"s{i}", "root", f"Part {i}", level, [], f"Body {i}."))
    document = make_document(tenant, sections=sections)
    client = console_client(viewer)
    seen = []
    for number in (1, 2, 3):
        body = client.get(f"/documents/{document.pk}/?page={number}").content.decode()
        rows = re.findall(r'data-section="([0-9a-f-]{36})"', body)
        assert len(rows) == (4 if number < 3 else 1)
        assert f"page {number} of 3 · 9 sections" in body
        seen += rows
    readable = [str(document.section_ids[key]) for key, _, _, level, _, _ in sections if level == AccessLevel.INTERNAL]
    assert seen == readable  # each readable section once, in document order; none above the viewer's access
    chosen = document.section_ids["s10"]
    body = client.get(f"/documents/{document.pk}/?section={chosen}").content.decode()
    assert "page 3 of 3" in body and f'id="section-{chosen}"' in body  # the chosen section's page
    body = client.get(f"/documents/{document.pk}/?page=junk").content.decode()
    assert "page 1 of 3" in body
