"""A real browser (Debian's chromium, driven by Playwright) against the console on a live server.

The live server runs in a thread of the test process on the test database, so tests
here use ``transactional_db`` (the ``live_server`` fixture needs committed rows).

Every page a test opens fails the test if it fetched anything from outside the server, raised
a JavaScript error or broke the Content-Security-Policy. The policy refuses eval, and
``page.wait_for_function`` evals its expression in the page: wait with a locator instead.
``screenshot`` saves the README's pictures (docs/screenshots/) when ``BULKHEAD_SCREENSHOTS=1``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.bounds import JOB_WAIT

CHROMIUM = os.environ.get("BULKHEAD_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
# Playwright's waits (an element, a navigation, a click's page load; ``expect``'s too, 5 s by default): bounds, not
# timing assertions (tests/bounds.py). Generous: the db tier runs in three processes beside the unit tier's, so on
# a slow 2-core machine a page can wait behind another process's embedding.
TIMEOUT_MS = 120_000
# A job's progress to its end on a page, or a page whose answer waits for the embedding model's first load.
JOB_TIMEOUT_MS = JOB_WAIT * 1000
VIEWPORT = {"width": 1280, "height": 800}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# Runs in every page before its own scripts (injected by the browser, so the policy does not apply to it).
CSP_LISTENER = """document.addEventListener("securitypolicyviolation", (e) => window.__cspViolation(
    `${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile || location.href}:${e.lineNumber}`));"""


@pytest.fixture(scope="package")
def browser():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        pytest.fail(f"no chromium at {CHROMIUM}: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)  # each context below sets the same default for its pages' waits

    # Playwright's sync API keeps an event loop running in this thread; Django then refuses
    # database calls from it as if they came from async code. They do not: allow them while
    # the browser is open (this package's tests only), and restore the check after.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _watched_context(browser, live_server):
    """A new browser context and its first page, and the list of what went wrong in them."""
    context = browser.new_context(base_url=live_server.url, viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    problems: list[str] = []
    # Nothing is fetched from outside the server: every asset is served by the console itself.
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(live_server.url)
                  else (problems.append(f"fetched from outside the server: {route.request.url}"), route.abort()))
    # A violation of the Content-Security-Policy: the event, and chromium's console message.
    context.expose_binding("__cspViolation", lambda source, text: problems.append(f"CSP violation: {text}"))
    context.add_init_script(CSP_LISTENER)
    context.on("console", lambda message: problems.append(f"CSP violation: {message.text}")
               if message.type == "error" and "Content Security Policy" in message.text else None)
    page = context.new_page()
    page.on("pageerror", lambda exc: problems.append(f"JavaScript error: {exc}"))
    return context, page, problems


@pytest.fixture
def page(browser, live_server, transactional_db):
    context, page, problems = _watched_context(browser, live_server)
    yield page
    context.close()
    assert not problems, "the page went wrong:\n" + "\n".join(problems)


@pytest.fixture
def another_page(browser, live_server, transactional_db):
    """Open a page in a context of its own (a second person's browser), watched like ``page``."""
    opened = []

    def open_page():
        context, page, problems = _watched_context(browser, live_server)
        opened.append((context, problems))
        return page

    yield open_page
    for context, _ in opened:
        context.close()
    problems = [p for _, found in opened for p in found]
    assert not problems, "a page went wrong:\n" + "\n".join(problems)


def screenshot(page, name: str) -> None:
    """Save what the page shows as docs/screenshots/NAME.png, only when BULKHEAD_SCREENSHOTS=1."""
    if os.environ.get("BULKHEAD_SCREENSHOTS") != "1":
        return
    SCREENSHOTS.mkdir(exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png", type="png", animations="disabled")


PASSWORD = "correct horse battery staple"


def console_member(tenant, email, role, clearance, groups=(), *, password: str = PASSWORD):
    """A member of ``tenant`` who can sign in to the console with ``password``."""
    from accounts.passwords import user_set_password
    from accounts.services import membership_create

    membership = membership_create(tenant=tenant, email=email, role=role, clearance=clearance, group_slugs=groups)
    user_set_password(email=email, password=password)
    return membership


def choose_member(page, select: str, email: str) -> None:
    """Pick the option of ``select`` (a CSS selector of a <select>) whose label starts with ``email``.
    Waits for that option to be on the page first: after a click that navigates, reading the options
    at once can read the page being left (an empty list)."""
    option = page.locator(f"{select} option").filter(has_text=email).first
    option.wait_for(state="attached")
    label = next(o for o in page.locator(f"{select} option").all_inner_texts() if o.startswith(email))
    page.locator(select).select_option(label=label)


def sign_in(page, email: str, password: str) -> None:
    page.goto("/sign-in/")
    page.fill("input[name=username]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")


@pytest.fixture
def acme(transactional_db):
    """The tenant most console tests act in: Acme, its ``security-team`` group, an admin who reads
    everything (restricted, in the group) and an internal viewer, both signing in with ``PASSWORD``.
    A test file's own ``world`` adds what it needs (an editor, more members, a document)."""
    from accounts.services import group_create, tenant_create

    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    return {
        "tenant": tenant,
        "admin": console_member(tenant, "admin@acme.test", "admin", "restricted", ["security-team"]),
        "viewer": console_member(tenant, "viewer@acme.test", "viewer", "internal"),
    }
