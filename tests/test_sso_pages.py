"""The sign-in page offers single sign-on only when a tenant has it on; an answer that says it comes from
another issuer than the tenant's (RFC 9207 ``iss``) is refused before anything is exchanged."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import SsoConfig
from accounts.services import tenant_create

pytestmark = pytest.mark.django_db


def test_the_sign_in_page_offers_single_sign_on_only_when_configured():
    tenant = tenant_create(slug="acme", name="Acme")
    assert b'id="sso-box"' not in Client().get("/sign-in/").content
    config = SsoConfig.objects.create(tenant=tenant, issuer="https://idp.example", client_id="c", enabled=False)
    assert b'id="sso-box"' not in Client().get("/sign-in/").content
    config.enabled = True
    config.save()
    page = Client().get("/sign-in/").content
    assert b'id="sso-box"' in page and b'id="sso-continue"' not in page
    chosen = Client().get("/sso/", {"organisation": "Acme"}, follow=True)
    assert b'href="/sso/acme/"' in chosen.content


def test_a_callback_from_another_issuer_or_an_unknown_organisation_is_refused():
    tenant = tenant_create(slug="acme", name="Acme")
    SsoConfig.objects.create(tenant=tenant, issuer="https://idp.example", client_id="c", enabled=True)
    response = Client().get("/sso/acme/callback/", {"code": "x", "state": "y", "iss": "https://evil.example"})
    assert response.status_code == 403 and b"another identity provider" in response.content
    for slug in ("nobody", "acme-not"):
        assert Client().get(f"/sso/{slug}/").status_code == 404
