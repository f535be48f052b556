"""The access policy, in one place: levels, the policy value, inheritance, the read rule,
"implies", and the heading path a reader may see.

Pure Python (standard library only): the ingestion library resolves access markers with it
at parse time, and the Django side stores, re-derives and checks policies with it. The same
read rule as a SQL predicate is :func:`accounts.access.readable_q`; a Hypothesis property
(``tests/test_access_rule.py``) keeps the two in agreement. ``docs/architecture.md`` lists
what else reads this module (database constraints, marker syntax, the API's level names).

The rule: a member may read a section when their clearance is at least its level and, if the
section names groups, they are in at least one of them. A section's policy is its own (an
access marker, or an override through the API), else its parent's, else the document's
default. Admins are not above the read rule; they may only *set* any policy.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum


class AccessLevel(IntEnum):
    """Ordered from least to most sensitive; the value is the rank stored in the database."""

    PUBLIC = 0
    INTERNAL = 1
    CONFIDENTIAL = 2
    RESTRICTED = 3

    @property
    def label(self) -> str:
        """The level's name: what markers, the API and messages use (``"internal"``)."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: object) -> AccessLevel:
        """:func:`parse_level`."""
        return parse_level(name)


LEVEL_NAMES: tuple[str, ...] = tuple(level.label for level in AccessLevel)
# For database fields and their check constraints (plain values, so migrations stay plain).
LEVEL_CHOICES: list[tuple[int, str]] = [(level.value, level.label) for level in AccessLevel]
MAX_LEVEL: int = max(AccessLevel).value
# The level of an upload that names none, and of a policy built without one.
DEFAULT_LEVEL = AccessLevel.INTERNAL


class UnknownAccessLevel(ValueError):
    """A level that is not one of :data:`LEVEL_NAMES` (or, as a rank, not one of their ranks)."""


def parse_level(name: object) -> AccessLevel:
    """The level called exactly ``name`` (``"internal"``); anything else raises
    :class:`UnknownAccessLevel` naming the known levels (fail closed)."""
    for level in AccessLevel:
        if level.label == name:
            return level
    raise UnknownAccessLevel(f"unknown access level {name!r}; expected one of {', '.join(LEVEL_NAMES)}")


def _level(value: AccessLevel | int | str) -> AccessLevel:
    if isinstance(value, str):
        return parse_level(value)
    try:
        return AccessLevel(value)
    except ValueError:
        raise UnknownAccessLevel(f"unknown access level {value!r}; expected one of {', '.join(LEVEL_NAMES)}") from None


def assignable_levels(clearance: AccessLevel | int) -> tuple[AccessLevel, ...]:
    """The levels a member who is not an admin may set (on an upload, a section, a document): those
    at most their clearance. (Admins may set any; groups: those the member is in.) The one rule for
    the service's check (``kb.permissions.policy_check_assignable``) and the forms that offer levels."""
    return tuple(level for level in AccessLevel if level <= clearance)


# ----------------------------------------------------------------------------- implies


def policy_implies(
    inner_level: int, inner_groups: Iterable[Hashable], outer_level: int, outer_groups: Iterable[Hashable]
) -> bool:
    """True when everyone who may read the inner policy may also read the outer one.

    A reader needs the level (or a higher one) and, when there are groups, one of them: so
    the inner level may not be lower, and the inner groups must be a non-empty subset of the
    outer ones unless the outer policy names none. Markers may only narrow (the inner policy
    must imply what it would inherit), and an ancestor's title may be shown with a
    descendant's text only when the descendant's policy implies the ancestor's.
    """
    inner, outer = set(inner_groups), set(outer_groups)
    if inner_level < outer_level:
        return False
    if not outer:
        return True
    return bool(inner) and inner <= outer


def policy_meet(
    one: tuple[int, Iterable[Hashable]], other: tuple[int, Iterable[Hashable]]
) -> tuple[int, tuple] | None:
    """The widest policy that implies both ``(level, groups)`` policies (:func:`policy_implies`: its readers may
    read each): the higher level, and the groups both name (those of the one that names any, when the other names
    none); None when both name groups and share none (no policy is within both). Groups come back sorted."""
    mine, theirs = set(one[1] or ()), set(other[1] or ())
    groups = mine & theirs if mine and theirs else mine | theirs
    if mine and theirs and not groups:
        return None
    return max(int(one[0]), int(other[0])), tuple(sorted(groups))


# ----------------------------------------------------------------------------- the policy value


