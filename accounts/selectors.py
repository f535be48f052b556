"""Reads for accounts; the reader of the access rule is built here."""

from __future__ import annotations

from accounts.access import Reader
from accounts.errors import NotFound
from accounts.models import Membership, Tenant


def reader_for(membership: Membership) -> Reader:
    """The access-rule view of a membership: tenant, clearance and group ids."""
    group_ids = frozenset(membership.groups.values_list("id", flat=True))
    return Reader(tenant_id=membership.tenant_id, clearance=membership.clearance, group_ids=group_ids)


def tenant_get(*, slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise NotFound(f"no tenant {slug!r}")
    return tenant


def membership_get(*, tenant: Tenant, email: str) -> Membership:
    membership = (
        Membership.objects.select_related("user", "tenant")
        .filter(tenant=tenant, user__email=email.strip().lower())
        .first()
    )
    if membership is None:
        raise NotFound(f"{email} is not a member of tenant {tenant.slug!r}")
    return membership
