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
    document_access,
    effective_policies,
    parse_level,
    policy_implies,
    policy_meet,
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


ALL_POLICIES = [(int(level), groups) for level in AccessLevel
                for n in range(4) for groups in itertools.combinations((1, 2, 3), n)]


@given(one=POLICIES, other=POLICIES)
def test_the_meet_of_two_policies_is_the_widest_policy_within_both(one, other):
    """``policy_meet`` (the bound a sync keeps an admin's narrowing at): it implies both, every policy that implies
    both implies it, and it is None exactly when no policy implies both (two disjoint lists of groups)."""
    meet = policy_meet((one.rank, one.groups), (other.rank, other.groups))
    within = [p for p in ALL_POLICIES
              if policy_implies(*p, one.rank, one.groups) and policy_implies(*p, other.rank, other.groups)]
    if meet is None:
        assert within == [] and one.groups and other.groups and not set(one.groups) & set(other.groups)
        return
    assert policy_implies(*meet, one.rank, one.groups) and policy_implies(*meet, other.rank, other.groups)
    assert all(policy_implies(*p, *meet) for p in within)
    assert meet == policy_meet((other.rank, other.groups), (one.rank, one.groups))


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


_policies = st.one_of(st.none(), st.builds(Policy, st.integers(0, 3), st.frozensets(st.integers(1, 3), max_size=2)))


@given(st.lists(st.tuples(st.integers(0, 10), st.sampled_from(["", "A", "B"]), _policies), min_size=1, max_size=8),
       st.builds(Policy, st.integers(0, 3), st.frozensets(st.integers(1, 3), max_size=2)))
def test_a_documents_access_view_is_its_rules_in_one_place(rows, default):
    """``document_access`` gives each section the effective policy of the inheritance rule, the
    heading path every reader may read, context only from sections every reader may read -- whatever the tree."""
    nodes = [AccessNode(i, (parent % i) if i else None, title, own) for i, (parent, title, own) in enumerate(rows)]
    view = document_access(nodes, default)
    resolved = effective_policies((PolicyNode(n.key, n.parent, n.own) for n in nodes), default)
    assert view.effective == {n.key: resolved[n.key].effective for n in nodes}
    path_nodes = [PathNode(n.key, n.parent, n.title, int(view.effective[n.key].rank), view.effective[n.key].groups)
                  for n in nodes]
    assert view.heading_paths == visible_heading_paths(path_nodes)
    for a in view.effective:
        assert view.context_allowed(a, a)
        for b in view.effective:
            assert view.context_allowed(a, b) is (a == b or view.effective[a].implies(view.effective[b]))
        assert not view.context_allowed(a, "no such section")


def test_assignable_levels_are_those_at_most_the_clearance():
    assert assignable_levels(AccessLevel.INTERNAL) == (AccessLevel.PUBLIC, AccessLevel.INTERNAL)
    assert assignable_levels(AccessLevel.RESTRICTED) == tuple(AccessLevel)
    assert assignable_levels(0) == (AccessLevel.PUBLIC,)
