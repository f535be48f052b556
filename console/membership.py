"""Which membership a console request acts as, and the role check every page makes.

A signed-in person may belong to several tenants; the session remembers the one they
chose (``SESSION_KEY``). With a single active membership it is chosen for them. A
membership that was deactivated, or a user who was, stops working on the next request:
nothing about authority is cached in the session but the membership's id.

That id is one value for every tab of the browser, so a page shown for one tenant must not act in another
(found attacking identity, 2026-12-04: a form of tenant A -- an upload previewed there -- posted after the
person switched to tenant B in another tab, or after A removed them and B was chosen for them, stored A's
document in B). Whenever the session's tenant changes, the CSRF token is rotated: every form and htmx request
of the pages shown before is refused (403); and a request that finds its tenant gone changes nothing. A
page's htmx requests name the membership it was shown for (``SHOWN_FOR_HEADER``): another one is answered 409
with ``HX-Refresh``, so a page of A never fills with B's partials (a poll, after a switch in another tab).
Django sends a request's own CSRF cookie back with every page that shows a form, so a page asked for before a
switch and answered after it set the old token again (found reviewing the rule): the session remembers the token
its tenant was entered with (``TOKEN_KEY``), and a request bearing another gets a new one, changing nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.middleware.csrf import get_token, rotate_token
from django.shortcuts import redirect, render

from accounts.errors import NotFound, PermissionRefused
from accounts.models import ROLE_RANK, Membership, Role
from accounts.services import tenant_entered_record
from accounts.sso import SESSION_TENANT_KEY as SSO_TENANT_KEY
from accounts.tenancy import acting_user_activate, tenant_activate
from kb.selectors import DocumentChanged

SESSION_KEY = "console_membership_id"
# A digest of the CSRF token the session's tenant was entered with (:func:`tenant_enter`).
TOKEN_KEY = "console_membership_token"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS", "TRACE")
# The membership a page was shown for, sent by its htmx requests (base.html's hx-headers).
SHOWN_FOR_HEADER = "X-Bulkhead-Membership"


def active_memberships(user, request=None):
    """The user's active memberships in every tenant (visible to them alone: ``accounts.tenancy``) that
    they agreed to (``Membership.consented``) -- in the one tenant a single sign-on session was made for,
    when it was (``accounts.sso``: that tenant's provider vouched for the person there, nowhere else; there
    its membership counts whether agreed to or not)."""
    acting_user_activate(user.pk)
    rows = (
        Membership.objects.select_related("tenant", "user")
        .filter(user=user, is_active=True, user__is_active=True)
        .order_by("tenant__name", "tenant__slug")
    )
    scope = request.session.get(SSO_TENANT_KEY) if request is not None else None
    return rows.filter(tenant_id=scope) if scope is not None else rows.filter(consented=True)


def console_member(request) -> Membership | None:
    """The membership this request acts as, or None when the person must choose one."""
    if not request.user.is_authenticated:
        return None
    memberships = active_memberships(request.user, request)
    chosen = request.session.get(SESSION_KEY)
    if chosen is not None:
        found = memberships.filter(pk=chosen).first()
        if found is not None and not _token_kept(request):
            # The browser bears a CSRF token other than the one the session's tenant was entered with: a page asked
            # for before a switch and answered after it set the old one again (Django renews the request's own
            # cookie with every form). A new token now; a post from a page of before changes nothing.
            rotate_token(request)
            _token_remember(request)
            if request.method not in SAFE_METHODS:
                return None
        if found is not None:
            tenant_activate(found.tenant_id)
            return found
        # The tenant the session acted for is gone (removed, deactivated): the pages shown for it end here, and
        # a form posted from one of them changes nothing -- the person chooses again (given their only one on a
        # GET), or it would act in the tenant chosen for them.
        request.session.pop(SESSION_KEY, None)
        rotate_token(request)
        if request.method not in SAFE_METHODS:
            return None
    only = list(memberships[:2])
    if len(only) == 1:
        tenant_enter(request, only[0])
        return only[0]
    return None


def tenant_enter(request, membership: Membership) -> None:
    """From this request on, the session acts as ``membership`` (recorded in its tenant's trail). When it acted
    for another membership before, the CSRF token is rotated: forms and htmx requests of the pages shown for
    that one are refused, never carried out in this one (the module's docstring)."""
    previous = request.session.get(SESSION_KEY)
    if previous is not None and previous != membership.pk:
        rotate_token(request)
    request.session[SESSION_KEY] = membership.pk
    _token_remember(request)
    tenant_activate(membership.tenant_id)
    tenant_entered_record(membership=membership, address=request.META.get("REMOTE_ADDR", "")[:64])


def _token_digest(request) -> str:
    """A digest of the CSRF secret this request's answer bears (made now if it has none)."""
    if not request.META.get("CSRF_COOKIE"):
        get_token(request)  # none yet: a new one, sent with the answer
    return hashlib.sha256(request.META["CSRF_COOKIE"].encode()).hexdigest()


def _token_remember(request) -> None:
    """The session's tenant was entered with this request's CSRF token: remembered (a digest), so that an old token
    set again by a late answer is recognised (:func:`_token_kept`)."""
    request.session[TOKEN_KEY] = _token_digest(request)


def _token_kept(request) -> bool:
    """Whether the request bears the CSRF token its session's tenant was entered with. A session from before this
    rule remembers none: this one is taken (nothing to compare with)."""
    remembered = request.session.get(TOKEN_KEY)
    if remembered is None:
        _token_remember(request)
        return True
    return hmac.compare_digest(remembered, _token_digest(request))


def member_required(role: Role = Role.VIEWER):
    """Decorator: sign-in, a chosen tenant and at least ``role``; sets ``request.member``."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            member = console_member(request)
            if member is None:
                return redirect("console:tenant-switch")
            if ROLE_RANK[Role(member.role)] < ROLE_RANK[role]:
                return render(
                    request, "console/forbidden.html", {"member": member, "needed": role.label}, status=403
                )
            shown_for = request.headers.get(SHOWN_FOR_HEADER)
            if shown_for is not None and shown_for != str(member.pk):
                # An htmx request of a page shown for another membership (a switch in another tab since): never
                # that page filled with this tenant's rows -- htmx reloads the whole page instead.
                return HttpResponse("This page was shown for another tenant; it is reloaded.", status=409,
                                    content_type="text/plain; charset=utf-8", headers={"HX-Refresh": "true"})
            request.member = member
            try:
                return view(request, *args, **kwargs)
            except DocumentChanged:  # replaced under every attempt to read it: say so, nothing half-read
                return render(request, "console/documents/changed.html", {"member": member}, status=409)

        return wrapper

    return decorate


def is_admin(member: Membership) -> bool:
    return member.role == Role.ADMIN


def is_editor(member: Membership) -> bool:
    return ROLE_RANK[Role(member.role)] >= ROLE_RANK[Role.EDITOR]


def found(read):
    """``read()``, with a selector's NotFound as the console's 404 (the same page for a missing id and
    another tenant's) and its PermissionRefused as a 403."""
    try:
        return read()
    except NotFound:
        raise Http404("Not found.") from None
    except PermissionRefused as exc:
        raise PermissionDenied(exc.message) from None
