"""Invitations and password reset: people get in by e-mail, not by a shell on the server.

* An admin invites an address with a role, a clearance and groups (:func:`invitation_create`).
  The e-mail carries a random key; only its hash is stored. The link is single-use (accepting
  sets ``accepted_at``), expires after ``BULKHEAD_INVITATION_DAYS`` and may be revoked; a new
  invitation of the same address replaces a pending one. Accepting creates the membership
  (source ``invited``) -- a new person sets a password there; one who already has a password
  (a member of another tenant) proves it instead, so a link cannot be used to change it.
* "Forgot password" (:func:`password_reset_request`) answers the same whatever the address, in the same
  time: the request counts the rate limits and hands the address to the mail thread, which looks it up,
  records the request and sends the mail (Django's token, single-use because it hashes the password,
  expiring after ``PASSWORD_RESET_TIMEOUT``) only to an active user with an active membership. Both
  pages are rate limited per address and per client. Setting the new password ends the account's other
  sessions (Django's session hash is of the password) and, as the person chooses on the form (checked by
  default), revokes their API tokens in each tenant the password opens (:func:`password_reset_save`).

Everything is recorded in the audit trail of the tenant(s) concerned, never with the key.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import EmailMessage
from django.db import connections, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.errors import ApplicationError, Conflict, NotFound
from accounts.models import ApiToken, Group, Invitation, Membership, MemberSource, Role, Tenant, User
from accounts.passwords import user_set_password, validate_new_password
from accounts.policy import AccessLevel
from accounts.ratelimit import rate_hit
from accounts.services import (
    groups_by_slugs,
    membership_set_groups,
    membership_tokens_revoke,
    parse_level,
    parse_role,
    provider_memberships_unconsent,
)
from accounts.tenancy import acting_tenant, acting_user_activate, tenant_activate
from audit.models import Action
from audit.services import audit_record, audit_record_read

logger = logging.getLogger(__name__)
KEY_BYTES = 32
# One thread sends the e-mails that must not make an answer slower for a known address than for an unknown one.
_mailer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bulkhead-mail")


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def public_url(path: str, *, request=None) -> str:
    """An absolute link for an e-mail: ``BULKHEAD_PUBLIC_URL`` + path, else the request's own host."""
    if settings.BULKHEAD_PUBLIC_URL:
        return settings.BULKHEAD_PUBLIC_URL + path
    if request is None:
        raise ApplicationError("BULKHEAD_PUBLIC_URL is not set; links in e-mails need it here")
    return request.build_absolute_uri(path)


def _message(*, to: str, template: str, context: dict) -> EmailMessage:
    subject = render_to_string(f"accounts/email/{template}_subject.txt", context).strip()
    body = render_to_string(f"accounts/email/{template}.txt", context)
    return EmailMessage(subject=subject, body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=[to])


def _send_in_background(message: EmailMessage) -> None:
    def send():
        try:
            message.send()
        except Exception:  # noqa: BLE001 -- logged; the person may ask again
            logger.exception("could not send a %r e-mail", message.subject)

    _mailer.submit(send)


def _invitation_view(invitation: Invitation) -> dict:
    return {"email": invitation.email, "role": invitation.role, "clearance": AccessLevel(invitation.clearance).label,
            "groups": sorted(Group.objects.filter(pk__in=invitation.group_ids).values_list("slug", flat=True)),
            "expires_at": invitation.expires_at.isoformat()}


# ----------------------------------------------------------------------------- invitations


def invitation_pending(*, tenant: Tenant):
    """The tenant's pending invitations, newest first."""
    return Invitation.objects.filter(tenant=tenant, accepted_at__isnull=True, revoked_at__isnull=True,
                                     expires_at__gt=timezone.now()).order_by("-created_at", "-id")


def invitation_listed(*, tenant: Tenant):
    """The pending invitations a link of which still opens (:func:`invitation_pending` whose inviter is still an
    active admin of the tenant, as :func:`invitation_open` requires): what the members page lists. One whose
    inviter lost that authority is not shown as pending; should they get it back, it is listed again (and can
    be revoked), as its link would open again."""
    return invitation_pending(tenant=tenant).filter(
        invited_by__tenant=tenant, invited_by__role=Role.ADMIN, invited_by__is_active=True,
        invited_by__user__is_active=True)


