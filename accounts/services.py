"""Writes for tenants, users, memberships, groups and API tokens."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.contrib.auth.hashers import make_password
from django.db import router, transaction
from django.utils import timezone
from django.utils.text import slugify

from accounts import policy
from accounts.errors import ApplicationError, Conflict
from accounts.models import (
    ApiToken,
    Group,
    GroupMembership,
    Membership,
    MemberSource,
    Role,
    ScimToken,
    SsoIdentity,
    Tenant,
    User,
)
from accounts.policy import AccessLevel, Policy
from accounts.tenancy import (
    acting_tenant,
    acting_user_activate,
    tenant_activate,
    tenant_activate_for_token,
    tenant_context_reset,
)
from audit.models import Action
from audit.services import audit_after_answer, audit_record, audit_record_read

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


def tenant_slug_release(*, slug: str) -> int:
    """The operator's word that the folders named by ``slug`` below ``BULKHEAD_SOURCE_ROOTS`` hold nothing of a
    tenant that gave the slug up (they were moved away): the tenant holding it now may read them
    (``sources.listing.tenant_folders``). Forgets the retired slug's rows, as the owner (the application's login
    has no right on them); returns how many. Run by ``manage.py kb_tenant release-folder`` only."""
    from accounts.models import RetiredTenantSlug
    from accounts.tenancy import owner_path

    _valid_slug(slug, "tenant")
    with owner_path():
        deleted, _ = RetiredTenantSlug.objects.filter(slug=slug).delete()
    return deleted


@transaction.atomic
def group_create(*, tenant: Tenant, slug: str, name: str = "", actor: Membership | None = None) -> Group:
    """A new group of ``tenant``; ``actor`` (the admin; None: an internal caller) for the audit trail."""
    _valid_slug(slug, "group")
    if Group.objects.filter(tenant=tenant, slug=slug).exists():
        raise Conflict(f"group {slug!r} already exists in tenant {tenant.slug!r}")
    group = Group.objects.create(tenant=tenant, slug=slug, name=name or slug)
    audit_record(action=Action.GROUP_CREATE, actor=actor, tenant_id=tenant.pk, target_type="group",
                 target_id=group.pk, details={"after": {"slug": group.slug, "name": group.name}})
    return group


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
    """:func:`accounts.policy.parse_level`, refusing an unknown name as a caller's error (400)."""
    try:
        return policy.parse_level(level)
    except policy.UnknownAccessLevel as exc:
        raise ApplicationError(str(exc), code="unknown_access_level") from None


def policy_from_names(*, tenant: Tenant, access_level: str, groups: Iterable[str]) -> Policy:
    """A policy given by name (a level name, group slugs) as it is stored (rank, group ids).
    An unknown level, then an unknown group, is refused (400)."""
    level = parse_level(access_level)
    return Policy(level, [g.id for g in groups_by_slugs(tenant=tenant, slugs=groups)])


@transaction.atomic
def membership_set_groups(*, membership: Membership, groups: Iterable[Group]) -> None:
    """Make ``groups`` the membership's groups. Every group it is in or joins is locked first (in id order), as a
    SCIM group write locks its group before it reads the members it writes back whole (``accounts.scim``): a change
    here waits for one in flight and is never written over by it (found in the twenty-first session, attack21d's
    left-open: a member removed in the console while a provider's PATCH of the group was in flight was back in it).
    Callers lock the membership with ``no_key=True``: a SCIM write adding this member takes a key-share lock on it,
    which a plain ``FOR UPDATE`` would make wait on a group lock the caller waits for."""
    groups = list(groups)
    if any(g.tenant_id != membership.tenant_id for g in groups):
        raise ApplicationError("groups must belong to the membership's tenant")
    linked = set(GroupMembership.objects.filter(membership=membership).values_list("group_id", flat=True))
    list(Group.objects.select_for_update().filter(pk__in=linked | {g.pk for g in groups}).order_by("pk")
         .values_list("pk", flat=True))
    GroupMembership.objects.filter(membership=membership).exclude(group__in=groups).delete()
    existing = set(GroupMembership.objects.filter(membership=membership).values_list("group_id", flat=True))
    GroupMembership.objects.bulk_create(
        [GroupMembership(membership=membership, group=g) for g in groups if g.id not in existing]
    )


