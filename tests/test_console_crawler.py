"""Crawl the web console as every member of two tenants: no page shows text the member may not read.

Two tenants hold the same kinds of documents: sections of every level, sections open to a group
only (security-team, finance), a public section and an internal region under headings the
readers of them may not read, a document of restricted sections only, one of group-only
sections, a document whose ingestion failed with an error quoting its line. Every section's
title and body, every document's title and the error carry a canary: a random token of their own.

Each member (admins, editors and viewers at several clearances and groups; one person a member of
both tenants) signs in and crawls from the dashboard: every same-origin link, every htmx ``hx-get``
(as htmx sends it), every GET form with each choice of each of its selects, the search form with
a query matching every canary in every mode with and without expansion (admins: also as each
member, and on each index version), plus pages typed in by hand: those of every id of the member's
tenant and of a sample of the other tenant's. No page may hold a canary the member may not read -- who may is computed
from the canary's section policy with ``accounts.policy.can_read`` (a document's title: any of
its sections; an ingestion error: the tenant's admins and the uploader of the bytes it quotes, as
``kb.selectors.error_in_full`` says) -- and none may answer 5xx. Crawling changes nothing.
Every canary must be seen by someone who may read it, so the pages crawled had real content.
"""

from __future__ import annotations

import functools
import re
import secrets
import string
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from itertools import product
from urllib.parse import parse_qsl, quote_plus, urlencode, urljoin, urlsplit

import pytest
from django.urls import Resolver404, resolve, reverse

from accounts.models import Membership, Role
from accounts.policy import AccessLevel, can_read
from accounts.selectors import reader_for
from accounts.services import group_create, membership_create, tenant_create
from ingestion.chunking.config import ChunkingConfig
from kb import index_versions, search
from kb.models import CONTENT_BY, EMBEDDING_DIMENSIONS, Document, IndexVersion, IngestionJob, Section
from kb.selectors import reads_every_section
from tests import factories
from tests.api_helpers import console_client, make_document, snapshot

pytestmark = pytest.mark.django_db

MAX_PAGES = 300  # per member
MAX_VARIANTS = 12  # requests of one path (with different query strings) per member: sorts x filters x pages
CANARY = re.compile(r"kq[a-z]{12}")
# Routes the crawler never requests: signing out would end the crawl, signing in only redirects a
# signed-in member; the rest answer POST only. (A section's access form, section-access, is a GET too: crawled.)
SKIP_ROUTES = {
    "sign-out", "sign-in", "document-replace", "job-retry", "member-change", "group-rename",
    "index-version-build", "index-version-evaluate", "review-decide", "review-head-decide",
    "review-settings",
}
PUB, INT, CONF, RESTR = AccessLevel.PUBLIC, AccessLevel.INTERNAL, AccessLevel.CONFIDENTIAL, AccessLevel.RESTRICTED


def _state() -> tuple:
    """What a GET could change by mistake (``tests.api_helpers.snapshot``, and index versions)."""
    return snapshot(), sorted(IndexVersion.objects.values_list("id", "is_active", "status"))


def _token() -> str:
    return "kq" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(12))


@dataclass(frozen=True)
class Canary:
    token: str
    where: str  # for the failure message: tenant, document, part
    tenant_id: int
    readable: Callable[[Membership], bool] = field(compare=False)


@dataclass
class CrawlWorld:
    canaries: dict[str, Canary] = field(default_factory=dict)
    members: list[Membership] = field(default_factory=list)
    seeds: dict[int, list[str]] = field(default_factory=dict)  # tenant id -> its pages, typed in by hand

    def add(self, where: str, tenant_id: int, readable: Callable[[Membership], bool]) -> str:
        token = _token()
        self.canaries[token] = Canary(token, where, tenant_id, readable)
        return token


def _may_read(tenant_id: int, level: int, group_ids) -> Callable[[Membership], bool]:
    return lambda m: m.tenant_id == tenant_id and can_read(reader_for(m), level=level, group_ids=list(group_ids))