@transaction.atomic
def invitation_create(
    *, tenant: Tenant, email: str, role: str, clearance: str, group_slugs=(), actor: Membership | None,
    request=None,
) -> Invitation:
    """Invite ``email`` to ``tenant`` and e-mail the link. Refuses a member's address (409); a pending
    invitation of the address is revoked and replaced. The e-mail is sent when the transaction commits;
    if it cannot be sent the invitation is not made (the error is raised)."""
    role_value = parse_role(role)
    level = parse_level(clearance)
    groups = groups_by_slugs(tenant=tenant, slugs=group_slugs)
    email = (email or "").strip().lower()
    if "@" not in email or len(email) > 254:
        raise ApplicationError(f"invalid email address {email!r}")
    if Membership.objects.filter(tenant=tenant, user__email=email).exists():
        raise Conflict(f"{email} is already a member of this tenant")
    now = timezone.now()
    for old in invitation_pending(tenant=tenant).filter(email=email).select_for_update():
        _revoke(old, actor=actor, now=now)
    key = secrets.token_urlsafe(KEY_BYTES)
    invitation = Invitation.objects.create(
        tenant=tenant, email=email, role=role_value, clearance=level, group_ids=[g.pk for g in groups],
        key_hash=_hash(key), invited_by=actor, expires_at=now + timedelta(days=settings.BULKHEAD_INVITATION_DAYS),
    )
    audit_record(action=Action.INVITATION_CREATE, actor=actor, tenant_id=tenant.pk, target_type="invitation",
                 target_id=invitation.pk, details={"after": _invitation_view(invitation)})
    link = public_url(f"/invitation/{key}/", request=request)
    message = _message(to=email, template="invitation", context={
        "tenant": tenant, "link": link, "invited_by": actor.user.email if actor else "",
        "role": role_value.label, "clearance": level.label, "days": settings.BULKHEAD_INVITATION_DAYS,
    })
    # Sent inside the transaction: a failure rolls the invitation back and tells the admin.
    try:
        message.send()
    except Exception as exc:  # noqa: BLE001 -- the SMTP library's whole family
        logger.warning("invitation e-mail not sent: %s", type(exc).__name__)
        raise ApplicationError("The invitation e-mail could not be sent; nothing was changed. Try again later.",
                               code="mail_failed") from None
    return invitation


def _revoke(invitation: Invitation, *, actor: Membership | None, now) -> None:
    invitation.revoked_at = now
    invitation.save(update_fields=["revoked_at"])
    audit_record(action=Action.INVITATION_REVOKE, actor=actor, tenant_id=invitation.tenant_id,
                 target_type="invitation", target_id=invitation.pk, details={"before": {"email": invitation.email}})


@transaction.atomic
def invitation_revoke(*, tenant: Tenant, invitation_id: int, actor: Membership | None) -> Invitation:
    invitation = invitation_pending(tenant=tenant).select_for_update().filter(pk=invitation_id).first()
    if invitation is None:
        raise NotFound("Not found.")
    _revoke(invitation, actor=actor, now=timezone.now())
    return invitation


@dataclass(frozen=True)
class OpenInvitation:
    invitation: Invitation
    tenant: Tenant
    existing_user: User | None  # the address already has an account with a password: they prove it

    @property
    def needs_current_password(self) -> bool:
        return self.existing_user is not None


def invitation_open(key: str) -> OpenInvitation:
    """The pending invitation of a link's key, acted for from here on; NotFound (one answer for an
    unknown, used, revoked or expired link) otherwise."""
    if not key or len(key) > 200:
        raise NotFound("This invitation link is not valid: it was used, revoked or has expired.")
    digest = _hash(key)
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT bulkhead_invitation_tenant(%s)", [digest])
        tenant_id = cursor.fetchone()[0]
    if tenant_id is None:
        raise NotFound("This invitation link is not valid: it was used, revoked or has expired.")
    tenant_activate(tenant_id)
    invitation = Invitation.objects.select_related("tenant", "invited_by__user").filter(key_hash=digest).first()
    if invitation is None or invitation.accepted_at or invitation.revoked_at or invitation.expires_at <= timezone.now():
        raise NotFound("This invitation link is not valid: it was used, revoked or has expired.")
    if not _inviter_still_admin(invitation):
        raise NotFound("This invitation link is not valid: it was used, revoked or has expired.")
    user = User.objects.filter(email=invitation.email).first()
    existing = user if user is not None and user.has_usable_password() else None
    return OpenInvitation(invitation=invitation, tenant=invitation.tenant, existing_user=existing)


def _inviter_still_admin(invitation: Invitation) -> bool:
    """Whether the member who made ``invitation`` is still an active admin of its tenant: a link is that
    admin's grant, and dies with their authority (found attacking invitations: an admin being removed
    invited an address of their own as an admin, and the link still worked after the removal)."""
    inviter = invitation.invited_by
    return (inviter is not None and inviter.tenant_id == invitation.tenant_id and inviter.role == Role.ADMIN
            and inviter.is_active and inviter.user.is_active)