def _membership_view(membership: Membership) -> dict:
    """A membership's rights as the audit trail records them."""
    return {
        "email": membership.user.email, "role": membership.role,
        "clearance": AccessLevel(membership.clearance).label, "is_active": membership.is_active,
        "groups": sorted(membership.groups.values_list("slug", flat=True)),
    }


def account_belongs_elsewhere(user: User, tenant_id: int) -> bool:
    """Whether ``user`` has a membership (in any state) of a tenant other than ``tenant_id``: an account
    that tenant's identity provider did not make, so a membership it makes for it is not the person's
    consent (``Membership.consented``). Read as the user (their own memberships in every tenant are
    visible then: ``accounts.tenancy``), the acting user cleared after; the tenant acted for is kept."""
    acting_user_activate(user.pk)
    try:
        return Membership.objects.filter(user=user).exclude(tenant_id=tenant_id).exists()
    finally:
        acting_user_activate(None)


def user_for_address(email: str) -> User:
    """The user of ``email`` (lower-cased already), created without a password if new, **in the same database
    calls either way**: an INSERT that does nothing when the address has an account, then the read. A tenant's
    identity provider enrols addresses through this (SCIM, a first single sign-on); a lookup followed by an
    INSERT for a new address alone made one call more for it, so the provider could time whether an address
    has an account elsewhere (found attacking identity, 2026-12-03). An existing user is never changed."""
    email = User.objects.normalize_email(email).lower()  # as create_user writes it
    User.objects.bulk_create([User(email=email, password=make_password(None))], ignore_conflicts=True)
    return User.objects.get(email=email)


def provider_memberships_unconsent(*, user: User, keep_tenant_id: int) -> None:
    """``user``'s first password was just chosen to join ``keep_tenant_id``: the memberships other tenants'
    identity providers made for the account (SCIM, a first single sign-on) while it had no other tenant --
    consented then, as the tenant's own account -- are not the person's choice of that password, so they stop
    counting as agreed to (``Membership.consented``; they still work in their tenant's single sign-on
    sessions). Found attacking identity, 2026-12-03: a tenant enrolled the address of another tenant's new
    hire first, and heard their failed sign-ins once they joined. No record and no ``updated_at`` change in
    those tenants (either would tell them the person joined another). Leaves the connection acting for
    ``keep_tenant_id``."""
    acting_user_activate(user.pk)
    try:
        others = list(Membership.objects.filter(user=user, consented=True, source__in=[
            MemberSource.SCIM, MemberSource.SSO]).exclude(tenant_id=keep_tenant_id).values_list("pk", "tenant_id"))
    finally:
        acting_user_activate(None)
    try:
        for pk, tenant_id in others:
            tenant_activate(tenant_id)  # the wall lets a tenant's rows be written acting for it alone
            Membership.objects.filter(pk=pk).update(consented=False)  # a queryset update: updated_at kept
    finally:
        tenant_activate(keep_tenant_id)


@transaction.atomic
def membership_create(
    *, tenant: Tenant, email: str, role: str, clearance: str, group_slugs: Iterable[str] = (),
    actor: Membership | None = None,
) -> Membership:
    """Add a user (created if new) to a tenant with a role, a clearance and groups, at once: for an
    operator on the server (``kb_user create``, ``kb_demo``, benchmarks), whose word counts as the
    person's consent. An admin in the console or the API invites instead
    (:func:`accounts.invitations.invitation_create`): the person joins when they accept. ``actor``: the
    admin (None: an internal caller), for the audit trail.

    An account that already existed without a usable password (one a tenant's identity provider made: SCIM, a
    first single sign-on) joins ``tenant`` here by the operator's word, and its first password (``kb_user
    set-password``, or a reset link) is then this tenant's: as when such an account accepts an invitation
    (:func:`accounts.invitations.invitation_accept`), the memberships providers made for it earlier stop
    counting as agreed to (:func:`provider_memberships_unconsent`; nothing is recorded or changed that their
    tenants can see). Done here rather than when the password is set: here the tenant being joined is known,
    and every way the password then comes is covered. An account with a password keeps its memberships as they
    are, as accepting an invitation with the current password does."""
    role_value = parse_role(role)
    level = parse_level(clearance)
    groups = groups_by_slugs(tenant=tenant, slugs=group_slugs)
    email = email.strip().lower()
    if "@" not in email:
        raise ApplicationError(f"invalid email address {email!r}")
    user = User.objects.filter(email=email).first()
    had_no_password = user is not None and not user.has_usable_password()
    if user is None:
        user = User.objects.create_user(email)
    if Membership.objects.filter(user=user, tenant=tenant).exists():
        raise Conflict(f"{email} is already a member of tenant {tenant.slug!r}")
    membership = Membership.objects.create(user=user, tenant=tenant, role=role_value, clearance=level,
                                           consented=True)
    membership_set_groups(membership=membership, groups=groups)
    audit_record(action=Action.MEMBERSHIP_CREATE, actor=actor, tenant_id=tenant.pk, target_type="membership",
                 target_id=membership.pk, details={"after": _membership_view(membership)})
    if had_no_password:
        provider_memberships_unconsent(user=user, keep_tenant_id=tenant.pk)
    return membership


