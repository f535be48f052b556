"""The search playground in a real browser: the real search, as oneself or (admins) as another member."""

from __future__ import annotations

import pytest

from accounts.models import Group
from accounts.policy import AccessLevel
from tests.api_helpers import POLICY_SECTIONS, make_document
from tests.browser.conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser

SECRET = "Only the security team."




@pytest.fixture
def world(acme):
    document = make_document(acme["tenant"], sections=POLICY_SECTIONS, default=AccessLevel.INTERNAL)
    assert Group.objects.filter(tenant=acme["tenant"]).count() == 1
    return {**acme, "document": document}


def _search(page, query: str, **selects) -> None:
    page.goto("/search/")
    page.fill("#id_query", query)
    page.select_option("#id_mode", "keyword")
    for name, value in selects.items():
        page.select_option(f"#id_{name}", value)
    page.click("#search-form button[type=submit]")
    page.wait_for_selector(".search-result")


def test_admin_sees_restricted_hits_with_the_query_words_marked(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    _search(page, "security team")
    texts = page.locator(".hit-text").all_inner_texts()
    assert SECRET in texts
    assert page.locator(".hit-text mark").first.inner_text().lower() in {"security", "team"}
    assert page.locator(".plan").count() == 0  # no page shows the plan (docs/security.md, Decisions: Timing)


def test_admin_searching_as_a_viewer_gets_exactly_the_viewers_answer(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    _search(page, "security team", as_member=str(world["viewer"].pk))
    body = page.locator("main").inner_text()
    assert "as viewer@acme.test" in body
    assert SECRET not in body
    assert "Page the on-call engineer." not in body


def test_a_viewer_cannot_search_as_someone_else_even_by_url(page, world):
    sign_in(page, "viewer@acme.test", PASSWORD)
    page.goto("/search/")
    assert page.locator("#id_as_member").count() == 0
    page.goto(f"/search/?query=security+team&mode=keyword&expand=parent&expand_level=leaf&top_k=5&max_contexts=5"
              f"&context_token_budget=2000&as_member={world['admin'].pk}")
    # Not a member the viewer may choose: the form refuses it, and nothing is searched.
    assert "Select a valid choice" in page.locator("[role=alert]").inner_text()
    assert page.locator(".search-result").count() == 0
    assert SECRET not in page.locator("main").inner_text()


def test_two_versions_side_by_side(page, world):
    from ingestion.chunking.config import ChunkingConfig
    from kb.index_versions import index_version_active, index_version_create

    version = index_version_active(tenant=world["tenant"])
    other, _ = index_version_create(tenant=world["tenant"], config=ChunkingConfig(target_tokens=128), name="small")
    sign_in(page, "admin@acme.test", PASSWORD)
    _search(page, "security team", index_version=str(version.pk), compare_version=str(other.pk))
    assert page.locator(".search-result").count() == 2
    # Both named by the one short id the Versions page uses.
    assert page.locator(".search-result h2 code").all_inner_texts() == [version.short_id, other.short_id]
    # A version compared with itself is refused, in words, and nothing is searched.
    page.select_option("#id_compare_version", str(version.pk))
    page.click("#search-form button[type=submit]")
    assert "Choose a different version" in page.locator("[role=alert]").inner_text()
    assert page.locator(".search-result").count() == 0
