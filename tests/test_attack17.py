"""Attacks of the seventeenth session (attack17): a hostile member, editor or author against the surfaces changed
last -- what held is in docs/security.md; each test here failed on the code before its fix."""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from tests.api_helpers import console_client, member_with_token

pytestmark = pytest.mark.django_db(transaction=True)

# What is no page number a plain ``int()`` cannot read or would read too slowly: a digit Python counts as one but
# ``int()`` refuses (a superscript two), a number past the interpreter's 4,300-digit limit for ``int(str)``.
NO_PAGES = ["%C2%B2", "9" * 5000]


@pytest.mark.parametrize("page", NO_PAGES, ids=["superscript", "5000-digits"])
def test_a_page_number_that_is_no_number_is_the_first_page_never_a_500(page):
    """The console's review queue read ``?page=`` with ``str.isdigit`` and then ``int`` -- "²".isdigit() is True and
    ``int("²")`` raises, as ``int`` of 5,000 digits does -- so an admin's typed page answered 500; the members list's
    return after a change (``?page=`` of the address a form posted to) likewise, after the change was made."""
    tenant = tenant_create(slug="pages17", name="Pages")
    admin, _ = member_with_token(tenant, "admin@example.com", "admin", "restricted")
    other, _ = member_with_token(tenant, "viewer@example.com", "viewer", "internal")
    client = console_client(admin, raise_request_exception=False)
    for state in ("pending", "all"):
        response = client.get(f"/review/?state={state}&page={page}")
        assert response.status_code == 200, (state, response.status_code)
    response = client.post(f"/members/{other.pk}/?page={page}",
                           {"role": "viewer", "clearance": "confidential", "groups": []})
    assert response.status_code == 302, response.status_code
    assert response["Location"] == "/members/", response["Location"]
