"""Effective access: why a member may not read a section (``accounts.policy.denial_reasons``),
a document as one member sees it (``kb.selectors.document_as_member``) and who can read a
section (``kb.selectors.section_readers``), and the document page's text as the member may read it.

The property at the heart of it runs over random section trees with random policies and random
members: a row says "readable" exactly when ``can_read`` does, its reasons are the rule's failed
halves, and nothing of a section the member may not read -- neither its title nor its text --
appears anywhere in the pages rendered for it (the admin's "view as" page, the member's own
document page and its text view).
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.errors import NotFound, PermissionRefused
from accounts.models import Group
from accounts.policy import AccessLevel, Policy, PolicyNode, Reader, can_read, denial_reasons, effective_policies
from accounts.selectors import reader_for
from accounts.services import group_create, membership_create, tenant_create
from kb.index_versions import index_version_active
from kb.models import Document
from kb.selectors import document_as_member, document_readable_text, readable_spans, section_readers
from tests import factories

# ----------------------------------------------------------------------------- the reasons (pure)

NAMES = {1: "security-team", 2: "legal", 3: "finance"}


def _reader(clearance: AccessLevel, groups=()) -> Reader:
    return Reader(tenant_id=1, clearance=int(clearance), group_ids=frozenset(groups))


def test_reasons_name_the_failed_halves_of_the_rule():
    internal = _reader(AccessLevel.INTERNAL)
    assert denial_reasons(internal, level=AccessLevel.CONFIDENTIAL, group_ids=[], group_names=NAMES) == [
        "clearance internal is below confidential"
    ]
    assert denial_reasons(internal, level=AccessLevel.INTERNAL, group_ids=[1], group_names=NAMES) == [
        "needs the group security-team"
    ]
    assert denial_reasons(internal, level=AccessLevel.RESTRICTED, group_ids=[3, 2], group_names=NAMES) == [
        "clearance internal is below restricted", "needs one of the groups finance, legal",
    ]
    # In one of the groups, clearance enough: nothing to say.
    assert denial_reasons(_reader(AccessLevel.RESTRICTED, [2]), level=3, group_ids=[1, 2], group_names=NAMES) == []
    # A group without a name is shown by its id; no names at all, likewise.
    assert denial_reasons(internal, level=0, group_ids=[9]) == ["needs the group 9"]


@given(
    clearance=st.sampled_from(list(AccessLevel)), level=st.sampled_from(list(AccessLevel)),
    mine=st.frozensets(st.sampled_from([1, 2, 3])), needed=st.frozensets(st.sampled_from([1, 2, 3])),
)
def test_no_reasons_exactly_when_the_rule_admits(clearance, level, mine, needed):
    reader = _reader(clearance, mine)
    reasons = denial_reasons(reader, level=level, group_ids=needed, group_names=NAMES)
    assert (reasons == []) == can_read(reader, level=level, group_ids=needed)
    assert any(r.startswith("clearance ") for r in reasons) == (clearance < level)
    assert any(r.startswith("needs ") for r in reasons) == bool(needed and not needed & mine)


# ----------------------------------------------------------------------------- random documents

GROUPS = ["red", "green", "blue"]
LEVELS = list(AccessLevel)
_serial = itertools.count()


def title(i: int) -> str:
    return f"Heading {i} zebra"


def body(i: int) -> str:
    return f"Body {i} quokka."


@st.composite
def trees(draw):
    """``(parents, own policies, titled)``: node 0 is the root; a node's parent comes before it."""
    n = draw(st.integers(1, 7))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    own = [
        draw(st.one_of(st.none(), st.tuples(st.sampled_from(LEVELS), st.frozensets(st.sampled_from(GROUPS), max_size=2))))
        for _ in range(n)
    ]
    titled = [i > 0 and draw(st.booleans()) for i in range(n)]
    return parents, own, titled


members = st.tuples(
    st.sampled_from(["viewer", "editor", "admin"]), st.sampled_from(LEVELS), st.frozensets(st.sampled_from(GROUPS))
)