@transaction.atomic
def invitation_accept(*, key: str, password: str, address: str = "") -> Membership:
    """Accept the invitation of ``key``: a new person's ``password`` is set (under the validators); an
    existing account's must be its current password. Returns the new membership (source ``invited``)."""
    opened = invitation_open(key)
    invitation = Invitation.objects.select_for_update().get(pk=opened.invitation.pk)
    if invitation.accepted_at or invitation.revoked_at or invitation.expires_at <= timezone.now():
        raise NotFound("This invitation link is not valid: it was used, revoked or has expired.")
    user = User.objects.select_for_update().filter(email=invitation.email).first()
    if user is not None and user.has_usable_password():
        rate_hit(scope="invitation-password", ident=invitation.email, limit=settings.AXES_FAILURE_LIMIT,
                 window_seconds=int(settings.AXES_COOLOFF_TIME.total_seconds()))
        if not user.check_password(password or ""):
            raise ApplicationError("That is not the password of your account.", code="invalid_password")
    else:
        had_account = user is not None  # made by a tenant's identity provider (no password yet)
        if user is None:
            user = User.objects.create_user(invitation.email)
        validate_new_password(password, user)
        user.set_password(password)
        user.save(update_fields=["password"])
        if had_account:  # the account's first password is this tenant's, not the providers' that made it
            provider_memberships_unconsent(user=user, keep_tenant_id=invitation.tenant_id)
    if not user.is_active:
        raise NotFound("This invitation link is not valid: it was used, revoked or has expired.")
    if Membership.objects.filter(tenant_id=invitation.tenant_id, user=user).exists():
        raise Conflict("You are already a member of this tenant.")
    membership = Membership.objects.create(user=user, tenant_id=invitation.tenant_id, role=Role(invitation.role),
                                           clearance=invitation.clearance, source=MemberSource.INVITED,
                                           consented=True)
    membership_set_groups(membership=membership, groups=Group.objects.filter(tenant_id=invitation.tenant_id,
                                                                              pk__in=invitation.group_ids))
    invitation.accepted_at = timezone.now()
    invitation.membership = membership
    invitation.save(update_fields=["accepted_at", "membership"])
    audit_record(action=Action.INVITATION_ACCEPT, actor=membership, tenant_id=invitation.tenant_id,
                 target_type="membership", target_id=membership.pk,
                 details={"invitation": invitation.pk, "address": address,
                          "after": {"role": membership.role, "clearance": AccessLevel(membership.clearance).label}})
    return membership


# ----------------------------------------------------------------------------- password reset


def active_memberships_of(user: User) -> list[Membership]:
    """The user's active memberships they agreed to (``Membership.consented``): the tenants their password
    opens, so the ones a reset is recorded in (and mailed for), in id order: the order their tokens are revoked and
    recorded in, the same on every run (unordered, PostgreSQL's order followed the rows' last update)."""
    acting_user_activate(user.pk)
    try:
        return list(Membership.objects.select_related("user").filter(user=user, is_active=True, consented=True).order_by("pk"))
    finally:
        acting_user_activate(None)


def _record_everywhere(*, action: str, email: str, memberships: list[Membership], details: dict) -> None:
    """One best-effort record in each tenant of ``memberships`` (each written acting for it), or one of
    no tenant when there are none -- the same shape as a failed sign-in's."""
    try:
        for membership in memberships:
            tenant_activate(membership.tenant_id)
            audit_record_read(action=action, actor=membership, details=details)
    finally:
        if memberships:
            tenant_activate(None)
    if not memberships:
        audit_record_read(action=action, tenant_id=None, details=details, actor_email=email)


def password_reset_request(*, email: str, address: str, request=None) -> None:
    """"Forgot password": rate limited (429 past a limit, whatever the address); then the rest is handed to
    the mail thread (:func:`_password_reset_work`) for every address. This thread does the same calls
    whether the address is known or not -- the counts and the hand-over; no lookup, record, token or
    message -- so the answer takes no longer for a known address (found attacking identity: it took about
    8 ms more, the lookup of the memberships, their records, the token and the message; docs/benchmarks.md)."""
    email = (email or "").strip().lower()[:254]
    rate_hit(scope="reset-client", ident=address, limit=settings.BULKHEAD_MAIL_PER_CLIENT_PER_HOUR,
             window_seconds=3600)
    rate_hit(scope="reset-address", ident=email, limit=settings.BULKHEAD_MAIL_PER_ADDRESS_PER_HOUR,
             window_seconds=3600)
    link_start = public_url("/password/reset/", request=request)
    _mailer.submit(_password_reset_work, email=email, address=address, link_start=link_start)


