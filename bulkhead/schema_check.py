"""Whether the database is set up -- every migration applied -- before a command or a launcher uses it.

A fresh data folder (or a new database that ``DATABASE_URL`` names) has no tables until ``manage.py
migrate`` runs: a ``kb_*`` command there would die with a traceback ("relation ... does not exist"),
and ``make web`` / ``make worker`` would start and then fail every request and task. The entry points
ask :func:`require_migrated` first (``manage.py``, :mod:`bulkhead.launch`) and refuse in one line.

The check reads the migration files and the ``django_migrations`` table (one query, as ``migrate``
plans), on the owner's login, which applies the migrations. The line names the database by where it
is configured -- the data folder, or the variable that holds its URL -- never by the URL, which may
hold a password.
"""

from __future__ import annotations

import os

from bulkhead import embedded_services

ADVICE = "run `python manage.py migrate` (`make demo` does it)"


class NotSetUp(Exception):
    """The database cannot be used yet: one line saying why and what to do."""


def database_named() -> str:
    """The database the owner's login reaches, as the user configured it: no URL, so no password."""
    if os.environ.get("BULKHEAD_OWNER_DATABASE_URL"):
        return "the database BULKHEAD_OWNER_DATABASE_URL names"
    if os.environ.get("DATABASE_URL"):
        return "the database DATABASE_URL names"
    return f"the database in the data folder {embedded_services.data_path()}"


def unapplied_migrations(alias: str | None = None) -> list[str]:
    """``app.name`` of each migration ``migrate`` would apply on ``alias`` (default: the owner's), in order."""
    from django.db import connections
    from django.db.migrations.executor import MigrationExecutor

    from accounts.tenancy import owner_alias

    executor = MigrationExecutor(connections[alias or owner_alias()])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def require_migrated() -> None:
    """Return when the database answers and has no unapplied migration; else :class:`NotSetUp`.

    Needs Django set up (``django.setup()``) and the servers started; closes its connection."""
    from django.db import OperationalError, connections

    from accounts.tenancy import owner_alias

    alias = owner_alias()
    try:
        pending = unapplied_migrations(alias)
    except OperationalError as exc:
        # libpq's message names the server, the user and the database, never the password; on one line.
        raise NotSetUp(f"cannot reach {database_named()}: {' '.join(str(exc).split())}") from None
    finally:
        connections[alias].close()
    if pending:
        count = f"{len(pending)} unapplied migration{'s' if len(pending) != 1 else ''}"
        raise NotSetUp(f"{database_named()} has {count} (first: {pending[0]}); {ADVICE}")
