"""Reading tables in their stored order, to catch a read that leaves its order to PostgreSQL.

Without ORDER BY (or with ties in it) PostgreSQL returns rows in whatever order its plan meets them: an index's
order, or the table's stored order, where an updated row is written anew at the end. A test that writes the row
that should come first last (:func:`store_last`) and reads with index scans off (``stored_order_reads``) makes such
a read come out in the wrong order every run (found in CI: ``accounts.invitations.active_memberships_of``)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models import F, QuerySet

_SCANS = ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan")


@pytest.fixture
def stored_order_reads():
    """PostgreSQL reads tables in their stored order for the test (no index scans), on the test's connection."""
    with connection.cursor() as cursor:
        cursor.execute("; ".join(f"SET {name} = off" for name in _SCANS))
    yield
    with connection.cursor() as cursor:
        cursor.execute("; ".join(f"RESET {name}" for name in _SCANS))


def store_last(queryset: QuerySet) -> None:
    """Write the rows of ``queryset`` again, unchanged, so each is stored after every other row of its table."""
    pk = queryset.model._meta.pk.attname
    assert queryset.update(**{pk: F(pk)}) > 0, "no row to store last"