def _password_reset_work(*, email: str, address: str, link_start: str) -> None:
    """On the mail thread: for an active user with an active membership, a reset link is e-mailed; one audit
    record either way (each tenant of the account, or no tenant). Its own database connection, closed after."""
    try:
        user = User.objects.filter(email=email, is_active=True).first() if "@" in email else None
        memberships = active_memberships_of(user) if user is not None else []
        _record_everywhere(action=Action.PASSWORD_RESET_REQUEST, email=email, memberships=memberships,
                           details={"address": address, "sent": bool(memberships)})
        if memberships:
            uid = urlsafe_base64_encode(force_bytes(user.pk))
            token = default_token_generator.make_token(user)
            _message(to=user.email, template="password_reset", context={
                "link": f"{link_start}{uid}.{token}/", "minutes": settings.PASSWORD_RESET_TIMEOUT // 60,
            }).send()
    except Exception:  # noqa: BLE001 -- logged; the person may ask again
        logger.exception("a password reset request could not be handled")
    finally:
        connections.close_all()  # this thread's connections only


def mail_thread_drained() -> None:
    """Wait until the mail thread has done everything handed to it so far (one thread: in order)."""
    _mailer.submit(lambda: None).result()


RESET_TOKENS_REASON = "its member reset their password"
CHANGE_TOKENS_REASON = "its member changed their password"


def password_tokens_count(user: User) -> int:
    """How many live API tokens a new password of ``user``'s -- a reset's, or the console's "Change password" -- may
    revoke: those of the memberships the password opens (:func:`active_memberships_of`, the tenants a reset is
    recorded in), each counted acting for its tenant (the tenant acted for before is acted for again after). A
    membership the person did not agree to (a tenant's provider made it) is not among them: its tenant must not
    hear of the account's password, and a revocation there would be its record."""
    total = 0
    for membership in active_memberships_of(user):
        with acting_tenant(membership.tenant_id):
            total += ApiToken.objects.filter(membership=membership, revoked_at__isnull=True).count()
    return total


class TokensOfferedChanged(Conflict):
    """The person's live API tokens are not as many as the password form offered to revoke: nothing was written."""


def _password_and_tokens_write(locked: User, memberships: list[Membership], *, password_hash: str,
                               tokens_offered: int, revoke_tokens: bool, reason: str) -> None:
    """Write ``locked``'s new password (its row locked by the caller) and, with ``revoke_tokens``, revoke every live
    API token of ``memberships`` -- each a ``token.revoke`` record in its own tenant by the person's membership
    there, ``reason`` -- after counting them again: when they are not ``tokens_offered``, :class:`TokensOfferedChanged`
    before anything is written. One rule for the reset and the change (:func:`password_reset_save`,
    :func:`password_change_save`)."""
    live = password_tokens_count(locked)
    if live != tokens_offered:
        raise TokensOfferedChanged(f"the person has {live} API tokens now, not {tokens_offered}")
    locked.password = password_hash
    locked.save(update_fields=["password"])
    if revoke_tokens:
        # Each tenant's tokens read and written acting for it; a failure rolls the setting back with the rest.
        for membership in memberships:
            with acting_tenant(membership.tenant_id):
                membership_tokens_revoke(membership=membership, actor=membership, reason=reason)


