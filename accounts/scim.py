"""SCIM 2.0 provisioning of a tenant's members and groups by its identity provider (RFC 7643/7644).

Schemas, messages, filters and PATCH operations are ``scim2-models``' (parsed and applied there,
under :data:`SCIM_POLICY`, which accepts what Microsoft Entra ID and Okta send: ``"op": "Replace"``,
``"active": "False"``, a ``remove`` whose ``value`` names the members to remove, a filtered path
that matches nothing yet). What is mapped where:

* a SCIM **User** is a membership of the token's tenant (its ``id`` the membership's); its e-mail
  (``userName`` when it is an address, else the primary e-mail) names the Bulkhead user, who is
  created if new and is **never changed**: other tenants share that user, so a provider that
  changes an address moves the membership to the user of the new address instead (an account
  takeover through an e-mail change would otherwise be one PATCH away) -- and, another person's now,
  the membership loses its single sign-on links and its API tokens are revoked. An address whose
  account belongs to another tenant is answered as a new one, but its membership is not the person's
  consent (``Membership.consented``): it works in this tenant's single sign-on sessions alone. ``active`` is the
  membership's (but a membership holding more than SCIM gives is not reactivated: that is an admin's, in
  the console); ``DELETE`` removes the membership. Both end its sessions' and tokens' authority
  at their next request (nothing of it is cached), and deactivating revokes its API tokens: a member
  reactivated later needs new ones. New members are viewers with
  ``BULKHEAD_SCIM_CLEARANCE`` (default ``public``, the lowest): provisioning never sets a role or a
  clearance -- an admin does, in the console.
* a SCIM **Group** is a group of the tenant; ``members`` are membership ids of the tenant (any
  other id is refused, naming it). A new group's slug is its ``displayName`` slugified; a slug
  the tenant already has is a 409. Only groups made over SCIM can be deleted over SCIM.

The token's tenant is the only tenant any of this sees (the tenant wall holds it too).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify
from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    Context,
    Email,
    ETag,
    Filter,
    GroupMember,
    GroupMembership,
    ListResponse,
    Meta,
    Name,
    Patch,
    PatchOp,
    ResourceType,
    ScimFilter,
    ScimPolicy,
    ServiceProviderConfig,
    Sort,
)
from scim2_models import Group as ScimGroup
from scim2_models import User as ScimUser
from scim2_models.exceptions import (
    ConflictException,
    ForbiddenException,
    InvalidValueException,
    NotFoundException,
    UniquenessException,
)

from accounts.models import Group, Membership, MemberSource, Role, ScimToken, Tenant, User
from accounts.models import GroupMembership as GroupLink
from accounts.policy import AccessLevel
from accounts.services import (
    account_belongs_elsewhere,
    last_active_admin,
    may_mint,
    membership_deactivated_revoke,
    membership_delete_recorded_by_caller,
    membership_identity_reset,
    parse_level,
    tokens_minted_by_revoke,
    user_for_address,
)
from accounts.tenancy import tenant_activate_for_scim_token
from audit.models import Action
from audit.services import audit_record

SCIM_POLICY = ScimPolicy(unknown="ignore", remove_value_as_filter="apply", unmatched_path_filter="create")
MAX_RESULTS = 200  # the most resources one list answers (ServiceProviderConfig's filter.maxResults)
TOKEN_PREFIX = "bks"

# The attributes this service keeps: the discovery endpoints publish these alone, so a client
# (and the conformance checker) knows nothing else is stored.
USER_ATTRIBUTES = {"userName": None, "name": {"givenName", "familyName", "formatted"}, "displayName": None,
                   "active": None, "emails": {"value", "type", "primary"}, "groups": {"value", "$ref", "display",
                                                                                     "type"}}
GROUP_ATTRIBUTES = {"displayName": None, "members": {"value", "$ref", "type"}}


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


# ----------------------------------------------------------------------------- tokens


def _token_view(token: ScimToken) -> dict:
    return {"prefix": token.prefix, "name": token.name}


@transaction.atomic
def scim_token_create(*, tenant: Tenant, name: str = "", actor: Membership | None = None) -> tuple[ScimToken, str]:
    """A new SCIM bearer token of ``tenant``; returns it with the clear key, which is shown once."""
    prefix = secrets.token_hex(4)
    key = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    token = ScimToken.objects.create(tenant=tenant, name=name[:100], prefix=prefix, key_hash=_hash(key),
                                     created_by=actor)
    audit_record(action=Action.SCIM_TOKEN_CREATE, actor=actor, tenant_id=tenant.pk, target_type="scim_token",
                 target_id=token.pk, details={"after": _token_view(token)})
    return token, key


def scim_token_list(*, tenant: Tenant):
    return ScimToken.objects.filter(tenant=tenant).select_related("created_by__user").order_by("-created_at", "-id")


@transaction.atomic
def scim_token_revoke(*, tenant: Tenant, token_id: int, actor: Membership | None = None) -> ScimToken | None:
    """Revoke one of the tenant's SCIM tokens (None: no such token of the tenant). Idempotent."""
    token = ScimToken.objects.filter(tenant=tenant).select_for_update().filter(pk=token_id).first()
    if token is not None and token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(action=Action.SCIM_TOKEN_REVOKE, actor=actor, tenant_id=tenant.pk, target_type="scim_token",
                     target_id=token.pk, details={"before": _token_view(token)})
    return token