# (key, parent, title, level, groups, body); a title of None: an untitled region or the root
POLICY = [
    ("root", None, None, INT, [], "Preamble"),
    ("intro", "root", "Overview", INT, [], "Introduction"),
    ("welcome", "intro", "Welcome", PUB, [], "Hello everyone"),  # public, under an internal heading
    ("salaries", "intro", "Salaries", CONF, [], "Pay bands"),
    ("incident", "intro", "Incident", RESTR, [], "Breach report"),
    ("team", "intro", "Security team", CONF, ["security-team"], "Roster"),
    ("playbook", "team", "Playbook", RESTR, ["security-team"], "Page the on-call"),
    ("region", "playbook", None, INT, [], "An internal note under a restricted heading"),
    ("budget", "intro", "Budget", INT, ["finance"], "Numbers for finance"),
]
VAULT = [("root", None, None, RESTR, [], "Vault preamble"), ("keys", "root", "Keys", RESTR, [], "Key material")]
TEAM_NOTES = [("root", None, None, INT, ["security-team"], "Team preamble"),
              ("oncall", "root", "On-call", INT, ["security-team"], "Rota")]


def _document(w: CrawlWorld, tenant, name: str, sections, default=INT, created_by=None) -> Document:
    """A ready document whose every title and body carries a canary; its title one too."""
    groups = dict(tenant.groups.values_list("slug", "id"))
    rows = []
    for key, parent, title, level, slugs, body in sections:
        readable = _may_read(tenant.pk, level, [groups[s] for s in slugs])
        where = f"{tenant.slug}/{name}/{key}"
        titled = f"{title} {w.add(where + ' title', tenant.pk, readable)}" if title else ""
        rows.append((key, parent, titled, level, slugs, f"{body} {w.add(where + ' body', tenant.pk, readable)}."))
    policies = [(level, [groups[s] for s in slugs]) for _, _, _, level, slugs, _ in sections]

    def title_readable(m: Membership) -> bool:
        return any(_may_read(tenant.pk, level, ids)(m) for level, ids in policies)

    title = f"{name.capitalize()} {w.add(f'{tenant.slug}/{name} document title', tenant.pk, title_readable)}"
    document = make_document(tenant, title=title, sections=rows, default=default, source=f"{name}.md")
    if created_by is not None:
        IngestionJob.objects.create(tenant=tenant, document=document, created_by=created_by.user,
                                    status=IngestionJob.Status.SUCCEEDED, stage="done")
    return document


def _failed_document(w: CrawlWorld, tenant, uploader: Membership, retried_by: Membership) -> Document:
    """A first ingestion that failed, and a retry by someone else that failed the same way: no sections
    (the default policy decides who sees the document), and an error that quotes the line it stumbled
    on -- in full only for the uploader of those bytes and admins who may read every section (``kb.selectors.error_in_full``);
    whoever retried sees the job, but the error without document text."""
    level = CONF
    title = f"Import {w.add(f'{tenant.slug}/import document title', tenant.pk, _may_read(tenant.pk, level, []))}"
    quoted = w.add(f"{tenant.slug}/import error", tenant.pk,
                   lambda m: m.tenant_id == tenant.pk and (
                       (m.role == Role.ADMIN and reads_every_section(m)) or m.user_id == uploader.user_id))
    error = f"line 3: malformed access marker: unexpected 'restricted {quoted}' (expected 'groups: a, b')"
    document = factories.document(tenant, title=title, source="import.md", status=Document.Status.FAILED,
                                  access_level=level, error=error, metadata={CONTENT_BY: uploader.user_id})
    first = IngestionJob.objects.create(
        tenant=tenant, document=document, created_by=uploader.user, status=IngestionJob.Status.FAILED,
        stage="parsing", error=error, stats={CONTENT_BY: uploader.user_id},
    )
    IngestionJob.objects.create(
        tenant=tenant, document=document, created_by=retried_by.user, status=IngestionJob.Status.FAILED,
        stage="parsing", error=error, stats={CONTENT_BY: uploader.user_id, "retry_of": str(first.pk)},
    )
    return document


def _member(w: CrawlWorld, tenant, email, role, clearance, groups=()) -> Membership:
    membership = membership_create(tenant=tenant, email=email, role=role, clearance=clearance, group_slugs=groups)
    w.members.append(membership)
    return membership