@transaction.atomic
def password_reset_save(*, user: User, password_hash: str, token: str, tokens_offered: int,
                        revoke_tokens: bool = False) -> bool:
    """Write a reset link's new password, hashed already (the slow part, done before this), and only the password:
    if the account may still be mailed a link (an active user, locked here, with an active membership they agreed
    to: :func:`_password_reset_work`'s rule) and the link's ``token`` is still good for it; False, writing nothing,
    otherwise. Found attacking identity, 2026-12-04: the link's view checked the account when it found the link's
    user, then hashed and saved the whole user it had read -- a deactivation committed in between still had the
    password set, and a user deactivated then was active again. The token is checked again on the locked row
    (found reviewing that fix): a link dies with the password it was made for, and a password changed meanwhile
    -- by the account's owner, or by the same link submitted twice at once -- was written over.

    ``revoke_tokens`` (the form's "Also revoke my API tokens", checked by default): every live API token of the
    memberships the password opens is revoked with the password, in the same transaction, each a ``token.revoke``
    record in its own tenant by the person's membership there, "its member reset their password" -- a reset is
    often the recovery of a compromised account, and a token outlives any password (found attacking identity,
    2026-12-04). Each tenant's records name its own tokens alone; a membership not agreed to is left alone (no
    record may reach its tenant). The account's other sessions end anyway: Django's session hash is of the
    password.

    ``tokens_offered``: how many tokens the form offered (0: it offered no choice). When the live count differs
    -- a token minted, or revoked, since the form was shown -- :class:`TokensOfferedChanged` is raised before
    anything is written, so the person chooses again (found attacking identity, 2026-12-04: a token minted after the
    form was shown, with no checkbox or with N, was kept silently). Counted on the locked user, just before the
    write; a token minted between this count and the commit is not held off (nothing here locks against a mint),
    and is revoked with the others when the person chose to revoke."""
    locked = User.objects.select_for_update().filter(pk=user.pk, is_active=True).first()
    memberships = active_memberships_of(locked) if locked is not None else []
    if not memberships:
        return False
    if not token or not default_token_generator.check_token(locked, token):
        return False
    _password_and_tokens_write(locked, memberships, password_hash=password_hash, tokens_offered=tokens_offered,
                               revoke_tokens=revoke_tokens, reason=RESET_TOKENS_REASON)
    return True


@transaction.atomic
def password_change_save(*, user: User, password_hash: str, tokens_offered: int, revoke_tokens: bool = False) -> bool:
    """The console's "Change password": write the signed-in person's new password, hashed already, and only the
    password, if the account is still active (its row locked here); False, writing nothing, otherwise (found attacking
    identity, 2026-12-04: the change saved the whole user its request had read, so an account deactivated while the
    change was checked and hashed was saved back active). ``revoke_tokens`` and ``tokens_offered`` as a reset's
    (:func:`password_reset_save`: the same count, the same re-check, the same records), "its member changed their
    password" -- found in the fourteenth session: the reset offered the choice and the change did not, so a person
    who changed a password someone else had learnt kept every token that someone could have minted with it."""
    locked = User.objects.select_for_update().filter(pk=user.pk, is_active=True).first()
    if locked is None:
        return False
    _password_and_tokens_write(locked, active_memberships_of(locked), password_hash=password_hash,
                               tokens_offered=tokens_offered, revoke_tokens=revoke_tokens, reason=CHANGE_TOKENS_REASON)
    return True


def password_reset_record(*, user: User, address: str) -> None:
    """A reset link was used and a new password set: recorded in each tenant of the user."""
    _record_everywhere(action=Action.PASSWORD_RESET, email=user.email, memberships=active_memberships_of(user),
                       details={"address": address})


OPERATOR_PASSWORD_TOKENS_REASON = "an operator set their password on the server"


@dataclass(frozen=True)
class OperatorPasswordSet:
    """What :func:`operator_password_set` did: the user, the tenants whose trail recorded it, the tokens revoked."""

    user: User
    tenants: int
    tokens_revoked: list[str]


@transaction.atomic
def operator_password_set(*, email: str, password: str, revoke_tokens: bool = False) -> OperatorPasswordSet:
    """``manage.py kb_user set-password``: the operator gives the account ``email`` a new password on the server
    (:func:`accounts.passwords.user_set_password`, its validators) and records it, in the same transaction, in
    each tenant the password opens -- the account's active memberships it agreed to (:func:`active_memberships_of`,
    a reset's rule: a membership another tenant's provider made, not agreed to, hears nothing, nor does a
    deactivated one) --, a ``password_reset.done`` record by no one naming the membership, ``"on_server": true``.
    ``revoke_tokens``: every live API token of those memberships is revoked too, as a reset revokes them
    (:func:`accounts.services.membership_tokens_revoke`), each a ``token.revoke`` record in its tenant, "an
    operator set their password on the server". Found attacking identity, 2026-12-04: the command set the
    password alone -- no tenant heard of it, and a compromised account's tokens outlived the new password."""
    user = user_set_password(email=email, password=password)
    memberships = active_memberships_of(user)
    revoked: list[str] = []
    for membership in memberships:
        with acting_tenant(membership.tenant_id):
            mine = (membership_tokens_revoke(membership=membership, actor=None, reason=OPERATOR_PASSWORD_TOKENS_REASON)
                    if revoke_tokens else [])
            audit_record(action=Action.PASSWORD_RESET, actor=None, tenant_id=membership.tenant_id,
                         target_type="membership", target_id=membership.pk,
                         details={"on_server": True, "email": user.email, "tokens_revoked": mine})
            revoked += mine
    return OperatorPasswordSet(user=user, tenants=len(memberships), tokens_revoked=revoked)