def scim_token_authenticate(key: str) -> ScimToken | None:
    """The live SCIM token of a bearer key (its tenant then acted for), or None."""
    parts = key.split("_", 2)  # the random part may hold "_" itself
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        return None
    digest = _hash(key)
    if tenant_activate_for_scim_token(digest) is None:
        return None
    token = ScimToken.objects.select_related("tenant", "created_by__user").filter(
        prefix=parts[1], revoked_at__isnull=True).filter(key_hash=digest).first()
    if token is None or not secrets.compare_digest(token.key_hash, digest):
        return None
    # A token an admin minted works while they are an active admin (it is revoked when they stop being
    # one; this holds for what bypasses that). None: minted on the server (kb_tenant).
    if token.created_by_id is not None and not may_mint(token.created_by, token.tenant_id):
        return None
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ScimToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


# ----------------------------------------------------------------------------- discovery


def service_provider_config(base: str) -> ServiceProviderConfig:
    return ServiceProviderConfig(
        documentation_uri=None,
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[AuthenticationScheme(
            type="oauthbearertoken", name="Bearer token",
            description="A tenant's SCIM token, minted by an admin in the console or by `manage.py kb_tenant "
                        "scim-token TENANT`.", primary=True)],
        meta=Meta(resource_type="ServiceProviderConfig", location=f"{base}/ServiceProviderConfig"),
    )


def _trimmed_schema(model, keep: dict, base: str):
    schema = model.to_schema()
    attributes = []
    for attribute in schema.attributes:
        if attribute.name not in keep:
            continue
        subs = keep[attribute.name]
        if subs is not None and attribute.sub_attributes:
            attribute.sub_attributes = [s for s in attribute.sub_attributes if s.name in subs]
        if attribute.name == "emails":  # a member is an e-mail address here: one is required
            attribute.required = True
            for sub in attribute.sub_attributes or []:
                sub.required = sub.required or sub.name == "value"
        attributes.append(attribute)
    schema.attributes = attributes
    schema.meta = Meta(resource_type="Schema", location=f"{base}/Schemas/{schema.id}")
    return schema


def schemas(base: str) -> list:
    return [_trimmed_schema(ScimUser, USER_ATTRIBUTES, base), _trimmed_schema(ScimGroup, GROUP_ATTRIBUTES, base)]


def resource_types(base: str) -> list[ResourceType]:
    found = []
    for model in (ScimUser, ScimGroup):
        resource_type = ResourceType.from_resource(model)
        resource_type.meta = Meta(resource_type="ResourceType", location=f"{base}/ResourceTypes/{resource_type.id}")
        found.append(resource_type)
    return found


# ----------------------------------------------------------------------------- users


def _user_name(membership: Membership) -> str:
    return membership.scim_profile.get("userName") or membership.user.email


