"""Pages of a long list without reading past them: seek ("keyset") pagination and a capped count.

A list of 10,000 documents paged with OFFSET made PostgreSQL produce -- and test the member's
access to -- every row before the page, and the page count was a full count of what the member may
see (issue #14). Here the "Older"/"Newer" links carry the sort key of the page's last or first row
(``after`` / ``before``), so the next page starts where this one ended; ``page`` is then only the
number shown. A ``page`` without a cursor (typed in, bookmarked) still works, by offset, over the
rows' ids alone. The count stops at ``count_cap``: beyond it the page says "more than".

A cursor is not trusted: one that does not decode into values of the sort's fields is ignored (the
first page), and it only narrows the queryset it is given -- never what a selector admits.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.core.paginator import Page, Paginator
from django.db.models import IntegerField, Q, QuerySet
from django.http import QueryDict

CURSOR_PARAMS = ("after", "before")


@dataclass
class SeekPage:
    """One page: its rows, its number, and the query strings of the pages beside it (None: none)."""

    object_list: list
    number: int
    previous_query: str | None
    next_query: str | None
    count: int  # exact when not ``count_capped``; else the cap
    count_capped: bool
    page_size: int

    @property
    def has_previous(self) -> bool:
        return self.previous_query is not None

    @property
    def has_next(self) -> bool:
        return self.next_query is not None

    @property
    def num_pages(self) -> int | None:
        """The number of pages, when the count is exact."""
        return None if self.count_capped else max(1, -(-self.count // self.page_size))


def page_number(value, default: int = 1) -> int:
    """A ``?page=`` as a number from 1 to 10^9, else ``default``: never ``str.isdigit`` then ``int`` -- "²" is a digit
    ``int`` refuses, and ``int`` of more than 4,300 digits raises (found attacking the console, seventeenth session:
    each answered 500)."""
    if value is None or len(str(value)) > 12:
        return default
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return default
    return number if 0 < number < 10**9 else default


Cut = TypeVar("Cut")


def selector_page(asked, size: int, fetch: Callable[[int], Cut]) -> tuple[Cut, Page]:
    """A page a selector cuts itself (``fetch(offset)``: an object with its rows and the ``count`` of all), for
    ``?page=`` = ``asked``: what is no page number is the nearest page, as Django's Paginator reads it, and a page
    past the last is the last (fetched again). Returns the selector's page and the Paginator's page of numbers (no
    rows) for the pager. The review queue's and a source's detached paths."""
    number = page_number(asked)
    cut = fetch((number - 1) * size)
    page = Paginator(range(cut.count), size).get_page(asked)  # the page numbers: no rows
    if page.number != number:
        cut = fetch((page.number - 1) * size)
    return cut, page


def _field_name(term: str) -> str:
    return term.removeprefix("-")


def _encode(row, order: tuple[str, ...]) -> str:
    values = []
    for term in order:
        value = getattr(row, _field_name(term))
        values.append(value.isoformat() if hasattr(value, "isoformat") else value if isinstance(value, int) else str(value))
    return base64.urlsafe_b64encode(json.dumps(values, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode(token: str | None, order: tuple[str, ...], queryset: QuerySet) -> list | None:
    """The sort key values a cursor holds, each converted by its field (a column, or an annotation of the
    queryset's: a shown title, ``kb.titles.shown_title_sql``); None for anything else."""
    if not token or len(token) > 2000:
        return None
    try:
        values = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(values, list) or len(values) != len(order):
        return None
    converted = []
    for term, value in zip(order, values, strict=True):
        annotation = queryset.query.annotations.get(_field_name(term))
        try:
            field = annotation.output_field if annotation is not None else queryset.model._meta.get_field(
                _field_name(term))
        except FieldDoesNotExist:
            return None
        # The JSON type _encode writes: a number for an integer column, text for any other.
        if type(value) is not (int if isinstance(field, IntegerField) else str):
            return None
        try:
            converted.append(field.to_python(value))
        except (ValidationError, ValueError, TypeError, OverflowError):
            return None
        if converted[-1] is None or (isinstance(converted[-1], int) and not -(2**63) <= converted[-1] < 2**63):
            return None
    return converted


def _beyond(order: tuple[str, ...], values: list) -> Q:
    """Rows after ``values`` in ``order`` (a lexicographic comparison, each field in its direction)."""
    condition = Q()
    for i, term in enumerate(order):
        step = Q(**{f"{_field_name(term)}__{'lt' if term.startswith('-') else 'gt'}": values[i]})
        for before, value in zip(order[:i], values, strict=False):
            step &= Q(**{_field_name(before): value})
        condition |= step
    return condition


def _reversed(order: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(term[1:] if term.startswith("-") else f"-{term}" for term in order)


def _query(base: QueryDict, **params) -> str:
    query = base.copy()
    for key, value in params.items():
        query[key] = str(value)
    return query.urlencode()


def seek_page(queryset: QuerySet, *, order: tuple[str, ...], params: QueryDict, page_size: int = 25,
              count_cap: int = 1000) -> SeekPage:
    """The page of ``queryset`` (sorted by ``order``, whose last term must make rows unique) that
    ``params`` ask for (``page``, and ``after`` or ``before`` as the links of a page set them)."""
    queryset = queryset.order_by(*order)
    number = page_number(params.get("page"))
    after = _decode(params.get("after"), order, queryset)
    before = None if after else _decode(params.get("before"), order, queryset)
    if after is not None:
        rows = list(queryset.filter(_beyond(order, after))[: page_size + 1])
        has_previous, has_next = True, len(rows) > page_size
        rows = rows[:page_size]
        number = max(number, 2)
    elif before is not None:
        backwards = _reversed(order)
        rows = list(queryset.filter(_beyond(backwards, before)).order_by(*backwards)[: page_size + 1])
        has_previous, has_next = len(rows) > page_size, True
        rows = rows[:page_size][::-1]
        number = number if has_previous and number > 1 else 1
    elif number == 1:
        rows = list(queryset[: page_size + 1])
        has_previous, has_next = False, len(rows) > page_size
        rows = rows[:page_size]
    else:
        # By offset, over the ids alone: the rows' other columns (and any per-row subqueries of
        # the queryset) only for the page itself.
        ids = list(queryset.values_list("pk", flat=True)[(number - 1) * page_size : number * page_size + 1])
        if not ids and number > 1:
            return seek_page(queryset, order=order, params=_without_page(params), page_size=page_size,
                             count_cap=count_cap)
        by_id = {row.pk: row for row in queryset.filter(pk__in=ids[:page_size])}
        rows = [by_id[pk] for pk in ids[:page_size] if pk in by_id]
        has_previous, has_next = number > 1, len(ids) > page_size
    count = queryset.order_by().values("pk")[: count_cap + 1].count()
    base = params.copy()
    for key in ("page", *CURSOR_PARAMS):
        base.pop(key, None)
    previous_query = next_query = None
    if has_previous and rows:
        # The first page is the list's own address (no cursor): it is always exact.
        previous_query = base.urlencode() if number <= 2 else _query(base, page=number - 1, before=_encode(rows[0], order))
    if has_next and rows:
        next_query = _query(base, page=number + 1, after=_encode(rows[-1], order))
    return SeekPage(object_list=rows, number=number, previous_query=previous_query, next_query=next_query,
                    count=min(count, count_cap), count_capped=count > count_cap, page_size=page_size)


def _without_page(params: QueryDict) -> QueryDict:
    query = params.copy()
    query.pop("page", None)
    return query
