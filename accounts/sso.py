"""Single sign-on with a tenant's OpenID provider (OpenID Connect), and the claims-to-membership rule.

The protocol is Authlib's (``authlib.integrations.django_client``): discovery, the authorization code
flow with PKCE (S256), ``state`` and ``nonce`` kept in the session and checked once, the code exchanged
with the verifier, and the ID token validated -- signature against the provider's JWKS, ``iss`` equal
to the issuer the tenant configured (and that its discovery document names), ``aud`` the client id,
``exp``/``iat`` (Authlib's 120 s leeway), ``nonce``. Nothing here decodes a JWT.

What a validated ID token may do (:func:`sso_decide`), failing closed:

* **Admission**: the e-mail must be verified (``email_verified`` true) and either in one of the
  tenant's ``admit_domains`` or the ``admit_claim`` must hold one of ``admit_values``. With neither
  configured, no one is admitted.
* **Groups**: the provider's groups (``groups_claim``) count only through the tenant's ``group_map``
  (provider group -> Bulkhead group slugs *of this tenant*): a provider cannot name a Bulkhead group,
  let alone another tenant's. Every mapped group is managed by the provider: at each sign-in the
  membership is put in exactly the mapped groups the claims name (removed from the others). Groups
  no mapping names are left alone.
* **Clearance**: the highest level that ``clearance_map`` gives to the ``clearance_claim``'s value or
  to one of the provider's groups; none: the lowest (``public``). Applied at every sign-in. The role
  is never set by the provider: a new member is a viewer.

A returning person is found by the link (tenant, issuer, subject), never by the e-mail the provider
sends that time; a first sign-in links the membership of the verified address (created just in time,
source ``sso``). A deactivated membership is refused. The session it makes acts for that tenant only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from accounts.errors import ApplicationError, PermissionRefused
from accounts.models import Group, GroupMembership, Membership, MemberSource, Role, SsoConfig, SsoIdentity, Tenant
from accounts.policy import LEVEL_NAMES, AccessLevel
from accounts.services import account_belongs_elsewhere, parse_level, user_for_address
from audit.models import Action
from audit.services import audit_record

SESSION_TENANT_KEY = "sso_tenant_id"  # a session made by single sign-on acts for this tenant alone


@dataclass(frozen=True)
class Decision:
    admitted: bool
    reason: str  # why not, when not
    email: str = ""
    clearance: AccessLevel = AccessLevel.PUBLIC
    group_slugs: frozenset[str] = frozenset()  # the mapped groups the person is in now
    managed_slugs: frozenset[str] = frozenset()  # every group the mapping names


def _as_list(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if isinstance(v, (str, int))]
    return [str(value)] if isinstance(value, (str, int)) else []


def sso_decide(config: SsoConfig, claims: dict) -> Decision:
    """What a validated ID token's claims grant in ``config``'s tenant (see the module's rule)."""
    email = str(claims.get("email") or "").strip().lower()
    if "@" not in email:
        return Decision(False, "the provider sent no e-mail address")
    if claims.get("email_verified") is not True:
        return Decision(False, "the provider did not say the e-mail address is verified", email)
    domain = email.rsplit("@", 1)[1]
    by_domain = domain in {d.strip().lower() for d in config.admit_domains if d.strip()}
    by_claim = bool(config.admit_claim) and bool(
        set(_as_list(claims.get(config.admit_claim))) & {v for v in config.admit_values if v})
    if not (by_domain or by_claim):
        return Decision(False, "not admitted: neither the e-mail's domain nor an admitting claim", email)
    provider_groups = set(_as_list(claims.get(config.groups_claim))) if config.groups_claim else set()
    group_map = config.group_map or {}
    managed = frozenset(slug for slugs in group_map.values() for slug in _as_list(slugs))
    mapped = frozenset(slug for name, slugs in group_map.items() if name in provider_groups
                       for slug in _as_list(slugs))
    levels = [AccessLevel.PUBLIC]
    clearance_map = config.clearance_map or {}
    keys = set(provider_groups)
    if config.clearance_claim:
        keys |= set(_as_list(claims.get(config.clearance_claim)))
    for key in keys:
        if key in clearance_map:
            levels.append(parse_level(str(clearance_map[key])))
    return Decision(True, "", email, max(levels), mapped, managed)


def sso_config_validate(*, tenant: Tenant, group_map: dict, clearance_map: dict) -> None:
    """Refuse (400, naming it) a mapping to a group the tenant does not have, or to an unknown level."""
    if not isinstance(group_map, dict) or not isinstance(clearance_map, dict):
        raise ApplicationError("the group and clearance mappings are JSON objects")
    wanted = {slug for slugs in group_map.values() for slug in _as_list(slugs)}
    if any(not isinstance(v, (str, list)) for v in group_map.values()):
        raise ApplicationError("each provider group maps to a group slug or a list of them")
    known = set(Group.objects.filter(tenant=tenant, slug__in=wanted).values_list("slug", flat=True))
    if wanted - known:
        raise ApplicationError(f"unknown group in the mapping: {', '.join(sorted(wanted - known))}",
                               code="unknown_group")
    for key, level in clearance_map.items():
        if str(level) not in LEVEL_NAMES:
            raise ApplicationError(f"clearance mapping {key!r}: unknown level {level!r}; expected one of "
                                   f"{', '.join(LEVEL_NAMES)}", code="unknown_access_level")


@transaction.atomic
def sso_config_save(*, tenant: Tenant, actor: Membership | None, **fields) -> SsoConfig:
    """Create or change the tenant's sign-on settings (an empty ``client_secret`` keeps the stored one)."""
    sso_config_validate(tenant=tenant, group_map=fields.get("group_map") or {},
                        clearance_map=fields.get("clearance_map") or {})
    config = SsoConfig.objects.select_for_update().filter(tenant=tenant).first() or SsoConfig(tenant=tenant)
    before = _config_view(config) if config.pk else None
    secret = fields.pop("client_secret", "")
    for name, value in fields.items():
        setattr(config, name, value)
    if secret:
        config.client_secret = secret
    config.issuer = config.issuer.rstrip("/")
    config.save()
    audit_record(action=Action.SSO_SETTINGS, actor=actor, tenant_id=tenant.pk, target_type="sso", target_id=config.pk,
                 details={"before": before, "after": _config_view(config)})
    return config


def _config_view(config: SsoConfig) -> dict:
    return {"enabled": config.enabled, "issuer": config.issuer, "client_id": config.client_id,
            "admit_domains": list(config.admit_domains), "admit_claim": config.admit_claim,
            "admit_values": list(config.admit_values), "groups_claim": config.groups_claim,
            "group_map": config.group_map, "clearance_claim": config.clearance_claim,
            "clearance_map": config.clearance_map, "secret_set": bool(config.client_secret)}


def sso_offered() -> bool:
    """Whether any tenant has single sign-on on (before any tenant is known; a boolean and nothing else)."""
    from django.db import connections

    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT bulkhead_sso_offered()")
        return bool(cursor.fetchone()[0])


def sso_config_for(tenant: Tenant) -> SsoConfig | None:
    """The tenant's enabled sign-on settings (the tenant must be acted for), or None."""
    return SsoConfig.objects.filter(tenant=tenant, enabled=True).first()


def _sign_in_failed(tenant: Tenant, email: str, reason: str, address: str) -> None:
    from audit.services import audit_record_read

    audit_record_read(action=Action.SIGN_IN_FAILED, tenant_id=tenant.pk, actor_email=email[:254],
                      details={"address": address, "method": "sso", "reason": reason})


@transaction.atomic
def sso_sign_in(*, config: SsoConfig, claims: dict, address: str = "") -> Membership:
    """The membership a validated ID token signs into, created or updated by the rule; PermissionRefused
    (recorded in the tenant's trail) when it admits no one."""
    tenant = config.tenant
    issuer, subject = str(claims.get("iss") or ""), str(claims.get("sub") or "")
    if not issuer or not subject:
        raise PermissionRefused("the ID token names no issuer or subject")
    decision = sso_decide(config, claims)
    if not decision.admitted:
        transaction.on_commit(lambda: _sign_in_failed(tenant, decision.email, decision.reason, address))
        raise PermissionRefused(decision.reason)
    link = SsoIdentity.objects.select_related("membership__user").filter(
        tenant=tenant, issuer=issuer, subject=subject).first()
    if link is not None:
        membership = link.membership
    else:
        user = user_for_address(decision.email)  # the same calls for a new address and an account
        membership = Membership.objects.filter(tenant=tenant, user=user).first()
        if membership is None:
            # The provider vouches for the person here only: for another tenant's account, the membership
            # is not the person's consent (it works in this tenant's single sign-on sessions alone).
            membership = Membership.objects.create(user=user, tenant=tenant, role=Role.VIEWER,
                                                   clearance=decision.clearance, source=MemberSource.SSO,
                                                   consented=not account_belongs_elsewhere(user, tenant.pk))
            audit_record(action=Action.MEMBERSHIP_CREATE, actor=None, tenant_id=tenant.pk, target_type="membership",
                         target_id=membership.pk, details={"via": "sso", "after": {"email": decision.email}})
        elif SsoIdentity.objects.filter(membership=membership, issuer=issuer).exists():
            # The address's membership is linked to another subject of this provider: not this person.
            transaction.on_commit(lambda: _sign_in_failed(tenant, decision.email, "linked to another subject",
                                                          address))
            raise PermissionRefused("this address belongs to another account at your identity provider")
        link = SsoIdentity.objects.create(tenant=tenant, issuer=issuer, subject=subject, membership=membership)
    membership = Membership.objects.select_for_update(no_key=True).select_related("user", "tenant").get(pk=membership.pk)
    if not membership.is_active or not membership.user.is_active:
        transaction.on_commit(lambda: _sign_in_failed(tenant, decision.email, "membership inactive", address))
        raise PermissionRefused("your membership of this tenant is not active")
    _apply(membership, decision)
    SsoIdentity.objects.filter(pk=link.pk).update(last_sign_in_at=timezone.now())
    return membership


def _apply(membership: Membership, decision: Decision) -> None:
    """The groups the provider manages, and the clearance, as this sign-in's claims say."""
    before = {"clearance": AccessLevel(membership.clearance).label,
              "groups": sorted(membership.groups.values_list("slug", flat=True))}
    if membership.clearance != decision.clearance:
        membership.clearance = decision.clearance
        membership.save(update_fields=["clearance"])
    # The managed groups locked (id order) before their members change, as a SCIM group write locks its group
    # (``accounts.services.membership_set_groups`` says why).
    managed = {g.slug: g for g in Group.objects.select_for_update().filter(
        tenant_id=membership.tenant_id, slug__in=decision.managed_slugs).order_by("pk")}
    current = set(GroupMembership.objects.filter(membership=membership, group__in=managed.values())
                  .values_list("group__slug", flat=True))
    wanted = {slug for slug in decision.group_slugs if slug in managed}
    GroupMembership.objects.filter(membership=membership, group__slug__in=current - wanted,
                                   group__tenant_id=membership.tenant_id).delete()
    GroupMembership.objects.bulk_create([GroupMembership(membership=membership, group=managed[s])
                                         for s in sorted(wanted - current)])
    after = {"clearance": AccessLevel(membership.clearance).label,
             "groups": sorted(membership.groups.values_list("slug", flat=True))}
    if after != before:
        audit_record(action=Action.MEMBERSHIP_UPDATE, actor=None, tenant_id=membership.tenant_id,
                     target_type="membership", target_id=membership.pk,
                     details={"via": "sso", "before": before, "after": after})


# ----------------------------------------------------------------------------- the protocol (Authlib)


def _pinned_app(url_check: Callable[[str], str | None]):
    """Authlib's Django client whose every request connects to the address ``url_check`` returned for its
    URL (after checking it; None: any address is allowed, and the request connects by name): the provider's name is resolved once per request, by the check, and never
    again by the HTTP library -- a DNS answer that changes between the check and the connection (DNS
    rebinding: public for the check, internal for the fetch) cannot lead the server into its own network.
    TLS still verifies the certificate against the provider's name (SNI and hostname check)."""
    from urllib.parse import urlsplit

    from authlib.integrations.django_client import DjangoOAuth2App
    from authlib.integrations.requests_client import OAuth2Session
    from requests.adapters import HTTPAdapter

    class PinnedAdapter(HTTPAdapter):
        def send(self, request, *args, **kwargs):
            request.headers["Host"] = urlsplit(request.url).netloc.rsplit("@", 1)[-1]
            return super().send(request, *args, **kwargs)

        def build_connection_pool_key_attributes(self, request, verify, cert=None):
            host_params, pool_kwargs = super().build_connection_pool_key_attributes(request, verify, cert)
            name, address = host_params["host"], url_check(request.url)
            if address is None:  # any address allowed: connect by name
                return host_params, pool_kwargs
            host_params["host"] = address
            if host_params["scheme"] == "https":
                pool_kwargs["server_hostname"] = name
                pool_kwargs["assert_hostname"] = name
            return host_params, pool_kwargs

    class PinnedSession(OAuth2Session):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            adapter = PinnedAdapter()
            self.mount("http://", adapter)
            self.mount("https://", adapter)

    class PinnedApp(DjangoOAuth2App):
        client_cls = PinnedSession

    return PinnedApp


def oidc_client(config: SsoConfig, url_check: Callable[[str], str | None]):
    """An Authlib client of the tenant's provider: discovery, PKCE (S256), state and nonce; each request
    connects to the address ``url_check`` returns for its URL (checked then: :func:`_pinned_app`)."""
    from authlib.integrations.django_client import OAuth

    oauth = OAuth()
    return oauth.register(
        name=f"tenant{config.tenant_id}", client_cls=_pinned_app(url_check),
        client_id=config.client_id, client_secret=config.client_secret or None,
        server_metadata_url=f"{config.issuer}/.well-known/openid-configuration",
        # max_redirects=0: a redirect the provider answers is refused, never followed -- the address it names
        # would be fetched without the check the issuer and its endpoints pass (found attacking SSO).
        client_kwargs={"scope": config.scopes or "openid email profile", "code_challenge_method": "S256",
                       "timeout": 10, "max_redirects": 0},
    )


def oidc_check_metadata(client, config: SsoConfig, url_check: Callable[[str], str | None]) -> dict:
    """The provider's discovery document, refused unless it names the configured issuer (a provider
    answering for another issuer is a mix-up) and offers the code flow and a JWKS. ``url_check`` (which
    raises :class:`ApplicationError`) passes the issuer before anything is fetched, and the endpoints the
    server then fetches (the token endpoint, the JWKS) before they are: a tenant's admin types the issuer,
    so it must not lead the server into its own network (found attacking SSO)."""
    from requests import TooManyRedirects

    url_check(config.issuer)
    try:
        metadata = client.load_server_metadata()
    except TooManyRedirects as exc:
        raise ApplicationError("the provider's discovery document answered with a redirect: give the issuer "
                               "it redirects to (redirects are not followed)") from exc
    if str(metadata.get("issuer", "")).rstrip("/") != config.issuer.rstrip("/"):
        raise ApplicationError(f"the provider's discovery document names the issuer {metadata.get('issuer')!r}, "
                               f"not {config.issuer!r}")
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not metadata.get(key):
            raise ApplicationError(f"the provider's discovery document has no {key}")
    for key in ("token_endpoint", "jwks_uri"):
        url_check(str(metadata[key]))
    return metadata


def oidc_test_connection(config: SsoConfig, url_check: Callable[[str], str | None]) -> dict:
    """The console's "test the connection": discovery, the issuer check, the signing keys."""
    client = oidc_client(config, url_check)
    metadata = oidc_check_metadata(client, config, url_check)
    keys = client.fetch_jwk_set(force=True).get("keys") or []
    if not keys:
        raise ApplicationError("the provider publishes no signing keys (jwks_uri is empty)")
    return {"issuer": metadata["issuer"], "authorization_endpoint": metadata["authorization_endpoint"],
            "keys": len(keys), "pkce": "S256" in (metadata.get("code_challenge_methods_supported") or [])}
