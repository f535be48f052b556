"""Attacking invitations: a link is an admin's grant, and holds only while that admin could still make it."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from accounts.errors import NotFound
from accounts.invitations import invitation_accept, invitation_create, invitation_open
from accounts.models import Membership
from accounts.services import membership_create, membership_update, tenant_create
from tests.api_helpers import console_client

pytestmark = pytest.mark.django_db
PASSWORD = "a long enough passphrase 42"


def _key(address: str) -> str:
    message = next(m for m in reversed(mail.outbox) if address in m.to)
    return re.search(r"/invitation/([^/\s]+)/", message.body).group(1)


@pytest.mark.parametrize("fate", ["demoted", "deactivated", "removed"])
def test_an_invitation_dies_with_its_inviters_authority(settings, fate):
    """Found attacking invitations: an admin about to be removed invites an address of their own as an
    admin of the tenant (with the highest clearance); the other admins demote, deactivate or remove them --
    and the pending link still made its holder an admin, days later. An invitation now opens only while
    the member who made it is an active admin of the tenant; otherwise it is the one 404 of a link that
    is not valid."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.BULKHEAD_PUBLIC_URL = "http://testserver"
    tenant = tenant_create(slug="inv-attack", name="Inv")
    owner = membership_create(tenant=tenant, email="owner@inv.example", role="admin", clearance="restricted")
    eve = membership_create(tenant=tenant, email="eve@inv.example", role="admin", clearance="restricted")
    invitation_create(tenant=tenant, email="eve.alt@evil.example", role="admin", clearance="restricted", actor=eve)
    invitation_create(tenant=tenant, email="fine@inv.example", role="viewer", clearance="public", actor=owner)
    key, fine = _key("eve.alt@evil.example"), _key("fine@inv.example")
    assert invitation_open(key).invitation.role == "admin"  # valid while Eve is an admin
    if fate == "demoted":
        membership_update(membership=eve, acting=owner, role="viewer")
    elif fate == "deactivated":
        membership_update(membership=eve, acting=owner, is_active=False)
    else:
        Membership.objects.filter(pk=eve.pk).delete()
    with pytest.raises(NotFound):
        invitation_open(key)
    # Nor is it listed as pending on the members page (a link that cannot open is not pending).
    page = console_client(owner).get("/members/").content.decode()
    assert "eve.alt@evil.example" not in page and "fine@inv.example" in page
    with pytest.raises(NotFound):
        invitation_accept(key=key, password=PASSWORD)
    assert not Membership.objects.filter(user__email="eve.alt@evil.example").exists()
    assert invitation_accept(key=fine, password=PASSWORD).role == "viewer"  # the owner's still holds