def build_document(tenant, tree, default: AccessLevel) -> tuple[Document, dict[int, uuid.UUID], dict[int, Policy]]:
    """A ready document shaped as a parser leaves one: each section's extent holds its heading line,
    its body and its subsections; one chunk per body. Returns the document, the section ids and
    each node's effective policy (group ids)."""
    parents, own, titled = tree
    ids = dict(Group.objects.filter(tenant=tenant).values_list("slug", "id"))
    children: dict[int, list[int]] = {i: [] for i in range(len(parents))}
    for i, parent in enumerate(parents):
        if parent is not None:
            children[parent].append(i)
    text, extents, bodies, preorder, depths = "", {}, {}, [], {}

    def visit(i: int, depth: int) -> None:
        nonlocal text
        start = len(text)
        preorder.append(i)
        depths[i] = depth
        if titled[i]:
            text += "#" * depth + " " + title(i) + "\n"
        bodies[i] = (len(text), len(text) + len(body(i)))
        text += body(i) + "\n\n"
        for child in children[i]:
            visit(child, depth + 1)
        extents[i] = (start, len(text))

    visit(0, 0)
    policies = {
        i: None if own[i] is None else Policy(own[i][0], tuple(ids[g] for g in own[i][1])) for i in range(len(parents))
    }
    effective = effective_policies((PolicyNode(i, parents[i], policies[i]) for i in preorder), Policy(default))
    document = factories.document(tenant, title="Random document", content_type="text/markdown", text=text,
                                  size_bytes=len(text), access_level=default, status=Document.Status.READY)
    version = index_version_active(tenant=tenant)
    section_ids = {i: uuid.uuid4() for i in preorder}
    for order, i in enumerate(preorder):
        policy = effective[i].effective
        section = factories.section(
            document, id=section_ids[i], parent_id=section_ids.get(parents[i]) if parents[i] is not None else None,
            key=str(i), order=order, depth=depths[i], title=title(i) if titled[i] else "",
            heading_path=[title(i)] if titled[i] else [], kind="heading" if titled[i] else ("document" if i == 0
                                                                                          else "region"),
            start=extents[i][0], end=extents[i][1], body_spans=[list(bodies[i])],
            own_level=None if policies[i] is None else int(policies[i].rank),
            own_groups=None if policies[i] is None else list(policies[i].groups),
            access_level=int(policy.rank), access_groups=list(policy.groups),
        )
        factories.chunk(section, version, ordinal=order, start=bodies[i][0], end=bodies[i][1])
    return document, section_ids, {i: effective[i].effective for i in preorder}


def _member(tenant, spec):
    role, clearance, groups = spec
    return membership_create(tenant=tenant, email=f"m{next(_serial)}@example.test", role=role,
                             clearance=clearance.label, group_slugs=sorted(groups))


def _client(membership) -> Client:
    client = Client()
    client.force_login(membership.user)
    return client


def _expected_reasons(reader: Reader, policy: Policy, slugs: dict[int, str]) -> list[str]:
    expected = []
    if reader.clearance < policy.rank:
        expected.append(f"clearance {AccessLevel(reader.clearance).label} is below {policy.level}")
    if policy.groups and not set(policy.groups) & reader.group_ids:
        names = sorted(slugs[g] for g in policy.groups)
        expected.append(f"needs the group {names[0]}" if len(names) == 1 else
                        f"needs one of the groups {', '.join(names)}")
    return expected


PROPERTY = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.django_db
@PROPERTY
@given(tree=trees(), default=st.sampled_from(LEVELS), member_spec=members,
       admin_spec=st.one_of(st.none(), st.tuples(st.just("admin"), st.sampled_from(LEVELS),
                                                 st.frozensets(st.sampled_from(GROUPS)))))
def test_view_as_member_shows_exactly_what_the_member_reads(tree, default, member_spec, admin_spec):
    with transaction.atomic():
        tenant = tenant_create(slug=f"t{next(_serial)}", name="T")
        for slug in GROUPS:
            group_create(tenant=tenant, slug=slug)
        # The admin reads everything, unless the example gives them an access of their own.
        admin = _member(tenant, admin_spec or ("admin", AccessLevel.RESTRICTED, frozenset(GROUPS)))
        member = _member(tenant, member_spec)
        document, section_ids, effective = build_document(tenant, tree, default)
        reader, admin_reader = reader_for(member), reader_for(admin)
        slugs = {gid: slug for slug, gid in Group.objects.filter(tenant=tenant).values_list("slug", "id")}
        reads = {i: can_read(reader, level=p.rank, group_ids=p.groups) for i, p in effective.items()}
        admin_reads = {i: can_read(admin_reader, level=p.rank, group_ids=p.groups) for i, p in effective.items()}
        titled = tree[2]

        response = _client(admin).get(f"/documents/{document.pk}/as/", {"member": member.pk})
        if not any(admin_reads.values()):  # the admin cannot see the document: the same 404 as none
            assert response.status_code == 404
            with pytest.raises(NotFound):
                document_as_member(admin=admin, member=member, document=document)
        else:
            assert response.status_code == 200
            html = response.content.decode()
            view = document_as_member(admin=admin, member=member, document=document)
            by_id = {s.id: s for s in view.sections}
            assert len(view.sections) == len(effective)
            for i, policy in effective.items():
                row = by_id[section_ids[i]]
                assert row.readable == reads[i]
                assert row.reasons == _expected_reasons(reader, policy, slugs)
                shown = reads[i] and admin_reads[i]
                assert row.withheld == (reads[i] and not admin_reads[i])
                # The titles above it: exactly its titled ancestors that both may read.
                above, parent = [], tree[0][i]
                while parent is not None:
                    if titled[parent] and reads[parent] and admin_reads[parent]:
                        above.insert(0, title(parent))
                    parent = tree[0][parent]
                assert row.heading_path == above
                if not shown:
                    assert row.excerpt == "" and row.title == ""
                    assert title(i) not in html and body(i) not in html, f"section {i} leaked"
                else:
                    assert row.excerpt == body(i) and body(i) in html
                    assert row.title == (title(i) if titled[i] else "")
                    assert title(i) in html or not titled[i]
            assert view.sections_readable == sum(reads.values())
            assert view.chunks == len(effective) and view.chunks_readable == sum(reads.values())

        # The member's own document page, its whole text and each readable section's text in context.
        own = _client(member)
        page = own.get(f"/documents/{document.pk}/")
        if not any(reads.values()):
            assert page.status_code == 404
        else:
            assert page.status_code == 200
            pages = [page.content.decode()] + [
                own.get(f"/documents/{document.pk}/", {"section": str(section_ids[i])}).content.decode()
                for i in effective if reads[i]
            ]
            for i in effective:
                for html in pages:
                    if not reads[i]:
                        assert title(i) not in html and body(i) not in html, f"section {i} leaked to its member"
                if reads[i]:
                    assert body(i) in pages[0], "a readable body is missing from the whole text"
        transaction.set_rollback(True)


