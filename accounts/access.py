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