@pytest.fixture
def crawl_world(db) -> CrawlWorld:
    w = CrawlWorld()
    acme, globex = tenant_create(slug="acme", name="Acme"), tenant_create(slug="globex", name="Globex")
    for tenant in (acme, globex):
        group_create(tenant=tenant, slug="security-team", name="Security team")
        group_create(tenant=tenant, slug="finance", name="Finance")
    a_admin = _member(w, acme, "admin@acme.test", "admin", "restricted", ["security-team"])  # not in finance
    _member(w, acme, "admin-low@acme.test", "admin", "internal")
    a_editor = _member(w, acme, "editor-finance@acme.test", "editor", "confidential", ["finance"])
    a_public = _member(w, acme, "editor-public@acme.test", "editor", "public")
    _member(w, acme, "both@example.test", "viewer", "internal")  # and an admin of globex
    g_admin = _member(w, globex, "admin@globex.test", "admin", "restricted", ["security-team", "finance"])
    g_viewer = _member(w, globex, "viewer@globex.test", "viewer", "public")
    g_both = _member(w, globex, "both@example.test", "admin", "confidential", ["finance"])

    for tenant, admin, editor, other in ((acme, a_admin, a_editor, a_public), (globex, g_admin, g_both, g_viewer)):
        documents = [
            _document(w, tenant, "policy", POLICY, created_by=admin),
            _document(w, tenant, "vault", VAULT, default=RESTR, created_by=editor),
            _document(w, tenant, "notes", TEAM_NOTES, created_by=admin),
            _failed_document(w, tenant, editor, other),
        ]
        # A second index version with a build under way: the versions pages have a build to show.
        shadow, _ = index_versions.index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=128))
        index_versions.index_version_build(version=shadow, created_by=admin.user)
        seeds = w.seeds.setdefault(tenant.pk, [])
        for document in documents:
            seeds += [reverse("console:document", kwargs={"document_id": document.pk}),
                      reverse("console:document-as-member", kwargs={"document_id": document.pk})]
            for section in Section.objects.filter(document=document):
                seeds += [f"/documents/{document.pk}/?section={section.pk}",
                          reverse("console:section-readers", kwargs={"section_id": section.pk})]
        seeds += [reverse("console:job", kwargs={"job_id": job}) for job in
                  IngestionJob.objects.filter(tenant=tenant).values_list("pk", flat=True)]
    return w


# ----------------------------------------------------------------------------- the crawler