# ----------------------------------------------------------------------------- readable spans (pure part)


def _row(key, start, end, level, groups=(), parent=None, order=0, bodies=()):
    return {"id": key, "parent_id": parent, "order": order, "start": start, "end": end, "body_spans": list(bodies),
            "access_level": int(level), "access_groups": list(groups)}


def test_readable_spans_follow_the_deepest_section_and_fail_closed():
    viewer = _reader(AccessLevel.INTERNAL)
    rows = [
        _row("root", 0, 100, AccessLevel.INTERNAL, order=0),
        _row("secret", 10, 60, AccessLevel.RESTRICTED, parent="root", order=1, bodies=[(20, 30)]),
        _row("region", 40, 50, AccessLevel.INTERNAL, parent="secret", order=2),  # readable under a hidden heading
        # A malformed row whose body lies outside its extent: the body stays hidden anyway.
        _row("stray", 70, 72, AccessLevel.RESTRICTED, parent="root", order=3, bodies=[(80, 85), ("x", None)]),
    ]
    assert readable_spans(viewer, rows, 120) == [(0, 10), (40, 50), (60, 70), (72, 80), (85, 100)]
    assert readable_spans(_reader(AccessLevel.RESTRICTED), rows, 120) == [(0, 100)]  # 100..120: in no section
    assert readable_spans(viewer, [], 50) == []


# ----------------------------------------------------------------------------- the selectors' own checks


@pytest.fixture
def acme(db):
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    admin = membership_create(tenant=tenant, email="admin@acme.test", role="admin", clearance="restricted",
                              group_slugs=["security-team"])
    viewer = membership_create(tenant=tenant, email="viewer@acme.test", role="viewer", clearance="internal")
    # The root (internal, the default); 1: restricted; 2, under 1: internal again; 3: confidential.
    own = [None, (AccessLevel.RESTRICTED, frozenset()), (AccessLevel.INTERNAL, frozenset()),
           (AccessLevel.CONFIDENTIAL, frozenset())]
    tree = ([None, 0, 1, 0], own, [False, True, True, True])
    for slug in GROUPS:
        group_create(tenant=tenant, slug=slug)
    document, ids, _ = build_document(tenant, tree, AccessLevel.INTERNAL)
    return {"tenant": tenant, "admin": admin, "viewer": viewer, "document": document, "ids": ids}


def test_only_admins_of_the_tenant_may_ask(acme):
    other = tenant_create(slug="other", name="Other")
    stranger = membership_create(tenant=other, email="admin@other.test", role="admin", clearance="restricted")
    with pytest.raises(PermissionRefused):
        document_as_member(admin=acme["viewer"], member=acme["viewer"], document=acme["document"])
    with pytest.raises(PermissionRefused):
        section_readers(admin=acme["viewer"], section_id=acme["ids"][1])
    with pytest.raises(NotFound):  # a member of another tenant
        document_as_member(admin=acme["admin"], member=stranger, document=acme["document"])
    with pytest.raises(NotFound):  # another tenant's admin asking about this document
        document_as_member(admin=stranger, member=stranger, document=acme["document"])
    for section_id in (acme["ids"][1], uuid.uuid4(), "not-a-uuid"):
        with pytest.raises(NotFound):
            section_readers(admin=stranger, section_id=section_id)


