"""Single sign-on against a real OpenID provider (django-oauth-toolkit, a process of its own started by
the suite) in a real browser: the whole round trip, just-in-time membership, groups and clearance from
the claims and applied again at every sign-in, and what must be refused -- a tampered state, a replayed
callback, an ID token for another audience, an expired one, an address the tenant does not admit, an
unverified one, a provider that is not the configured issuer."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest

from accounts.models import Membership, MemberSource, SsoConfig, SsoIdentity
from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from accounts.tenancy import acting_tenant
from audit.models import Action, AuditEvent
from tests.oidc_provider.fixture import CLIENT_ID, CLIENT_SECRET, PASSWORD, oidc_provider  # noqa: F401

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser, live_server, oidc_provider, transactional_db):  # noqa: F811
    """The suite's watched page (tests/browser/conftest.py), where the provider's origin is allowed too:
    its sign-in page is the one other place the browser goes."""
    from tests.browser.conftest import _watched_context

    context, page, problems = _watched_context(browser, live_server)
    context.unroute("**/*")
    provider = oidc_provider.issuer.rsplit("/o", 1)[0]
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url.startswith((live_server.url, provider))
                  else (problems.append(f"fetched from elsewhere: {route.request.url}"), route.abort()))
    yield page
    context.close()
    assert not problems, "the page went wrong:\n" + "\n".join(problems)


@pytest.fixture
def acme(oidc_provider, transactional_db):  # noqa: F811
    tenant = tenant_create(slug="acme", name="Acme")
    with acting_tenant(tenant.pk):
        for slug in ("security-team", "finance", "legal"):
            group_create(tenant=tenant, slug=slug)
        SsoConfig.objects.create(
            tenant=tenant, enabled=True, issuer=oidc_provider.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET,
            admit_domains=["acme.example"], groups_claim="groups",
            group_map={"SecOps": "security-team", "Money": ["finance"]},
            clearance_map={"SecOps": "confidential", "Money": "internal"},
        )
    return tenant


def _start(page, organisation="acme", *, confirm=True):
    """The sign-in page's box, its link, and the start page's button (a POST: the person's own click)."""
    page.goto("/sign-in/")
    page.fill("#sso-organisation", organisation)
    page.click("#sso-box button[type=submit]")
    page.click("#sso-continue")
    if confirm:
        page.click("#sso-start-button")


def _at_provider(page, username):
    page.wait_for_selector("#provider-username")
    page.fill("#provider-username", username)
    page.fill("#provider-password", PASSWORD)
    page.click("#provider-submit")


def _membership(email):
    return Membership.objects.filter(user__email=email).select_related("tenant").first()


def _groups(membership):
    return sorted(membership.groups.values_list("slug", flat=True))


def test_sign_in_with_the_provider_creates_the_member_and_reapplies_groups_each_time(page, acme, oidc_provider):  # noqa: F811
    legal = acme.groups.get(slug="legal")
    _start(page)
    _at_provider(page, "alice")
    page.wait_for_url(re.compile(r"/$"))
    assert page.locator(".who .email").inner_text() == "alice@acme.example"
    membership = _membership("alice@acme.example")
    assert (membership.tenant_id, membership.role, membership.source) == (acme.pk, "viewer", MemberSource.SSO)
    assert membership.clearance == AccessLevel.CONFIDENTIAL and _groups(membership) == ["security-team"]
    # An admin adds a group the provider does not manage: sign-ins leave it alone.
    membership.groups.add(legal)
    # At the provider, alice leaves SecOps and joins Money: the next sign-in follows.
    oidc_provider.set_person("alice", email="alice@acme.example", email_verified=True, groups=["Money"])
    page.click("form[action='/sign-out/'] button")
    page.wait_for_url(re.compile(r"/sign-in/"))
    _start(page)  # the provider remembers her: straight back
    page.wait_for_url(re.compile(r"/$"))
    membership.refresh_from_db()
    assert _groups(membership) == ["finance", "legal"] and membership.clearance == AccessLevel.INTERNAL
    # Removed from every mapped group: out of them, and the lowest clearance.
    oidc_provider.set_person("alice", email="alice@acme.example", email_verified=True, groups=[])
    page.click("form[action='/sign-out/'] button")
    _start(page)
    page.wait_for_url(re.compile(r"/$"))
    membership.refresh_from_db()
    assert _groups(membership) == ["legal"] and membership.clearance == AccessLevel.PUBLIC
    assert SsoIdentity.objects.filter(membership=membership).count() == 1
    # Each sign-in that changed something is in the trail (the first one put her in her groups).
    assert AuditEvent.objects.filter(tenant_id=acme.pk, action=Action.MEMBERSHIP_UPDATE, details__via="sso").count() == 3


def _callback_url(page, live_server):
    """A genuine callback URL (a code and its state) for this browser, not yet visited: the round trip
    made with the browser's own cookies (its request context), stopping before the last redirect.
    (Playwright cannot hold a redirect the browser follows.) The provider already knows the person."""
    page.goto("/sso/acme/")
    token = page.locator("#sso-start input[name=csrfmiddlewaretoken]").get_attribute("value")
    start = page.request.post(f"{live_server.url}/sso/acme/", form={"csrfmiddlewaretoken": token}, max_redirects=0)
    assert start.status == 303, start.status
    at_provider = page.request.get(start.headers["location"], max_redirects=0)
    assert at_provider.status == 302, at_provider.status
    url = at_provider.headers["location"]
    assert url.startswith(f"{live_server.url}/sso/acme/callback/?"), url
    return url


def _with(url, **params):
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    return urlunsplit(parts._replace(query=urlencode({**query, **params})))


def test_a_tampered_state_is_refused_and_a_callback_works_once(page, acme, oidc_provider, live_server):  # noqa: F811
    _start(page)
    _at_provider(page, "bob")  # signed in once, in the browser; the provider now knows bob
    page.wait_for_url(re.compile(r"/$"))
    page.click("form[action='/sign-out/'] button")
    page.wait_for_url(re.compile(r"/sign-in/"))
    url = _callback_url(page, live_server)
    page.goto(_with(url, state="tampered"))
    assert "did not check out" in page.locator("#sso-refused").inner_text()
    assert page.locator(".who").count() == 0
    page.goto(url)  # the genuine one
    page.wait_for_url(re.compile(r"/$"))
    assert _groups(_membership("bob@acme.example")) == ["finance"]
    page.click("form[action='/sign-out/'] button")
    page.goto(url)  # replayed: its state was used up
    assert "did not check out" in page.locator("#sso-refused").inner_text()
    assert page.locator(".who").count() == 0


@pytest.mark.parametrize("username, reason", [
    ("mallory", "did not check out"),  # an ID token for another audience
    ("late", "did not check out"),  # an expired ID token
    ("eve", "not admitted"),  # a verified address of a domain the tenant does not admit
    ("unverified", "not say the e-mail address is verified"),
])
def test_what_the_provider_sends_must_check_out(page, acme, oidc_provider, username, reason):  # noqa: F811
    _start(page)
    _at_provider(page, username)
    assert reason in page.locator("#sso-refused").inner_text()
    assert not Membership.objects.filter(tenant=acme, user__email=oidc_provider.people[username]["email"]).exists()
    assert page.locator(".who").count() == 0


def test_a_provider_that_is_not_the_configured_issuer_is_refused(page, acme, oidc_provider):  # noqa: F811
    # The same provider reached by another name: its discovery document names another issuer (a mix-up).
    SsoConfig.objects.filter(tenant=acme).update(issuer=oidc_provider.issuer.replace("127.0.0.1", "localhost"))
    _start(page, confirm=False)  # refused on the start page already: its discovery is read there
    assert "could not be reached" in page.locator("#sso-refused").inner_text()
    # An answer that says it comes from another issuer (RFC 9207) is refused before anything is exchanged.
    page.goto("/sso/acme/callback/?code=x&state=y&iss=https%3A%2F%2Fevil.example")
    assert "another identity provider" in page.locator("#sso-refused").inner_text()


def test_an_sso_session_acts_for_its_tenant_alone(page, acme, oidc_provider):  # noqa: F811
    other = tenant_create(slug="other", name="Other")
    membership_create(tenant=other, email="alice@acme.example", role="admin", clearance="restricted")
    oidc_provider.set_person("alice", email="alice@acme.example", email_verified=True, groups=["SecOps"])
    _start(page)
    _at_provider(page, "alice")
    page.wait_for_url(re.compile(r"/$"))
    page.goto("/tenant/")
    assert "Other" not in page.locator("main").inner_text()
    api = page.request.get("/api/v1/documents/", headers={"X-Bulkhead-Tenant": "other"})
    assert api.status == 401
    assert page.request.get("/api/v1/documents/", headers={"X-Bulkhead-Tenant": "acme"}).status == 200


def test_an_admin_sets_up_sign_on_and_tests_the_connection(page, oidc_provider, transactional_db):  # noqa: F811
    from tests.browser.conftest import console_member, screenshot, sign_in

    tenant = tenant_create(slug="other", name="Other")
    with acting_tenant(tenant.pk):
        group_create(tenant=tenant, slug="security-team")
    admin = console_member(tenant, "root@other.example", "admin", "restricted")
    sign_in(page, admin.user.email, "correct horse battery staple")
    page.goto("/settings/sso/")
    assert page.locator("#sso-callback").inner_text().endswith("/sso/other/callback/")
    page.fill("#id_issuer", oidc_provider.issuer)
    page.fill("#id_client_id", CLIENT_ID)
    page.fill("#id_client_secret", CLIENT_SECRET)
    page.fill("#id_admit_domains", "other.example")
    page.fill("#id_group_map", '{"SecOps": "no-such-group"}')
    page.click("button[value=save]")
    assert "unknown group in the mapping: no-such-group" in page.locator("#sso-form .error").inner_text()
    page.fill("#id_client_secret", CLIENT_SECRET)
    page.fill("#id_group_map", '{"SecOps": "security-team"}')
    page.check("#id_enabled")
    page.click("button[value=save]")
    page.wait_for_selector("#sso-test")
    config = SsoConfig.objects.get(tenant=tenant)
    assert config.enabled and config.client_secret == CLIENT_SECRET and config.group_map == {"SecOps": "security-team"}
    assert CLIENT_SECRET not in page.content()  # never shown back
    page.click("#sso-test")
    assert "Connected: issuer " + oidc_provider.issuer in page.locator("#sso-test-ok").inner_text()
    screenshot(page, "sso-settings")
    SsoConfig.objects.filter(tenant=tenant).update(issuer=oidc_provider.issuer + "/nothing-here")
    page.click("#sso-test")
    assert "The connection failed" in page.locator("#sso-test-failed").inner_text()
    # The sign-in page now offers single sign-on.
    page.click("form[action='/sign-out/'] button")
    page.wait_for_selector("#sso-box")
    page.fill("#sso-organisation", "other")
    page.click("#sso-box button[type=submit]")
    page.wait_for_selector("#sso-continue")
    screenshot(page, "sign-in-sso")
