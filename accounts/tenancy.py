"""The tenant wall in the database: which tenant a connection acts for, and the owner path.

Every tenant-owned table has PostgreSQL row-level security (the migrations
``accounts/0002`` and ``kb/0006``): a row is visible, and may be written, only when its
tenant is the connection's ``app.tenant_id`` setting. The application logs in as a role
without BYPASSRLS (``bulkhead_app`` by default); with no tenant set, it sees no rows at all.

* :func:`tenant_activate` sets the acting tenant for the rest of the request or task (a
  session setting, so it outlives the transaction; ``set_config(..., false)``), and
  :func:`tenant_context_reset` clears it. Requests and tasks clear it at their end
  (``bulkhead.middleware``, ``bulkhead/celery.py``) and, unless that clear is known to have held,
  at their start (:func:`tenant_context_reset_if_set`): a value left on a persistent connection
  never reaches the next request or task.
* :func:`acting_user_activate` names the signed-in user, whose own memberships (in every
  tenant) the memberships policy also admits: sign-in and the tenant switcher list them
  before a tenant is chosen.
* Lookups made before the tenant is known go through narrow ``SECURITY DEFINER``
  functions that return one tenant id and nothing else (:func:`token_tenant_id`,
  ``kb.jobs.job_tenant_id``).
* :func:`owner_path` is the explicit way around the wall, for the few things that must
  look across tenants (the stuck-job sweeper, the per-tenant index sync): inside it the ORM
  uses the ``owner`` database alias, which logs in as the tables' owner.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created

TENANT_SETTING = "app.tenant_id"
USER_SETTING = "app.user_id"
OWNER_ALIAS = "owner"

_owner_path: contextvars.ContextVar[bool] = contextvars.ContextVar("bulkhead_owner_path", default=False)


def owner_alias() -> str:
    """The database alias of the owner path: ``owner`` where it is configured, else ``default``
    (a deployment that logs in once, as the owner, has no wall to go around)."""
    return OWNER_ALIAS if OWNER_ALIAS in settings.DATABASES else "default"


# Set on a connection wrapper (one per thread) after a clear that committed: the physical connection
# it cleared. The clear at a request's start is skipped while the wrapper still holds that same
# connection and nothing has been set on it since (see tenant_context_reset_if_set).
_CLEARED = "_bulkhead_tenant_cleared_on"


def _new_connection_is_clear(sender, connection, **kwargs) -> None:
    # A new session starts with nothing set (the same assumption as a closed connection's).
    setattr(connection, _CLEARED, connection.connection)


connection_created.connect(_new_connection_is_clear, dispatch_uid="bulkhead.tenancy.new_connection_is_clear")


def _set(values: dict[str, str], *, using: str = "default") -> None:
    sql = ", ".join("set_config(%s, %s, false)" for _ in values)
    params = [item for pair in values.items() for item in pair]
    connection = connections[using]
    with connection.cursor() as cursor:  # (opens the connection first, if need be)
        setattr(connection, _CLEARED, None)  # whatever happens next, it is not known clear
        cursor.execute(f"SELECT {sql}", params)
    _note_if_cleared(connection, values)


def _note_if_cleared(connection, values: dict[str, str]) -> None:
    # Only a clear that has committed counts: inside a transaction, a session setting made there
    # goes back to its earlier value if the transaction rolls back.
    if not any(values.values()) and set(values) >= {TENANT_SETTING, USER_SETTING} \
            and connection.get_autocommit() and not connection.in_atomic_block:
        setattr(connection, _CLEARED, connection.connection)


def tenant_activate(tenant_id: int | None, *, using: str = "default", also: dict[str, str] | None = None) -> None:
    """Act for ``tenant_id`` on this connection until the next reset (None: for no tenant).
    ``also``: further session settings to set in the same statement (the search benchmark's
    reader, for a measured access policy)."""
    _set({**(also or {}), TENANT_SETTING: "" if tenant_id is None else str(int(tenant_id))}, using=using)


def tenant_act_for(*, slug: str):
    """For a command given ``--tenant``: the tenant named ``slug`` (``NotFound`` when there is none),
    acted for from here on."""
    from accounts.selectors import tenant_get

    tenant = tenant_get(slug=slug)
    tenant_activate(tenant.pk)
    return tenant


def acting_user_activate(user_id: int | None, *, using: str = "default") -> None:
    """Name the signed-in user, so their own memberships in every tenant are visible."""
    _set({USER_SETTING: "" if user_id is None else str(int(user_id))}, using=using)


def tenant_context_reset(*, using: str = "default") -> None:
    """Forget the acting tenant and user: from here the connection sees no tenant's rows."""
    _set({TENANT_SETTING: "", USER_SETTING: ""}, using=using)


def tenant_context_reset_if_connected(*, using: str = "default") -> None:
    """:func:`tenant_context_reset` on an open connection; nothing on a closed one (a new
    connection starts with nothing set) or a broken one (it is never reused: Django closes it)."""
    from django.db import DatabaseError

    connection = connections[using]
    if connection.connection is None:
        return
    try:
        tenant_context_reset(using=using)
    except DatabaseError:
        connection.close()