def user_resource(membership: Membership, base: str, groups: list[Group] | None = None) -> ScimUser:
    profile = membership.scim_profile
    groups = list(membership.groups.all()) if groups is None else groups
    name = profile.get("name") or {}
    return ScimUser(
        id=str(membership.pk), external_id=profile.get("externalId") or None, user_name=_user_name(membership),
        name=Name(given_name=name.get("givenName"), family_name=name.get("familyName"),
                  formatted=name.get("formatted")) if name else None,
        display_name=profile.get("displayName") or None,
        active=None if profile.get("activeRemoved") and not membership.is_active else membership.is_active,
        emails=[Email(**{k: v for k, v in e.items() if k in ("value", "type", "primary")})
                for e in profile.get("emails") or []] or [Email(value=membership.user.email, primary=True)],
        groups=[GroupMembership(value=str(g.pk), display=g.name or g.slug, ref=f"{base}/Groups/{g.pk}")
                for g in groups] or None,
        meta=Meta(resource_type="User", created=membership.created_at,
                  last_modified=membership.updated_at or membership.created_at,
                  location=f"{base}/Users/{membership.pk}"),
    )


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email_of(resource: ScimUser) -> str:
    """The Bulkhead user a SCIM user names: ``userName`` when it is an address, else the primary (or
    only) e-mail. None of them: 400."""
    candidates = [resource.user_name or ""]
    emails = resource.emails or []
    candidates += [e.value for e in emails if e.primary] + [e.value for e in emails]
    for candidate in candidates:
        if candidate and _EMAIL.match(candidate.strip()):
            return candidate.strip().lower()
    raise InvalidValueException(detail="a member needs an e-mail address: userName or emails")


def _profile(resource: ScimUser) -> dict:
    dumped = resource.model_dump(scim_ctx=Context.RESOURCE_REPLACEMENT_REQUEST)
    profile = {key: dumped[key] for key in ("userName", "externalId", "name", "displayName", "emails") if key in dumped}
    if resource.active is None:
        profile["activeRemoved"] = True
    return profile


def _user_memberships(tenant: Tenant):
    return Membership.objects.filter(tenant=tenant).select_related("user").prefetch_related("groups")


def _name_taken(tenant: Tenant, user_name: str, *, besides: int | None = None) -> bool:
    lowered = user_name.lower()
    rows = _user_memberships(tenant).exclude(pk=besides).filter(
        Q(user__email=lowered) | Q(scim_profile__userName__iexact=user_name))
    return rows.exists()


def _view(membership: Membership) -> dict:
    return {"email": membership.user.email, "user_name": _user_name(membership), "is_active": membership.is_active,
            "role": membership.role, "clearance": AccessLevel(membership.clearance).label}


def _last_admin_guard(membership: Membership) -> None:
    if last_active_admin(membership):
        raise ConflictException(detail="this is the tenant's last active admin; an admin changes that in the console")


def _beyond_scim_guard(membership: Membership, *, what: str = "move it to another address",
                       who: str = "an admin changes the address in the console") -> None:
    """Refuse to move a membership holding more than SCIM gives (a role above viewer, a clearance above
    ``BULKHEAD_SCIM_CLEARANCE``) to another address: SCIM never sets a role or a clearance, and moving
    one an admin set would hand it to whoever owns the new address (found attacking SCIM: a leaked
    token renamed the admin's membership to the attacker's address). Nor to bring one back (``active``
    true): that would give back a role the admins took away (found attacking identity: a rogue admin,
    deactivated in the console, reactivated themselves with the SCIM token they had minted)."""
    if membership.role != Role.VIEWER or membership.clearance > parse_level(settings.BULKHEAD_SCIM_CLEARANCE):
        raise ConflictException(detail=f"this member's role or clearance was set by an admin, so SCIM does not "
                                       f"{what}; {who}")


