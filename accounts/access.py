"""The access rule of BRIEF §2, in exactly one Python function and one SQL predicate.

A member may read a section (and so every chunk of it) when
``clearance >= level`` and (``groups`` is empty or the member is in one of them).

Levels are stored as ranks (0 public .. 3 restricted) and groups as arrays of
group ids, on sections and denormalised onto chunks, so SQL filters with no join.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import models
from django.db.models import Q


class AccessLevel(models.IntegerChoices):
    PUBLIC = 0, "public"
    INTERNAL = 1, "internal"
    CONFIDENTIAL = 2, "confidential"
    RESTRICTED = 3, "restricted"

    @classmethod
    def from_name(cls, name: str) -> AccessLevel:
        """Parse a level name; unknown names raise ValueError (fail closed)."""
        for member in cls:
            if member.label == name:
                return member
        raise ValueError(f"unknown access level {name!r}; expected one of {', '.join(cls.labels)}")


@dataclass(frozen=True)
class Reader:
    """What the rule needs to know about a member: tenant, clearance rank, group ids."""

    tenant_id: int
    clearance: int
    group_ids: frozenset[int]


def can_read(reader: Reader, *, level: int, group_ids: Iterable[int]) -> bool:
    """The Python form of the access rule."""
    groups = set(group_ids)
    return reader.clearance >= level and (not groups or bool(groups & reader.group_ids))


def readable_q(reader: Reader, *, prefix: str = "") -> Q:
    """The SQL form of the access rule, for any model with ``tenant``, ``access_level`` and
    ``access_groups`` columns (``prefix`` reaches them through a relation, e.g. ``"section__"``).

    ``access_groups`` is an integer array; ``&&`` (overlap) uses its GIN index.
    """
    return (
        Q(**{f"{prefix}tenant_id": reader.tenant_id})
        & Q(**{f"{prefix}access_level__lte": reader.clearance})
        & (Q(**{f"{prefix}access_groups__len": 0}) | Q(**{f"{prefix}access_groups__overlap": sorted(reader.group_ids)}))
    )


def policy_implies(inner_level: int, inner_groups: Iterable[int], outer_level: int, outer_groups: Iterable[int]) -> bool:
    """True when everyone who may read the inner policy may also read the outer one.

    Used to decide whether an ancestor's title may be shown with (or embedded into)
    a descendant's text without telling its readers something they may not read.
    """
    inner, outer = set(inner_groups), set(outer_groups)
    if inner_level < outer_level:
        return False
    if not outer:
        return True
    return bool(inner) and inner <= outer


@dataclass(frozen=True)
class PathNode:
    """One section as :func:`visible_heading_paths` needs it (document order, parents first)."""

    key: object
    parent: object | None
    title: str
    level: int
    group_ids: tuple[int, ...]


def visible_heading_paths(nodes: Iterable[PathNode]) -> dict[object, tuple[str, ...]]:
    """For each section, the titles of itself and its ancestors that *every* reader of the section
    may read (root first). What is embedded in front of a chunk and what a result shows as its
    heading path must never tell a reader a title above their access, so an ancestor whose policy
    is not implied by the section's own is left out.
    """
    by_key: dict[object, PathNode] = {}
    paths: dict[object, tuple[str, ...]] = {}
    for node in nodes:
        by_key[node.key] = node
        titles: list[str] = []
        current: PathNode | None = node
        while current is not None:
            if current.title and policy_implies(node.level, node.group_ids, current.level, current.group_ids):
                titles.append(current.title)
            current = by_key.get(current.parent) if current.parent is not None else None
        paths[node.key] = tuple(reversed(titles))
    return paths