def tenant_context_known_clear(*, using: str = "default") -> bool:
    """True when this thread's connection is closed (a new one starts with nothing set), or is the
    very connection the last committed :func:`tenant_context_reset` cleared, with nothing set on it
    since through this module."""
    connection = connections[using]
    return connection.connection is None or getattr(connection, _CLEARED, None) is connection.connection


def tenant_context_reset_if_set(*, using: str = "default") -> None:
    """The clear at a request's or task's start: :func:`tenant_context_reset_if_connected`, skipped
    when :func:`tenant_context_known_clear` (the previous one's clear at its end held -- one round
    trip less per request). A clear that failed closed the connection; one made inside a
    transaction does not count."""
    if not tenant_context_known_clear(using=using):
        tenant_context_reset_if_connected(using=using)


def current_tenant_id(*, using: str = "default") -> int | None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT NULLIF(current_setting(%s, true), '')::bigint", [TENANT_SETTING])
        return cursor.fetchone()[0]


@contextmanager
def acting_tenant(tenant_id: int, *, using: str = "default") -> Iterator[None]:
    """Act for ``tenant_id`` inside the block (management commands, tests; ``using``: the connection the block
    writes with, e.g. a deletion's), then for the one before."""
    previous = current_tenant_id(using=using)
    tenant_activate(tenant_id, using=using)
    try:
        yield
    finally:
        tenant_activate(previous, using=using)


@contextmanager
def owner_path() -> Iterator[str]:
    """Inside the block every ORM query goes to the owner alias (``OwnerPathRouter``): past the
    wall, across tenants. Yields the alias, for raw SQL and ``transaction.atomic(using=...)``.
    Only for maintenance that must see every tenant; never around a member's request."""
    token = _owner_path.set(True)
    try:
        yield owner_alias()
    finally:
        _owner_path.reset(token)


class OwnerPathRouter:
    """Sends the ORM to the owner alias inside :func:`owner_path`, and leaves it alone elsewhere."""

    def db_for_read(self, model, **hints):
        return owner_alias() if _owner_path.get() else None

    def db_for_write(self, model, **hints):
        return owner_alias() if _owner_path.get() else None


def owner_login_for_this_process() -> None:
    """Log this whole process in as the owner (the ``owner`` alias folded into ``default``).

    For tools that work on every tenant's rows as a whole -- the test suite's own connection,
    the search benchmark's loader -- never for the web server or a worker. Call it before the
    process opens a connection. ``settings.BULKHEAD_APP_DB_ROLE`` still names the application's
    role, which such a tool switches to (``SET ROLE``) for what it runs as the application."""
    owner = settings.DATABASES.pop(OWNER_ALIAS, None)
    if owner is None:
        return
    connections["default"].close()
    default = settings.DATABASES["default"]
    default.clear()
    default.update(owner)


@contextmanager
def as_application_role(tenant_id: int | None = None) -> Iterator[None]:
    """On an owner's connection (see :func:`owner_login_for_this_process`): run the block as the
    application's role, acting for ``tenant_id`` -- under the wall, as a request would."""
    with connections["default"].cursor() as cursor:
        cursor.execute(f'SET ROLE "{settings.BULKHEAD_APP_DB_ROLE}"')
    try:
        tenant_activate(tenant_id)
        yield
    finally:
        tenant_context_reset()
        with connections["default"].cursor() as cursor:
            cursor.execute("RESET ROLE")


def tenant_activate_for_token(key_hash: str) -> int | None:
    """Act for the tenant of the live token with this hash (for no tenant when there is none), and
    return its id: :func:`token_tenant_id` and :func:`tenant_activate` in one round trip."""
    connection = connections["default"]
    with connection.cursor() as cursor:
        setattr(connection, _CLEARED, None)
        cursor.execute("SELECT NULLIF(set_config(%s, coalesce(bulkhead_token_tenant(%s)::text, ''), false), '')::bigint",
                       [TENANT_SETTING, key_hash])
        return cursor.fetchone()[0]


def tenant_activate_for_scim_token(key_hash: str) -> int | None:
    """:func:`tenant_activate_for_token` for a SCIM bearer token (``bulkhead_scim_token_tenant``, migration
    ``accounts/0004``): act for the tenant of the live SCIM token with this hash, or for none."""
    connection = connections["default"]
    with connection.cursor() as cursor:
        setattr(connection, _CLEARED, None)
        cursor.execute("SELECT NULLIF(set_config(%s, coalesce(bulkhead_scim_token_tenant(%s)::text, ''), false), '')::bigint",
                       [TENANT_SETTING, key_hash])
        return cursor.fetchone()[0]


def token_tenant_id(key_hash: str) -> int | None:
    """The tenant of the live token with this hash, or None -- before any tenant is set.

    ``bulkhead_token_tenant`` is a SECURITY DEFINER function (migration ``accounts/0002``): it
    reads past the wall and returns the tenant id alone; the token itself is then read under the
    wall, as that tenant."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT bulkhead_token_tenant(%s)", [key_hash])
        return cursor.fetchone()[0]