def _hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _token_view(token: ApiToken) -> dict:
    return {"prefix": token.prefix, "name": token.name, "membership": token.membership_id}


@transaction.atomic
def api_token_create(
    *, membership: Membership, name: str = "", actor: Membership | None = None
) -> tuple[ApiToken, str]:
    """Create a token; returns it with the clear key, which is never stored and shown once.
    ``actor``: the admin minting it (None: an internal caller), for the audit trail."""
    prefix = secrets.token_hex(TOKEN_PREFIX_LENGTH // 2)
    key = f"bkh_{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(membership=membership, name=name, prefix=prefix, key_hash=_hash_key(key),
                                    created_by=actor)
    audit_record(action=Action.TOKEN_CREATE, actor=actor, tenant_id=membership.tenant_id, target_type="token",
                 target_id=token.pk, details={"after": _token_view(token)})
    return token, key


def api_token_authenticate(key: str) -> ApiToken | None:
    """The live token for a clear key, or None. Constant-time on the hash comparison."""
    parts = key.split("_")
    if len(parts) < 3 or parts[0] != "bkh":
        return None
    digest = _hash_key(key)
    # The one lookup before the tenant is known, which also acts for it (accounts.tenancy).
    if tenant_activate_for_token(digest) is None:
        return None
    for token in ApiToken.objects.select_related("membership__tenant", "membership__user", "created_by__user").filter(
        prefix=parts[1], revoked_at__isnull=True
    ):
        if secrets.compare_digest(token.key_hash, digest):
            membership = token.membership
            if not membership.is_active or not membership.user.is_active:
                return None
            # A token minted for another member works while its minter, who saw the key, is still an active
            # admin (revoked when they stop being one; this holds for what bypasses that, e.g. a user
            # deactivated on the server). One's own token acts with one's own, current rights.
            if token.created_by_id not in (None, membership.pk) and not may_mint(token.created_by, membership.tenant_id):
                return None
            now = timezone.now()
            if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
                ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            return token
    return None


def may_mint(minter: Membership | None, tenant_id: int) -> bool:
    """Whether ``minter`` may still mint tokens of ``tenant_id``: an active admin of it with an active account."""
    return (minter is not None and minter.tenant_id == tenant_id and minter.role == Role.ADMIN and minter.is_active
            and minter.user.is_active)


def _scim_token_view(token: ScimToken) -> dict:
    return {"prefix": token.prefix, "name": token.name}  # as accounts.scim records a SCIM token


def _revoke_each(tokens, *, scim: bool, actor: Membership | None, tenant_id: int, reason: str) -> list[str]:
    """Revoke ``tokens`` (locked rows; API tokens, or SCIM tokens), one audit record each naming ``reason``;
    returns their prefixes."""
    action, target, view = ((Action.SCIM_TOKEN_REVOKE, "scim_token", _scim_token_view) if scim
                            else (Action.TOKEN_REVOKE, "token", _token_view))
    now = timezone.now()
    revoked = []
    for token in tokens:
        token.revoked_at = now
        token.save(update_fields=["revoked_at"])
        audit_record(action=action, actor=actor, tenant_id=tenant_id, target_type=target, target_id=token.pk,
                     details={"before": view(token), "reason": reason})
        revoked.append(token.prefix)
    return revoked


