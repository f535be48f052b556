"""The read rule of :mod:`accounts.policy` as a SQL predicate: the Django side of the access policy.

Levels are stored as ranks (``accounts.policy.AccessLevel``) and groups as arrays of group
ids, on sections and denormalised onto chunks, so SQL filters with no join. A Hypothesis
property (``tests/test_access_rule.py``) checks this predicate against
:func:`accounts.policy.can_read` on every combination of level and groups.
"""

from __future__ import annotations

from django.db.models import Q

from accounts.policy import Reader

__all__ = ["readable_q"]


def readable_q(reader: Reader, *, prefix: str = "") -> Q:
    """The read rule for any model with ``tenant``, ``access_level`` and ``access_groups``
    columns (``prefix`` reaches them through a relation, e.g. ``"section__"``).

    ``access_groups`` is an integer array; ``&&`` (overlap) uses its GIN index. A bounded reader
    (:func:`accounts.policy.bounded_reader`) needs its bound's predicate too.
    """
    q = (
        Q(**{f"{prefix}tenant_id": reader.tenant_id})
        & Q(**{f"{prefix}access_level__lte": reader.clearance})
        & (Q(**{f"{prefix}access_groups__len": 0}) | Q(**{f"{prefix}access_groups__overlap": sorted(reader.group_ids)}))
    )
    return q if reader.within is None else q & readable_q(reader.within, prefix=prefix)