def test_section_readers_lists_readers_groups_and_reasons(acme):
    tenant = acme["tenant"]
    membership_create(tenant=tenant, email="red@acme.test", role="viewer", clearance="confidential",
                      group_slugs=["red"])
    membership_create(tenant=tenant, email="low-red@acme.test", role="editor", clearance="public",
                      group_slugs=["red"])
    gone = membership_create(tenant=tenant, email="gone@acme.test", role="viewer", clearance="restricted")
    gone.is_active = False
    gone.save()
    restricted = section_readers(admin=acme["admin"], section_id=acme["ids"][1])
    assert [a.member.email for a in restricted.readers] == ["admin@acme.test"]
    assert {a.member.email: a.reasons for a in restricted.others} == {
        "low-red@acme.test": ["clearance public is below restricted"],
        "red@acme.test": ["clearance confidential is below restricted"],
        "viewer@acme.test": ["clearance internal is below restricted"],
    }
    assert restricted.groups == [] and restricted.inactive == 1
    assert restricted.heading_path == [title(1)]

    from kb.services import section_set_access

    section = acme["document"].sections.get(pk=acme["ids"][3])
    section_set_access(section=section, actor=acme["admin"], access_level="confidential", groups=["red"])
    red = section_readers(admin=acme["admin"], section_id=section.pk)
    assert [a.member.email for a in red.readers] == ["red@acme.test"]
    assert {a.member.email: a.reasons for a in red.others}["viewer@acme.test"] == [
        "clearance internal is below confidential", "needs the group red",
    ]
    assert [(g.slug, g.members, g.readers) for g in red.groups] == [("red", 2, 1)]


def test_the_text_of_a_chosen_section_in_context(acme):
    viewer, document, ids = acme["viewer"], acme["document"], acme["ids"]
    section = document.sections.get(pk=ids[2])  # internal, under the restricted heading 1
    whole = document_readable_text(member=viewer, document=document)
    assert "".join(p.text for p in whole.pieces if p.readable) == body(0) + "\n\n" + "".join(
        [title(2).join(["## ", "\n"]), body(2), "\n\n"])
    hidden = [p for p in whole.pieces if not p.readable]
    assert all(p.text == "" for p in hidden) and sum(p.length for p in hidden) == whole.length - whole.readable_length
    around = document_readable_text(member=viewer, document=document, section=section, context_chars=3)
    assert [p.selected for p in around.pieces if p.readable and body(2) in p.text] == [True]
    assert around.hidden_before > 0 and around.hidden_after >= 0
    assert around.hidden_before + sum(p.length for p in around.pieces) + around.hidden_after == around.length


# ----------------------------------------------------------------------------- the REST endpoints (admins)


def test_the_api_answers_what_the_selectors_say(acme):
    from rest_framework.test import APIClient

    from accounts.services import api_token_create

    _, key = api_token_create(membership=acme["admin"], name="admin")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    document, viewer, ids = acme["document"], acme["viewer"], acme["ids"]
    answer = client.get(f"/api/v1/documents/{document.pk}/as/{viewer.pk}/").json()
    assert answer["member"] == {"id": viewer.pk, "email": "viewer@acme.test", "role": "viewer", "clearance": "internal",
                              "groups": [], "is_active": True}
    assert (answer["sections_readable"], answer["chunks"], answer["chunks_readable"]) == (2, 4, 2)
    rows = {row["id"]: row for row in answer["sections"]}
    hidden = rows[str(ids[1])]
    assert (hidden["readable"], hidden["title"], hidden["excerpt"]) == (False, "", "")
    assert hidden["reasons"] == ["clearance internal is below restricted"] and hidden["access_level"] == "restricted"
    shown = rows[str(ids[2])]
    assert (shown["readable"], shown["title"], shown["excerpt"], shown["heading_path"]) == (True, title(2), body(2), [])
    assert title(1) not in str(answer) and body(1) not in str(answer) and body(3) not in str(answer)

    readers = client.get(f"/api/v1/sections/{ids[3]}/readers/").json()
    assert [r["member"]["email"] for r in readers["readers"]] == ["admin@acme.test"]
    assert readers["others"] == [{"member": {"id": viewer.pk, "email": "viewer@acme.test", "role": "viewer",
                                             "clearance": "internal", "groups": [], "is_active": True},
                                  "reasons": ["clearance internal is below confidential"]}]
    assert (readers["access_level"], readers["groups"], readers["reader_groups"]) == ("confidential", [], [])
    assert client.get(f"/api/v1/documents/{document.pk}/as/999999/").status_code == 404
    assert client.get(f"/api/v1/sections/{uuid.uuid4()}/readers/").status_code == 404