class _Page(HTMLParser):
    """Links, htmx GETs and GET forms of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.htmx: list[tuple[str, str]] = []  # (url, target id)
        self.forms: list[dict] = []
        self._form: dict | None = None
        self._select: dict | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if a.get("hx-get"):
            self.htmx.append((a["hx-get"], (a.get("hx-target") or "#" + a.get("id", "")).lstrip("#")))
        if tag == "form":
            self._form = {"id": a.get("id", ""), "method": a.get("method", "get").lower(),
                          "action": a.get("action", ""), "inputs": {}, "selects": {}}
            self.forms.append(self._form)
        elif self._form is not None and tag == "input" and a.get("name"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self._form["inputs"][a["name"]] = a.get("value", "")
        elif self._form is not None and tag == "select" and a.get("name"):
            self._select = {"options": [], "selected": None}
            self._form["selects"][a["name"]] = self._select
        elif self._select is not None and tag == "option":
            self._select["options"].append(a.get("value", ""))
            if "selected" in a:
                self._select["selected"] = a.get("value", "")

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


@functools.cache  # a path's route is fixed for the run: each path resolved once, not per link
def _route(path: str) -> str | None:
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return match.url_name if match.namespace == "console" else None


def _canonical(url: str) -> str | None:
    """The console URL a link names (the last value of a repeated parameter wins, as the views read
    them, and empty ones are dropped), or None for another origin, a non-console path, or a route the crawler leaves alone."""
    parts = urlsplit(url)
    if parts.netloc not in ("", "testserver") or parts.scheme not in ("", "http"):
        return None
    route = _route(parts.path)
    if route is None or route in SKIP_ROUTES:
        return None
    # An empty field is the field left out, to the console's forms and filters.
    query = {k: v for k, v in parse_qsl(parts.query, keep_blank_values=True) if v}
    return parts.path + ("?" + urlencode(sorted(query.items())) if query else "")


def _form_urls(page_url: str, form: dict, query: str) -> list[str]:
    """A GET form submitted with its defaults, and with each choice of each select in turn; the
    search form with a query for every canary, in every mode with and without expansion."""
    base = dict(form["inputs"])
    for name, select in form["selects"].items():
        options = select["options"]
        base[name] = select["selected"] if select["selected"] is not None else (options[0] if options else "")
    variants = [{}]
    if "query" in base:  # the search playground
        base.update(query=query, top_k="100", max_contexts="50", context_token_budget="100000")
        modes = form["selects"].get("mode", {}).get("options", [])
        variants += [{"mode": mode, "expand": expand} for mode, expand in product(modes, ("parent", "none"))]
    for name, select in form["selects"].items():
        variants += [{name: option} for option in select["options"]]
    action = urljoin(page_url, form["action"] or page_url)
    return [f"{urlsplit(action).path}?{urlencode({**base, **variant})}" for variant in variants]


@dataclass
class Crawl:
    member: Membership
    pages: int = 0
    seen: dict[str, set[str]] = field(default_factory=dict)  # canary -> urls where it was shown
    leaks: list[str] = field(default_factory=list)
    # canary -> whether the member may read it: asked once a crawl (crawling changes nothing), not once a page.
    readable: dict[str, bool] = field(default_factory=dict)


def crawl(w: CrawlWorld, member: Membership, query: str) -> Crawl:
    client = console_client(member)
    result = Crawl(member)
    # From the dashboard, and typed in by hand: the pages of every id of the member's tenant (each
    # section chosen on its document's page, who can read it, each job) and a sample of the other
    # tenant's (404s, as the authorization matrix pins; here: with no text of theirs either).
    seeds = [url for tenant_id, urls in w.seeds.items() for url in (urls if tenant_id == member.tenant_id
                                                                    else urls[::5])]
    queue = deque([("/", "")] + [(url, "") for url in seeds])
    visited: set[tuple[str, str]] = set()
    forms: set[tuple] = set()
    variants: dict[str, int] = {}  # path -> requests made with some query string (or htmx) on it
    while queue and result.pages < MAX_PAGES:
        raw, target = queue.popleft()
        url = _canonical(raw)
        if url is None or (url, target) in visited:
            continue
        path = urlsplit(url).path
        if variants.get(path, 0) >= MAX_VARIANTS:
            continue
        visited.add((url, target))
        variants[path] = variants.get(path, 0) + 1
        headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": target} if target else {}
        response = client.get(url, **headers)
        result.pages += 1
        assert response.status_code < 500, f"{member.user.email}: {url} answered {response.status_code}"
        if "text/html" not in response.get("Content-Type", ""):
            continue
        body = response.content.decode()
        shown = url.replace(quote_plus(query), "<the query>") + (f" (htmx, #{target})" if target else "")
        _inspect(w, result, shown, body.replace(query, "<the query>"))
        if response.status_code != 200:
            continue
        page = _Page()
        page.feed(body)
        queue.extend((urljoin(url, href), "") for href in page.links)
        queue.extend((urljoin(url, href), target) for href, target in page.htmx)
        for form in page.forms:
            # Each form once (a results page renders its form again, with the last choices made).
            key = (urlsplit(urljoin(url, form["action"] or url)).path, form["id"], tuple(sorted(form["selects"])))
            if form["method"] == "get" and key not in forms:
                forms.add(key)
                queue.extend((u, "") for u in _form_urls(url, form, query))
    return result


def _inspect(w: CrawlWorld, result: Crawl, url: str, body: str) -> None:
    member = result.member
    for token in set(CANARY.findall(body.replace("<mark>", "").replace("</mark>", ""))):
        canary = w.canaries.get(token)
        if canary is None:
            continue
        if token not in result.readable:
            result.readable[token] = canary.readable(member)
        if result.readable[token]:
            result.seen.setdefault(token, set()).add(url)
            continue
        whose = "another tenant's" if canary.tenant_id != member.tenant_id else "unreadable"
        result.leaks.append(f"{member.user.email} ({member.tenant.slug}, {member.role}, "
                            f"{AccessLevel(member.clearance).label}) saw {whose} {canary.where} at {url}")


@pytest.fixture
def constant_query_vector(monkeypatch):
    """Every chunk here has the same embedding (``make_document``), so no query vector could change
    which rows a vector search returns; the access predicate is what the crawl tests, the same for
    any vector. So the query is not run through the model (loading it is most of a crawl's time)."""
    monkeypatch.setattr(search, "embed_query", lambda query: [0.01] * EMBEDDING_DIMENSIONS)


def test_no_page_shows_a_member_text_they_may_not_read(crawl_world, constant_query_vector):
    w = crawl_world
    query = " or ".join(sorted(w.canaries))
    assert len(query) < 4000  # the search form's limit
    before = _state()
    leaks, seen, pages = [], {}, {}
    for member in w.members:
        result = crawl(w, member, query)
        leaks += result.leaks
        pages[f"{member.user.email}@{member.tenant.slug}"] = result.pages
        for token, urls in result.seen.items():
            seen.setdefault(token, set()).update(urls)
    print("pages crawled per member:", pages, "total", sum(pages.values()))
    assert not leaks, f"{len(leaks)} leaks:\n" + "\n".join(leaks[:40])
    unseen = sorted(c.where for t, c in w.canaries.items() if t not in seen)
    assert not unseen, f"canaries nobody was shown (the crawl missed their pages): {unseen}"
    assert _state() == before, "crawling changed the database"
