"""Writes for tenants, users, memberships, groups and API tokens."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from accounts.access import AccessLevel
from accounts.errors import ApplicationError, Conflict
from accounts.models import ApiToken, Group, GroupMembership, Membership, Role, Tenant, User

TOKEN_PREFIX_LENGTH = 8


def _valid_slug(slug: str, what: str) -> str:
    if not slug or slugify(slug) != slug:
        raise ApplicationError(f"invalid {what} slug {slug!r}: use lowercase letters, digits and hyphens")
    return slug


@transaction.atomic
def tenant_create(*, slug: str, name: str) -> Tenant:
    _valid_slug(slug, "tenant")
    if Tenant.objects.filter(slug=slug).exists():
        raise Conflict(f"tenant {slug!r} already exists")
    return Tenant.objects.create(slug=slug, name=name or slug)


@transaction.atomic
def group_create(*, tenant: Tenant, slug: str, name: str = "") -> Group:
    _valid_slug(slug, "group")
    if Group.objects.filter(tenant=tenant, slug=slug).exists():
        raise Conflict(f"group {slug!r} already exists in tenant {tenant.slug!r}")
    return Group.objects.create(tenant=tenant, slug=slug, name=name or slug)


def groups_by_slugs(*, tenant: Tenant, slugs: Iterable[str]) -> list[Group]:
    """Resolve group slugs inside one tenant; any unknown slug fails (closed)."""
    wanted = sorted(set(slugs))
    found = {g.slug: g for g in Group.objects.filter(tenant=tenant, slug__in=wanted)}
    missing = [s for s in wanted if s not in found]
    if missing:
        raise ApplicationError(
            f"unknown group{'s' if len(missing) > 1 else ''}: {', '.join(missing)}",
            details={"groups": missing},
            code="unknown_group",
        )
    return [found[s] for s in wanted]


def parse_role(role: str) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise ApplicationError(f"unknown role {role!r}; expected one of {', '.join(Role.values)}") from None


def parse_level(level: str) -> AccessLevel:
    try:
        return AccessLevel.from_name(level)
    except ValueError as exc:
        raise ApplicationError(str(exc), code="unknown_access_level") from None


@transaction.atomic
def membership_set_groups(*, membership: Membership, groups: Iterable[Group]) -> None:
    groups = list(groups)
    if any(g.tenant_id != membership.tenant_id for g in groups):
        raise ApplicationError("groups must belong to the membership's tenant")
    GroupMembership.objects.filter(membership=membership).exclude(group__in=groups).delete()
    existing = set(GroupMembership.objects.filter(membership=membership).values_list("group_id", flat=True))
    GroupMembership.objects.bulk_create(
        [GroupMembership(membership=membership, group=g) for g in groups if g.id not in existing]
    )


@transaction.atomic
def membership_create(
    *, tenant: Tenant, email: str, role: str, clearance: str, group_slugs: Iterable[str] = ()
) -> Membership:
    """Add a user (created if new) to a tenant with a role, a clearance and groups."""
    role_value = parse_role(role)
    level = parse_level(clearance)
    groups = groups_by_slugs(tenant=tenant, slugs=group_slugs)
    email = email.strip().lower()
    if "@" not in email:
        raise ApplicationError(f"invalid email address {email!r}")
    user = User.objects.filter(email=email).first() or User.objects.create_user(email)
    if Membership.objects.filter(user=user, tenant=tenant).exists():
        raise Conflict(f"{email} is already a member of tenant {tenant.slug!r}")
    membership = Membership.objects.create(user=user, tenant=tenant, role=role_value, clearance=level)
    membership_set_groups(membership=membership, groups=groups)
    return membership


def _hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, membership: Membership, name: str = "") -> tuple[ApiToken, str]:
    """Create a token; returns it with the clear key, which is never stored and shown once."""
    prefix = secrets.token_hex(TOKEN_PREFIX_LENGTH // 2)
    key = f"bkh_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(membership=membership, name=name, prefix=prefix, key_hash=_hash_key(key))
    return token, key


def api_token_authenticate(key: str) -> ApiToken | None:
    """The live token for a clear key, or None. Constant-time on the hash comparison."""
    parts = key.split("_")
    if len(parts) < 3 or parts[0] != "bkh":
        return None
    digest = _hash_key(key)
    for token in ApiToken.objects.select_related("membership__tenant", "membership__user").filter(
        prefix=parts[1], revoked_at__isnull=True
    ):
        if secrets.compare_digest(token.key_hash, digest):
            membership = token.membership
            if not membership.is_active or not membership.user.is_active:
                return None
            now = timezone.now()
            if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
                ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            return token
    return None


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> ApiToken:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


@transaction.atomic
def group_update(*, group: Group, name: str | None = None) -> Group:
    """Rename a group. Its slug stays: documents' access markers name groups by slug."""
    if name is not None:
        group.name = name or group.slug
        group.save(update_fields=["name"])
    return group


@transaction.atomic
def membership_update(
    *,
    membership: Membership,
    acting: Membership | None = None,
    role: str | None = None,
    clearance: str | None = None,
    group_slugs: Iterable[str] | None = None,
    is_active: bool | None = None,
) -> Membership:
    """Change a membership's role, clearance, groups or active flag; ``None`` leaves a field as is.

    ``acting`` is the admin making the change: an admin may not demote or deactivate
    themselves, so a tenant cannot lose its last admin by accident.
    """
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if acting is not None and acting.pk == membership.pk:
        if (role is not None and role != Role.ADMIN) or is_active is False:
            raise Conflict("you cannot demote or deactivate your own membership; ask another admin")
    fields: list[str] = []
    if role is not None:
        membership.role = parse_role(role)
        fields.append("role")
    if clearance is not None:
        membership.clearance = parse_level(clearance)
        fields.append("clearance")
    if is_active is not None:
        membership.is_active = is_active
        fields.append("is_active")
    if fields:
        membership.save(update_fields=fields)
    if group_slugs is not None:
        membership_set_groups(membership=membership, groups=groups_by_slugs(tenant=membership.tenant, slugs=group_slugs))
    return membership
