"""Reads for accounts; the reader of the access rule is built here."""

from __future__ import annotations

from django.db import connection
from django.db.models import QuerySet

from accounts.errors import NotFound
from accounts.models import ApiToken, Group, GroupMembership, Membership, Tenant
from accounts.policy import Reader


def reader_for(membership: Membership) -> Reader:
    """The access-rule view of a membership: tenant, clearance and group ids."""
    # The link table alone (a trigger keeps both sides in one tenant): under the tenant wall, a join
    # to groups would plan both tables' policies on every search.
    group_ids = frozenset(GroupMembership.objects.filter(membership_id=membership.pk).values_list("group_id", flat=True))
    return Reader(tenant_id=membership.tenant_id, clearance=membership.clearance, group_ids=group_ids)


def tenant_slug_inherited(*, slug: str) -> bool:
    """Whether a tenant other than the one holding ``slug`` now held it before (deleted, or renamed away:
    ``accounts.models.RetiredTenantSlug``), until the operator releases it. Asked through
    ``bulkhead_tenant_slug_inherited`` (``accounts/migrations/0009``), which tells this and nothing else: the
    application's login cannot read the retired slugs."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT bulkhead_tenant_slug_inherited(%s)", [slug])
        return bool(cursor.fetchone()[0])


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


def object_pk(value) -> int | None:
    """A path id as a database integer key, or None when it cannot be one (then: not found)."""
    try:
        pk = int(str(value))
    except (TypeError, ValueError):
        return None
    return pk if 0 < pk < 2**63 else None


def group_list(*, tenant: Tenant) -> QuerySet[Group]:
    """The tenant's groups, by slug."""
    return Group.objects.filter(tenant=tenant).order_by("slug", "id")


def group_get(*, tenant: Tenant, group_id) -> Group:
    """One group of the tenant; a group of another tenant is not found (same 404)."""
    pk = object_pk(group_id)
    group = Group.objects.filter(tenant=tenant, pk=pk).first() if pk else None
    if group is None:
        raise NotFound("Not found.")
    return group


def membership_list(*, tenant: Tenant) -> QuerySet[Membership]:
    """The tenant's memberships with their users and groups, by email."""
    return (
        Membership.objects.filter(tenant=tenant)
        .select_related("user", "tenant")
        .prefetch_related("groups")
        .order_by("user__email", "id")
    )


def membership_get_by_id(*, tenant: Tenant, membership_id) -> Membership:
    """One membership of the tenant; one of another tenant is not found (same 404)."""
    pk = object_pk(membership_id)
    membership = membership_list(tenant=tenant).filter(pk=pk).first() if pk else None
    if membership is None:
        raise NotFound("Not found.")
    return membership


def api_token_list(*, tenant: Tenant) -> QuerySet[ApiToken]:
    """The tenant's API tokens (never their keys), newest first."""
    return (
        ApiToken.objects.filter(membership__tenant=tenant)
        .select_related("membership__user", "created_by__user")
        .order_by("-created_at", "-id")
    )


def api_token_get(*, tenant: Tenant, token_id) -> ApiToken:
    """One token of the tenant; one of another tenant is not found (same 404)."""
    pk = object_pk(token_id)
    token = api_token_list(tenant=tenant).filter(pk=pk).first() if pk else None
    if token is None:
        raise NotFound("Not found.")
    return token