def user_list(*, tenant: Tenant, filter_text: str | None, start: int, count: int, base: str):
    """The tenant's members as SCIM users, filtered and paged: (total, page)."""
    rows = _user_memberships(tenant).order_by("pk")
    if filter_text:
        scim_filter = ScimFilter[ScimUser](filter_text)
        quick = re.fullmatch(r'\s*userName\s+eq\s+"((?:[^"\\]|\\.)*)"\s*', filter_text, flags=re.IGNORECASE)
        if quick:  # what identity providers send before every create: by the index, not by reading everyone
            value = quick.group(1)
            rows = rows.filter(Q(user__email=value.lower()) | Q(scim_profile__userName__iexact=value))
        matched = [r for r in (user_resource(m, base) for m in rows) if scim_filter.match(r)]
    else:
        matched = None
    if matched is not None:
        return len(matched), matched[start - 1:start - 1 + count]
    total = rows.count()
    return total, [user_resource(m, base) for m in rows[start - 1:start - 1 + count]]


def user_get(*, tenant: Tenant, user_id: str) -> Membership:
    membership = _user_memberships(tenant).filter(pk=_pk(user_id)).first() if _pk(user_id) else None
    if membership is None:
        raise NotFoundException(detail=f"no user {user_id}")
    return membership


def _pk(value: str) -> int | None:
    return int(value) if value and value.isdigit() and 0 < int(value) < 2**63 else None


def _user_for(email: str) -> User:
    """The user of ``email``, created (without a password) if new; an existing one is never changed. The same
    database calls either way (``accounts.services.user_for_address``): the provider cannot time the difference."""
    return user_for_address(email)


@transaction.atomic
def user_create(*, tenant: Tenant, resource: ScimUser) -> Membership:
    email = _email_of(resource)
    user_name = resource.user_name or email
    if _name_taken(tenant, user_name) or _name_taken(tenant, email):
        raise UniquenessException(detail=f"userName {user_name!r} is already a member of this tenant")
    user = _user_for(email)
    # Another tenant's account joins by the person's consent alone (found by an attack on the demo: a tenant
    # enrolled another's member and received their failed sign-ins): the membership is made -- the answer and
    # the state are the same as for a new address, so the provider learns nothing of the account -- but not
    # agreed to, so it works in this tenant's single sign-on sessions only (Membership.consented).
    membership = Membership.objects.create(
        user=user, tenant=tenant, role=Role.VIEWER, source=MemberSource.SCIM,
        consented=not account_belongs_elsewhere(user, tenant.pk),
        clearance=parse_level(settings.BULKHEAD_SCIM_CLEARANCE), is_active=resource.active is not False,
        scim_profile={k: v for k, v in _profile(resource).items() if k != "activeRemoved"},
    )
    audit_record(action=Action.MEMBERSHIP_CREATE, actor=None, tenant_id=tenant.pk, target_type="membership",
                 target_id=membership.pk, details={"via": "scim", "after": _view(membership)})
    return membership


@transaction.atomic
def user_replace(*, membership: Membership, resource: ScimUser) -> Membership:
    """Make the membership what ``resource`` says (PUT, and a PATCH once applied)."""
    membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
    before = _view(membership)
    email = _email_of(resource)
    user_name = resource.user_name or email
    if _name_taken(membership.tenant, user_name, besides=membership.pk) or _name_taken(
            membership.tenant, email, besides=membership.pk):
        raise UniquenessException(detail=f"userName {user_name!r} is already a member of this tenant")
    moved = {}
    if email != membership.user.email:  # the membership moves to that address's user; no user changes
        _beyond_scim_guard(membership)
        membership.user = _user_for(email)
        membership.consented = not account_belongs_elsewhere(membership.user, membership.tenant_id)
        # Another person now: the old one's link at the provider and the keys they hold end here.
        moved = membership_identity_reset(membership=membership, actor=None, reason="its member's address changed")
    active = resource.active is True  # "active" removed by a replace or a patch: inactive (closed)
    deactivated = membership.is_active and not active
    if deactivated:
        _last_admin_guard(membership)
    if active and not membership.is_active:
        _beyond_scim_guard(membership, what="reactivate it", who="an admin reactivates that person in the console")
    membership.is_active = active
    membership.scim_profile = _profile(resource)
    membership.save()
    after = _view(membership)
    if after != before:
        audit_record(action=Action.MEMBERSHIP_UPDATE, actor=None, tenant_id=membership.tenant_id,
                     target_type="membership", target_id=membership.pk,
                     details={"via": "scim", "before": before, "after": after, **moved})
    if deactivated:
        membership_deactivated_revoke(membership=membership, actor=None)
    return membership