def tokens_minted_by_revoke(*, membership: Membership, actor: Membership | None, reason: str,
                            others_only: bool = False) -> list[str]:
    """Revoke the live API and SCIM tokens ``membership`` minted -- it saw their keys -- (``others_only``:
    not the API tokens of its own membership, which act with its own rights); each recorded. Called when
    the minter is deactivated or removed (all) or demoted below admin (those acting for others)."""
    api = ApiToken.objects.select_for_update().filter(created_by=membership, revoked_at__isnull=True).order_by("pk")
    if others_only:
        api = api.exclude(membership=membership)
    scim = ScimToken.objects.select_for_update().filter(created_by=membership, revoked_at__isnull=True).order_by("pk")
    tenant_id = membership.tenant_id
    return (_revoke_each(api, scim=False, actor=actor, tenant_id=tenant_id, reason=reason)
            + _revoke_each(scim, scim=True, actor=actor, tenant_id=tenant_id, reason=reason))


def membership_deactivated_revoke(*, membership: Membership, actor: Membership | None) -> list[str]:
    """The membership was deactivated: revoke the tokens it minted (:func:`tokens_minted_by_revoke`) and
    then every live API token of its own, whoever minted it, each recorded; returns their prefixes.
    A token is a key someone holds: reactivating the member does not bring back the ones that were out
    there while they were away -- a reactivated member needs new tokens."""
    minted = tokens_minted_by_revoke(membership=membership, actor=actor, reason="its minter was deactivated")
    own = ApiToken.objects.select_for_update().filter(membership=membership, revoked_at__isnull=True).order_by("pk")
    return minted + _revoke_each(own, scim=False, actor=actor, tenant_id=membership.tenant_id,
                                 reason="its member was deactivated")


ACCOUNT_CHANGES = {False: "deactivated", True: "reactivated"}


def user_active_set(*, user: User, is_active: bool) -> list[str]:
    """The operator turns an account off, or on again, on the server -- for every tenant it belongs to (the Django
    admin's "Active" box). In each tenant of the account, acting for it: turned off, what a deactivated membership
    loses (:func:`membership_deactivated_revoke`: the tokens it minted, then its own API tokens, each recorded --
    turned on again, the account needs new ones); either way a ``membership.update`` record, ``"account":
    "deactivated"`` or ``"reactivated"``. Found attacking identity, 2026-12-04: the admin's box wrote the flag
    alone -- no tenant heard of it, and the tokens, only refused while the account was off, worked again when it
    was turned back on. Returns the prefixes revoked; nothing when the flag is already so."""
    using = router.db_for_write(User)  # the owner's, in the admin
    with transaction.atomic(using=using):
        locked = User.objects.select_for_update().get(pk=user.pk)
        if locked.is_active == is_active:
            return []
        locked.is_active = is_active
        locked.save(update_fields=["is_active"])
        revoked: list[str] = []
        for membership in Membership.objects.select_related("user").filter(user=locked).order_by("pk"):
            with acting_tenant(membership.tenant_id, using=using):
                if not is_active:
                    revoked += membership_deactivated_revoke(membership=membership, actor=None)
                view = _membership_view(membership)
                audit_record(action=Action.MEMBERSHIP_UPDATE, actor=None, tenant_id=membership.tenant_id,
                             target_type="membership", target_id=membership.pk,
                             details={"before": view, "after": view, "account": ACCOUNT_CHANGES[is_active]})
    return revoked


_delete_recorded_by_caller: ContextVar[bool] = ContextVar("membership_delete_recorded_by_caller", default=False)


@contextmanager
def membership_delete_recorded_by_caller() -> Iterator[None]:
    """Inside the block, a membership's deletion is recorded by its caller (SCIM's ``DELETE``, with ``via``),
    not by ``accounts.signals``' receiver."""
    token = _delete_recorded_by_caller.set(True)
    try:
        yield
    finally:
        _delete_recorded_by_caller.reset(token)


def membership_deleted_record(*, membership: Membership) -> None:
    """Record ``membership``'s deletion in its tenant (a ``membership.delete`` by no one, its rights before), unless
    the caller records it (:func:`membership_delete_recorded_by_caller`). For ``accounts.signals``' receiver, before
    the row goes, acting for the tenant: found attacking identity, 2026-12-04, the operator's deletion of a
    membership, or of its account, in the Django admin reached no tenant's trail."""
    if _delete_recorded_by_caller.get():
        return
    audit_record(action=Action.MEMBERSHIP_DELETE, actor=None, tenant_id=membership.tenant_id,
                 target_type="membership", target_id=membership.pk, details={"before": _membership_view(membership)})