@dataclass(frozen=True)
class Policy:
    """A level and the groups of which a reader needs one (none: no group is needed).

    ``level`` is kept as the level's name (``"internal"``), as markers and messages spell it;
    a rank or an :class:`AccessLevel` is accepted too, and :attr:`rank` gives the enum.
    ``groups`` are kept sorted and without repeats, and are named one way per side: by slug in
    the pure library (a file's markers, the upload's default while a file is parsed and checked,
    and the messages about them), by id on the Django side -- the pipeline turns a parsed file's
    resolved policies into ids once (``pipeline.plan.plan_content``), and every policy
    after that, stored or derived, names groups by id. Never mix the two in one comparison.
    """

    level: str = DEFAULT_LEVEL.label
    groups: tuple[Hashable, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "level", _level(self.level).label)  # validates
        object.__setattr__(self, "groups", tuple(sorted(set(self.groups))))

    @property
    def rank(self) -> AccessLevel:
        return parse_level(self.level)

    def implies(self, outer: Policy) -> bool:
        """:func:`policy_implies` (this policy narrower than or equal to ``outer``)."""
        return policy_implies(self.rank, self.groups, outer.rank, outer.groups)

    def describe(self) -> str:
        """``restricted (groups: a, b)`` -- for messages."""
        return f"{self.level} (groups: {', '.join(map(str, self.groups))})" if self.groups else self.level

    def marker_text(self) -> str:
        """``access: restricted; groups: a, b`` -- the marker spelling, for messages."""
        groups = f"; groups: {', '.join(map(str, self.groups))}" if self.groups else ""
        return f"access: {self.level}{groups}"


# ----------------------------------------------------------------------------- inheritance


@dataclass(frozen=True)
class PolicyNode:
    """One section as inheritance needs it: its key, its parent's key, its own policy (None: inherits)."""

    key: Hashable
    parent: Hashable | None
    own: Policy | None


@dataclass(frozen=True)
class Inherited:
    """A section's ``effective`` policy, and the one it ``inherits`` (what it would have without its own)."""

    inherits: Policy
    effective: Policy


def effective_policies(nodes: Iterable[PolicyNode], default: Policy) -> dict[Hashable, Inherited]:
    """Each section's effective policy: its own, else its parent's effective one, else the
    document's ``default``.

    ``nodes`` come in document order, parents before their children; a parent not among the
    nodes before a section counts as none (the section inherits the default). Nothing is
    checked here: parsing refuses a marker that widens what it inherits, the API lets an
    admin set any policy.
    """
    resolved: dict[Hashable, Inherited] = {}
    for node in nodes:
        parent = resolved.get(node.parent) if node.parent is not None else None
        inherits = parent.effective if parent is not None else default
        resolved[node.key] = Inherited(inherits, node.own if node.own is not None else inherits)
    return resolved


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Reader:
    """What the read rule needs to know about a member: tenant, clearance rank, group ids.

    ``within``: a reader this one is bounded by (see :func:`bounded_reader`); None for a member
    reading as themselves.
    """

    tenant_id: int
    clearance: int
    group_ids: frozenset[int]
    within: Reader | None = None


def bounded_reader(member: Reader, acting: Reader) -> Reader:
    """``member`` as ``acting`` (an admin) may look through their eyes: a section is read when
    ``member`` may read it *and* ``acting`` may read it -- each by the read rule on their own.

    The one rule for every "as this member, bounded by the acting admin" view (search as a
    member, a document as a member): nothing the member would not read, nothing the admin may
    not read. A section open to groups ``a`` and ``b`` is read when the member is in ``a`` and
    the admin in ``b`` (both may read it; neither learns more than they could read alone).
    """
    if member.tenant_id != acting.tenant_id:
        raise ValueError("a member can be looked at only by an admin of their own tenant")
    return Reader(member.tenant_id, member.clearance, member.group_ids, within=acting)


def can_read(reader: Reader, *, level: int, group_ids: Iterable[int]) -> bool:
    """The read rule, in Python (the SQL form is :func:`accounts.access.readable_q`); a bounded
    reader needs its bound to read the section too."""
    groups = set(group_ids)
    own = reader.clearance >= level and (not groups or bool(groups & reader.group_ids))
    return own and (reader.within is None or can_read(reader.within, level=level, group_ids=groups))


# ----------------------------------------------------------------------------- heading paths


@dataclass(frozen=True)
class PathNode:
    """One section as a heading path needs it."""

    key: Hashable
    parent: Hashable | None
    title: str
    level: int
    group_ids: tuple[Hashable, ...]


def heading_path(nodes: Mapping[Hashable, PathNode], key: Hashable, *, shown: Callable[[PathNode], bool]
                 ) -> tuple[str, ...]:
    """The titles of section ``key`` and of its ancestors (root first) for which ``shown`` holds.

    Untitled sections add nothing; an ancestor missing from ``nodes`` ends the path.
    """
    titles: list[str] = []
    current = nodes.get(key)
    while current is not None:
        if current.title and shown(current):
            titles.append(current.title)
        current = nodes.get(current.parent) if current.parent is not None else None
    return tuple(reversed(titles))


