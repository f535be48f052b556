"""``accounts.policy`` on its own (no database): levels and their parsing, the policy value,
inheritance, and the two heading paths (every reader's, one reader's).

The read rule and "implies" are tabulated in ``tests/test_access_rule.py``; parse-time resolution
in ``tests/ingestion``; re-derivation after a policy change in the pipeline and API tests.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounts.policy import (
    LEVEL_CHOICES,
    LEVEL_NAMES,
    MAX_LEVEL,
    AccessLevel,
    AccessNode,
    PathNode,
    Policy,
    PolicyNode,
    Reader,
    UnknownAccessLevel,
    assignable_levels,
    can_read,
    content_title_shown,
    document_access,
    document_text_shown,
    effective_policies,
    parse_level,
    policy_implies,
    readable_heading_path,
    visible_heading_paths,
)


def test_levels_are_ordered_and_named():
    assert LEVEL_NAMES == ("public", "internal", "confidential", "restricted")
    assert [int(level) for level in AccessLevel] == list(range(len(LEVEL_NAMES)))
    assert MAX_LEVEL == max(AccessLevel) and type(MAX_LEVEL) is int
    # What the migrations hold: changing it needs a migration.
    assert LEVEL_CHOICES == [(0, "public"), (1, "internal"), (2, "confidential"), (3, "restricted")]


def test_parse_level_names_the_known_levels():
    assert parse_level("confidential") is AccessLevel.CONFIDENTIAL is AccessLevel.from_name("confidential")
    for bad in ("Confidential", " internal", "secret", "", None, 2):
        with pytest.raises(UnknownAccessLevel, match="expected one of public, internal, confidential, restricted"):
            parse_level(bad)
    assert issubclass(UnknownAccessLevel, ValueError)


def test_policy_normalises_level_and_groups():
    assert Policy("restricted", ("b", "a", "b")) == Policy(AccessLevel.RESTRICTED, ["a", "b"]) == Policy(3, ("a", "b"))
    assert Policy(3, ("a", "b")).level == "restricted" and Policy(3).rank is AccessLevel.RESTRICTED
    assert Policy().level == "internal" and Policy(2, [9, 4]).groups == (4, 9)
    for bad in ("top", 7, -1):
        with pytest.raises(UnknownAccessLevel):
            Policy(bad)
    assert Policy("restricted", ("a", "b")).describe() == "restricted (groups: a, b)"
    assert Policy("restricted", ("a", "b")).marker_text() == "access: restricted; groups: a, b"
    assert Policy("public").marker_text() == "access: public"


POLICIES = st.builds(Policy, st.sampled_from(list(AccessLevel)), st.lists(st.integers(1, 3), max_size=3))


@given(inner=POLICIES, outer=POLICIES, clearance=st.sampled_from(list(AccessLevel)),
       groups=st.frozensets(st.integers(1, 3)))
def test_implies_means_every_reader_of_the_inner_reads_the_outer(inner, outer, clearance, groups):
    reader = Reader(tenant_id=1, clearance=clearance, group_ids=groups)
    assert inner.implies(outer) is policy_implies(inner.rank, inner.groups, outer.rank, outer.groups)
    if inner.implies(outer) and can_read(reader, level=inner.rank, group_ids=inner.groups):
        assert can_read(reader, level=outer.rank, group_ids=outer.groups)


def test_effective_policies_own_else_parent_else_default():
    default = Policy("internal")
    secret = Policy("restricted", ("sec",))
    resolved = effective_policies([
        PolicyNode("root", None, None),
        PolicyNode("a", "root", secret),
        PolicyNode("a1", "a", None),
        PolicyNode("b", "root", Policy("public")),
        PolicyNode("orphan", "missing", None),
    ], default)
    assert {key: r.effective for key, r in resolved.items()} == {
        "root": default, "a": secret, "a1": secret, "b": Policy("public"), "orphan": default,
    }
    assert resolved["a"].inherits == default and resolved["a1"].inherits == secret


def _tree() -> list[PathNode]:
    # Handbook (internal) > Incident (restricted/1) > Playbook (restricted/1) > untitled internal note
    return [
        PathNode("h", None, "Handbook", AccessLevel.INTERNAL, ()),
        PathNode("i", "h", "Incident", AccessLevel.RESTRICTED, (1,)),
        PathNode("p", "i", "Playbook", AccessLevel.RESTRICTED, (1,)),
        PathNode("n", "p", "", AccessLevel.INTERNAL, ()),
    ]


def test_visible_heading_paths_hold_only_what_every_reader_may_read():
    assert visible_heading_paths(_tree()) == {
        "h": ("Handbook",), "i": ("Handbook", "Incident"), "p": ("Handbook", "Incident", "Playbook"),
        "n": ("Handbook",),  # an internal note under restricted headings does not carry their titles
    }


@pytest.mark.parametrize(("clearance", "groups"), list(itertools.product(AccessLevel, [frozenset(), frozenset({1})])))
def test_readable_heading_path_is_what_one_reader_may_read(clearance, groups):
    nodes = {node.key: node for node in _tree()}
    reader = Reader(tenant_id=1, clearance=clearance, group_ids=groups)
    inside = clearance == AccessLevel.RESTRICTED and groups
    handbook = ("Handbook",) if clearance >= AccessLevel.INTERNAL else ()
    assert readable_heading_path(reader, nodes, "n") == handbook + (("Incident", "Playbook") if inside else ())
    assert readable_heading_path(reader, nodes, "p", also={"p"}) == handbook + (("Incident",) if inside else ()) + (
        "Playbook",)


@given(
    st.lists(st.tuples(st.sampled_from(["", "Plan", "Keys"]), st.integers(0, 3),
                       st.frozensets(st.integers(1, 3), max_size=2)), min_size=1, max_size=5),
    st.sampled_from(["Plan", "Keys", "Front matter"]),
)
def test_a_content_title_is_shown_only_when_every_reader_may_read_its_sections(rows, title):
    """The property behind ``content_title_shown``: whoever may read any section of the document
    (and so sees its title) may read every section bearing that title -- the root, for a title no
    section bears (a front matter's: text of the root)."""
    nodes = [PathNode(i, None if i == 0 else 0, t, level, tuple(groups)) for i, (t, level, groups) in enumerate(rows)]
    readers = [Reader(1, c, frozenset(g)) for c in range(4) for g in ((), (1,), (2,), (3,), (1, 2))]
    bearers = [n for n in nodes if n.title == title] or nodes[:1]
    leaks = any(
        any(can_read(r, level=n.level, group_ids=n.group_ids) for n in nodes)
        and not can_read(r, level=b.level, group_ids=b.group_ids)
        for r in readers for b in bearers
    )
    assert content_title_shown(title, nodes) is not leaks
    assert document_text_shown(nodes) is not any(
        any(can_read(r, level=n.level, group_ids=n.group_ids) for n in nodes)
        and not can_read(r, level=nodes[0].level, group_ids=nodes[0].group_ids) for r in readers)


def test_content_title_shown_cases():
    root, plan = PathNode("r", None, "", 1, ()), PathNode("p", "r", "Plan", 3, (1,))
    assert not content_title_shown("Plan", [root, plan])  # a restricted heading of an internal document
    assert content_title_shown("Front matter", [root, plan])  # no section bears it: the root's, read by every reader
    wide = PathNode("w", "r", "Office", 1, ())
    closed = PathNode("r", None, "", 2, ())
    assert not content_title_shown("Front matter", [closed, wide])  # a section wider than the root: not shown
    assert not document_text_shown([closed, wide]) and document_text_shown([root, plan])
    assert content_title_shown("Plan", [PathNode("r", None, "", 3, (1,)), plan])  # every reader reads it
    assert not content_title_shown("P" * 600, [root, PathNode("p", "r", "P" * 500, 3, ())])  # compared on 500


_policies = st.one_of(st.none(), st.builds(Policy, st.integers(0, 3), st.frozensets(st.integers(1, 3), max_size=2)))


@given(st.lists(st.tuples(st.integers(0, 10), st.sampled_from(["", "A", "B"]), _policies), min_size=1, max_size=8),
       st.builds(Policy, st.integers(0, 3), st.frozensets(st.integers(1, 3), max_size=2)))
def test_a_documents_access_view_is_its_rules_in_one_place(rows, default):
    """``document_access`` gives each section the effective policy of the inheritance rule, the
    heading path every reader may read, context only from sections every reader may read, and the
    title rule -- whatever the tree."""
    nodes = [AccessNode(i, (parent % i) if i else None, title, own) for i, (parent, title, own) in enumerate(rows)]
    view = document_access(nodes, default)
    resolved = effective_policies((PolicyNode(n.key, n.parent, n.own) for n in nodes), default)
    assert view.effective == {n.key: resolved[n.key].effective for n in nodes}
    path_nodes = [PathNode(n.key, n.parent, n.title, int(view.effective[n.key].rank), view.effective[n.key].groups)
                  for n in nodes]
    assert view.heading_paths == visible_heading_paths(path_nodes)
    for title in ("A", "B", "front matter"):
        assert view.title_shown(title) is content_title_shown(title, path_nodes)
    for a in view.effective:
        assert view.context_allowed(a, a)
        for b in view.effective:
            assert view.context_allowed(a, b) is (a == b or view.effective[a].implies(view.effective[b]))
        assert not view.context_allowed(a, "no such section")


def test_assignable_levels_are_those_at_most_the_clearance():
    assert assignable_levels(AccessLevel.INTERNAL) == (AccessLevel.PUBLIC, AccessLevel.INTERNAL)
    assert assignable_levels(AccessLevel.RESTRICTED) == tuple(AccessLevel)
    assert assignable_levels(0) == (AccessLevel.PUBLIC,)