def membership_tokens_revoke(*, membership: Membership, actor: Membership | None, reason: str) -> list[str]:
    """Revoke every live API token of ``membership``, whoever minted it, each a ``token.revoke`` record in its
    tenant naming ``reason``; returns their prefixes. The caller acts for the membership's tenant, in a
    transaction."""
    own = ApiToken.objects.select_for_update().filter(membership=membership, revoked_at__isnull=True).order_by("pk")
    return _revoke_each(own, scim=False, actor=actor, tenant_id=membership.tenant_id, reason=reason)


def membership_identity_reset(*, membership: Membership, actor: Membership | None, reason: str) -> dict:
    """The membership now belongs to another person (its address changed): its single sign-on links
    (the old person's subject at the provider) are removed and its live API tokens (held by the old
    person) revoked, each token recorded. Returns what was done, for the caller's audit record."""
    links = SsoIdentity.objects.filter(membership=membership)
    unlinked = sorted(links.values_list("issuer", flat=True))
    links.delete()
    tokens = ApiToken.objects.select_for_update().filter(membership=membership, revoked_at__isnull=True).order_by("pk")
    revoked = _revoke_each(tokens, scim=False, actor=actor, tenant_id=membership.tenant_id, reason=reason)
    return {"sso_unlinked": unlinked, "tokens_revoked": revoked}


@transaction.atomic
def api_token_revoke(*, token: ApiToken, actor: Membership | None = None) -> ApiToken:
    """Revoke a token (idempotent: revoking it again changes and records nothing). ``actor``: the
    admin (None: an internal caller), for the audit trail."""
    token = ApiToken.objects.select_for_update().select_related("membership").get(pk=token.pk)
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(action=Action.TOKEN_REVOKE, actor=actor, tenant_id=token.membership.tenant_id,
                     target_type="token", target_id=token.pk, details={"before": _token_view(token)})
    return token


def api_tokens_revoke(*, tokens, reason: str) -> int:
    """Revoke the live ones of ``tokens`` (a queryset of API tokens, any tenants: the operator's Django admin), each
    a ``token.revoke`` record by no one in its own tenant naming ``reason``, acting for that tenant; returns how
    many were revoked. One already revoked is left as it is, unrecorded."""
    using = router.db_for_write(ApiToken)  # the owner's, in the admin
    with transaction.atomic(using=using):
        live = list(ApiToken.objects.select_for_update().select_related("membership").filter(
            pk__in=tokens.values("pk"), revoked_at__isnull=True).order_by("pk"))
        for token in live:
            with acting_tenant(token.membership.tenant_id, using=using):
                _revoke_each([token], scim=False, actor=None, tenant_id=token.membership.tenant_id, reason=reason)
    return len(live)


@transaction.atomic
def group_update(*, group: Group, name: str | None = None, actor: Membership | None = None) -> Group:
    """Rename a group. Its slug stays: documents' access markers name groups by slug. ``actor``:
    the admin (None: an internal caller), for the audit trail."""
    if name is not None and (name or group.slug) != group.name:
        before = {"slug": group.slug, "name": group.name}
        group.name = name or group.slug
        group.save(update_fields=["name"])
        audit_record(action=Action.GROUP_UPDATE, actor=actor, tenant_id=group.tenant_id, target_type="group",
                     target_id=group.pk, details={"before": before, "after": {"slug": group.slug, "name": group.name}})
    return group


