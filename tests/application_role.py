"""The test suite's requests run as the application's role (see ``tests/conftest.py``).

A middleware, outermost, switches the test's own connection (the owner's login) to the role for
the whole request, and back when the response leaves -- also when a client never closes it
(a WSGI caller that skips ``close()`` would leave a switch tied to ``request_finished`` in place).
The Django admin takes the owner path (``bulkhead.middleware.AdminOwnerPathMiddleware``): left as is.
"""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

from django.conf import settings
from django.db import DatabaseError, connection

from bulkhead.middleware import ADMIN_PREFIX


def _execute(sql: str) -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
    except RuntimeError:  # pytest-django blocks the database in this test: the request cannot use it either
        return False
    except DatabaseError:  # unreachable or an aborted transaction: the request meets (and answers) it itself
        if not connection.in_atomic_block:
            connection.close()
        return False
    return True


class ApplicationRoleMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        role = settings.BULKHEAD_APP_DB_ROLE
        if not role or request.path.startswith(ADMIN_PREFIX):
            return self.get_response(request)
        switched = _execute(f'SET ROLE "{role}"')
        try:
            return self.get_response(request)
        finally:
            if switched and connection.connection is not None:
                _execute("RESET ROLE")


@contextmanager
def as_application_role(switch: bool = True):
    """The test's own connection as the application's role for the block (``switch`` False: as it is, the owner) --
    how a migration's data step is tried under row-level security as well as as the owner."""
    if switch:
        with connection.cursor() as cursor:
            cursor.execute(f'SET ROLE "{settings.BULKHEAD_APP_DB_ROLE}"')
            cursor.execute("SELECT current_user")
            assert cursor.fetchone()[0] == settings.BULKHEAD_APP_DB_ROLE  # the block really runs as the role
    try:
        yield
    finally:
        if switch:
            with connection.cursor() as cursor:
                cursor.execute("RESET ROLE")


def run_data_step(step, *, as_role: bool, times: int = 2) -> None:
    """A migration's ``RunPython`` function run ``times`` (as a rerun would) with the app registry and a stand-in for
    the schema editor (what the steps read of it: its connection), as the application's role when ``as_role``."""
    from django.apps import apps

    editor = SimpleNamespace(connection=connection)
    with as_application_role(as_role):
        for _ in range(times):
            step(apps, editor)