@transaction.atomic
def user_patch(*, membership: Membership, patch: dict, base: str) -> Membership:
    """Apply a PATCH to the membership as it is now: its row is locked **before** it is read, so the operations
    apply to what another request (a PATCH, a PUT, the console) committed meanwhile, never to what this request
    read before. Found attacking identity (twenty-first session): the resource was built from the view's row and
    written back whole once ``user_replace`` had the lock -- a person deprovisioned while a PATCH of their
    display name was in flight was active again."""
    with SCIM_POLICY:
        operations = PatchOp[ScimUser].model_validate(patch, scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        membership = _user_memberships(membership.tenant).select_for_update(of=("self",)).filter(
            pk=membership.pk).first()
        if membership is None:  # removed meanwhile
            raise NotFoundException(detail="no such user")
        resource = user_resource(membership, base)
        operations.patch(resource)
    return user_replace(membership=membership, resource=resource)


@transaction.atomic
def user_delete(*, membership: Membership) -> None:
    membership = Membership.objects.select_for_update().select_related("user").get(pk=membership.pk)
    _last_admin_guard(membership)
    before = _view(membership)
    pk, tenant_id = membership.pk, membership.tenant_id
    tokens_minted_by_revoke(membership=membership, actor=None, reason="its minter was removed")
    with membership_delete_recorded_by_caller():  # below, with ``via``
        membership.delete()
    audit_record(action=Action.MEMBERSHIP_DELETE, actor=None, tenant_id=tenant_id, target_type="membership",
                 target_id=pk, details={"via": "scim", "before": before})


# ----------------------------------------------------------------------------- groups


def group_resource(group: Group, base: str) -> ScimGroup:
    members = list(Membership.objects.filter(groupmembership__group=group).order_by("pk"))
    return ScimGroup(
        id=str(group.pk), external_id=group.scim_external_id or None, display_name=group.name or group.slug,
        members=[GroupMember(value=str(m.pk), type="User", ref=f"{base}/Users/{m.pk}")
                 for m in members] or None,
        meta=Meta(resource_type="Group", created=group.created_at, last_modified=group.created_at,
                  location=f"{base}/Groups/{group.pk}"),
    )


def group_list(*, tenant: Tenant, filter_text: str | None, start: int, count: int, base: str):
    rows = Group.objects.filter(tenant=tenant).order_by("pk")
    if filter_text:
        scim_filter = ScimFilter[ScimGroup](filter_text)
        quick = re.fullmatch(r'\s*displayName\s+eq\s+"((?:[^"\\]|\\.)*)"\s*', filter_text, flags=re.IGNORECASE)
        if quick:
            value = quick.group(1)
            rows = rows.filter(Q(name__iexact=value) | Q(slug__iexact=value))
        matched = [r for r in (group_resource(g, base) for g in rows) if scim_filter.match(r)]
        return len(matched), matched[start - 1:start - 1 + count]
    return rows.count(), [group_resource(g, base) for g in rows[start - 1:start - 1 + count]]


def group_get(*, tenant: Tenant, group_id: str) -> Group:
    group = Group.objects.filter(tenant=tenant, pk=_pk(group_id)).first() if _pk(group_id) else None
    if group is None:
        raise NotFoundException(detail=f"no group {group_id}")
    return group


def _members_of(tenant: Tenant, resource: ScimGroup) -> list[Membership]:
    """The memberships a group resource names: ids of this tenant's memberships, every one of them."""
    wanted = [m.value for m in resource.members or [] if m.value is not None]
    ids = {_pk(str(v)) for v in wanted}
    found = {m.pk: m for m in Membership.objects.filter(tenant=tenant, pk__in=[i for i in ids if i])}
    unknown = sorted(str(v) for v in wanted if _pk(str(v)) not in found)
    if unknown:
        raise InvalidValueException(detail=f"no member of this tenant has the id {', '.join(unknown)}")
    return list(found.values())


def _set_members(group: Group, members: list[Membership]) -> dict:
    before = set(GroupLink.objects.filter(group=group).values_list("membership_id", flat=True))
    after = {m.pk for m in members}
    GroupLink.objects.filter(group=group, membership_id__in=before - after).delete()
    GroupLink.objects.bulk_create([GroupLink(group=group, membership_id=pk) for pk in sorted(after - before)])
    return {"added": sorted(after - before), "removed": sorted(before - after)}


def _group_view(group: Group) -> dict:
    return {"slug": group.slug, "name": group.name}


@transaction.atomic
def group_create(*, tenant: Tenant, resource: ScimGroup) -> Group:
    name = (resource.display_name or "").strip()
    slug = slugify(name)[:63].strip("-")
    if not slug:
        raise InvalidValueException(detail="displayName must hold letters or digits")
    if Group.objects.filter(tenant=tenant, slug=slug).exists():
        raise UniquenessException(detail=f"this tenant already has a group {slug!r}")
    members = _members_of(tenant, resource)
    group = Group.objects.create(tenant=tenant, slug=slug, name=name[:200], source="scim",
                                 scim_external_id=(resource.external_id or "")[:255])
    changes = _set_members(group, members)
    audit_record(action=Action.GROUP_CREATE, actor=None, tenant_id=tenant.pk, target_type="group", target_id=group.pk,
                 details={"via": "scim", "after": _group_view(group), "members": changes})
    return group


@transaction.atomic
def group_replace(*, group: Group, resource: ScimGroup) -> Group:
    group = Group.objects.select_for_update().get(pk=group.pk)
    before = _group_view(group)
    name = (resource.display_name or "").strip()
    if not name:
        raise InvalidValueException(detail="displayName is required")
    members = _members_of(group.tenant, resource)
    group.name = name[:200]
    group.scim_external_id = (resource.external_id or "")[:255]
    group.save(update_fields=["name", "scim_external_id"])
    changes = _set_members(group, members)
    if changes["added"] or changes["removed"] or before != _group_view(group):
        audit_record(action=Action.GROUP_UPDATE, actor=None, tenant_id=group.tenant_id, target_type="group",
                     target_id=group.pk, details={"via": "scim", "before": before, "after": _group_view(group),
                                                  "members": changes})
    return group


@transaction.atomic
def group_patch(*, group: Group, patch: dict, base: str) -> Group:
    """Apply a PATCH to the group as it is now: its row is locked **before** its members are read, so the
    operations apply to what another SCIM request committed meanwhile. Found attacking identity (twenty-first
    session): the members were read without a lock and written back whole once ``group_replace`` had it -- a
    member removed while a PATCH adding another was in flight was back in the group."""
    with SCIM_POLICY:
        operations = PatchOp[ScimGroup].model_validate(patch, scim_ctx=Context.RESOURCE_PATCH_REQUEST)
        group = Group.objects.select_for_update().filter(pk=group.pk).first()
        if group is None:  # deleted meanwhile
            raise NotFoundException(detail="no such group")
        resource = group_resource(group, base)
        operations.patch(resource)
    return group_replace(group=group, resource=resource)


@transaction.atomic
def group_delete(*, group: Group) -> None:
    if group.source != "scim":
        raise ForbiddenException(detail="this group was made in Bulkhead, not over SCIM; it is not deleted here")
    before = _group_view(group)
    pk, tenant_id = group.pk, group.tenant_id
    group.delete()
    audit_record(action=Action.GROUP_DELETE, actor=None, tenant_id=tenant_id, target_type="group", target_id=pk,
                 details={"via": "scim", "before": before})


@dataclass(frozen=True)
class Page:
    total: int
    start: int
    resources: list

    def response(self, model, **dump):
        listed = ListResponse[model](total_results=self.total, start_index=self.start,
                                     items_per_page=len(self.resources), resources=self.resources or None)
        return listed.model_dump(scim_ctx=Context.RESOURCE_QUERY_RESPONSE, **dump)