def last_active_admin(membership: Membership) -> bool:
    """Whether ``membership`` (locked by the caller) is its tenant's only active admin, counted under the
    tenant's row lock: one demotion or deprovisioning of an admin at a time per tenant, so two at once cannot
    each see the other still an admin and leave none (found attacking SCIM). The console, the API and SCIM
    take the locks in the same order: the membership's, then the tenant's."""
    if membership.role != Role.ADMIN or not membership.is_active:
        return False
    Tenant.objects.select_for_update().get(pk=membership.tenant_id)
    return not Membership.objects.filter(tenant_id=membership.tenant_id, role=Role.ADMIN, is_active=True).exclude(
        pk=membership.pk).exists()


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
    membership = Membership.objects.select_for_update(no_key=True).select_related("user").get(pk=membership.pk)
    before = _membership_view(membership)
    was_minter = membership.role == Role.ADMIN and membership.is_active
    if acting is not None and acting.pk == membership.pk:
        if (role is not None and role != Role.ADMIN) or is_active is False:
            raise Conflict("you cannot demote or deactivate your own membership; ask another admin")
    if ((role is not None and parse_role(role) != Role.ADMIN) or is_active is False) and last_active_admin(membership):
        raise Conflict("this is the tenant's last active admin: make another member an admin first")
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
    after = _membership_view(membership)
    if after != before:
        audit_record(action=Action.MEMBERSHIP_UPDATE, actor=acting, tenant_id=membership.tenant_id,
                     target_type="membership", target_id=membership.pk, details={"before": before, "after": after})
    # The tokens this person minted (and saw the keys of) end with their authority to mint them; their own
    # end with the membership (a reactivated member needs new ones).
    if before["is_active"] and not membership.is_active:
        membership_deactivated_revoke(membership=membership, actor=acting)
    elif was_minter and membership.role != Role.ADMIN:
        tokens_minted_by_revoke(membership=membership, actor=acting, reason="its minter is no longer an admin",
                                others_only=True)
    return membership


def sign_in_record(*, email: str, succeeded: bool, address: str = "", reason: str = "") -> None:
    """Record a console sign-in attempt. Best effort, as reads are (``audit.services.audit_record_read``):
    a sign-in never fails on the audit.

    * A failed one goes to every tenant where the e-mail's user has an active membership they agreed to
      (``Membership.consented``: the account it was tried against reaches each of them, by the person's
      own choice), or to no tenant when there is none. A membership a tenant's identity provider made for
      another tenant's account hears nothing of it: the tries belong to the account's own tenants.
    * A successful one is recorded when the person enters a tenant (:func:`tenant_entered_record`),
      in that tenant alone: one tenant does not learn when a member it shares with another works
      there. With no active membership (nothing to enter) it goes to no tenant.
    """
    email = (email or "").strip().lower()[:254]
    if not succeeded:
        # Looked up and written after the answer (found attacking identity, 2026-12-04): in the request, the
        # memberships' lookup and the tenants acted for made a known address's failure several database round
        # trips slower than an unknown one's -- an account oracle by timing, open to anyone.
        audit_after_answer(lambda: _sign_in_record_now(email=email, succeeded=False, address=address,
                                                       reason=reason))
        return
    _sign_in_record_now(email=email, succeeded=True, address=address, reason=reason)


def _sign_in_record_now(*, email: str, succeeded: bool, address: str, reason: str) -> None:
    action = Action.SIGN_IN if succeeded else Action.SIGN_IN_FAILED
    details = {"address": address, **({"reason": reason} if reason else {})}
    # Before any tenant is chosen (or anyone signed in): the e-mail's own memberships in every tenant
    # (the memberships policy admits the acting user's), each record written acting for its tenant,
    # and the connection left acting for no one (accounts.tenancy).
    user = User.objects.filter(email=email).first() if email else None
    memberships = []
    if user is not None:
        acting_user_activate(user.pk)
        try:
            memberships = list(Membership.objects.select_related("user").filter(user=user, is_active=True,
                                                                                 consented=True))
        finally:
            acting_user_activate(None)
    if memberships and succeeded:
        return
    try:
        for membership in memberships:
            tenant_activate(membership.tenant_id)
            audit_record_read(action=action, actor=membership, details=details)
    finally:
        if memberships:
            tenant_activate(None)
    if not memberships:
        audit_record_read(action=action, tenant_id=None, details=details, actor_email=email)
    if not succeeded:  # the connection left as cleared whatever the address (the next request's start alike)
        tenant_context_reset()


def tenant_entered_record(*, membership: Membership, address: str = "") -> None:
    """A signed-in person entered ``membership``'s tenant in the console (given their only one after
    signing in, or chosen): the ``sign_in`` record of that tenant, best effort."""
    audit_record_read(action=Action.SIGN_IN, actor=membership, details={"address": address})