def visible_heading_paths(nodes: Iterable[PathNode]) -> dict[Hashable, tuple[str, ...]]:
    """For each section (document order, parents first), the titles of itself and its ancestors
    that *every* reader of the section may read: what is embedded in front of its chunks and
    stored as its heading path. An ancestor whose policy the section's own does not imply is
    left out, so the path never tells a reader a title above their access.
    """
    by_key: dict[Hashable, PathNode] = {}
    paths: dict[Hashable, tuple[str, ...]] = {}
    for node in nodes:
        by_key[node.key] = node

        def implied(ancestor: PathNode, node: PathNode = node) -> bool:
            return policy_implies(node.level, node.group_ids, ancestor.level, ancestor.group_ids)

        paths[node.key] = heading_path(by_key, node.key, shown=implied)
    return paths




# ----------------------------------------------------------------------------- a document's access view


@dataclass(frozen=True)
class AccessNode:
    """One section as a document's access view needs it: key, parent's key, title, own policy (None: inherits)."""

    key: Hashable
    parent: Hashable | None
    title: str
    own: Policy | None


@dataclass(frozen=True)
class DocumentAccess:
    """A document's access view (:func:`document_access`): for each section its effective policy and
    the heading path every reader of it may read; which other sections' context lines it may carry. (Which
    title from the content a member is shown is decided per reader: ``kb.titles.reader_title``.)"""

    effective: dict[Hashable, Policy]
    heading_paths: dict[Hashable, tuple[str, ...]]
    nodes: tuple[PathNode, ...]

    def context_allowed(self, key: Hashable, source: Hashable) -> bool:
        """Whether a line of section ``source``'s text (an import, an enclosing signature) may be
        embedded as context of section ``key``: every reader of ``key`` may read ``source`` (the
        rule of the heading path); a section unknown to the view: no (fail closed)."""
        if key == source:
            return True
        own, other = self.effective.get(key), self.effective.get(source)
        return own is not None and other is not None and own.implies(other)



def document_access(nodes: Iterable[AccessNode], default: Policy) -> DocumentAccess:
    """A document's access view, derived in one place from its section tree (``nodes`` in document
    order, parents first; each with its own policy: a marker's or an override's) and its default
    policy: each section's effective policy (:func:`effective_policies`), its heading path as every
    reader of it may read (:func:`visible_heading_paths`), the context lines it may carry
    (:meth:`DocumentAccess.context_allowed`).

    Ingestion (new and stored sections), re-derivation after a policy change, index builds and the
    upload preview all take their policies, paths, context and title from it.
    """
    ordered = list(nodes)
    resolved = effective_policies((PolicyNode(n.key, n.parent, n.own) for n in ordered), default)
    effective = {n.key: resolved[n.key].effective for n in ordered}
    path_nodes = tuple(
        PathNode(n.key, n.parent, n.title, int(effective[n.key].rank), tuple(effective[n.key].groups)) for n in ordered
    )
    return DocumentAccess(effective, visible_heading_paths(path_nodes), path_nodes)


def readable_heading_path(
    reader: Reader, nodes: Mapping[Hashable, PathNode], key: Hashable, *, also: Iterable[Hashable] = ()
) -> tuple[str, ...]:
    """The titles of section ``key`` and its ancestors that ``reader`` may read (and of those in
    ``also``), root first: the heading path as this one member sees it at query time."""
    forced = set(also)
    return heading_path(
        nodes, key, shown=lambda node: node.key in forced or can_read(reader, level=node.level, group_ids=node.group_ids)
    )


def denial_reasons(
    reader: Reader, *, level: int, group_ids: Iterable[int], group_names: Mapping[int, str] | None = None
) -> list[str]:
    """Why ``reader`` may not read a section of this ``level`` and ``group_ids`` (empty when they
    may: exactly when :func:`can_read` holds), one reason per failed half of the rule:
    ``"clearance internal is below confidential"``, ``"needs the group security-team"`` (or
    ``"needs one of the groups a, b"``). ``group_names`` spells group ids (their slugs); an id
    missing from it is shown as the id.
    """
    if reader.within is not None:
        raise ValueError("the reasons are one member's own: pass the member's reader, not a bounded one")
    reasons: list[str] = []
    if reader.clearance < level:
        reasons.append(f"clearance {_level(reader.clearance).label} is below {_level(level).label}")
    groups = set(group_ids)
    if groups and not groups & reader.group_ids:
        names = sorted(str((group_names or {}).get(g, g)) for g in groups)
        needs = f"the group {names[0]}" if len(names) == 1 else f"one of the groups {', '.join(names)}"
        reasons.append(f"needs {needs}")
    return reasons
