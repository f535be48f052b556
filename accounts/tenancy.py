"""The tenant wall in the database: which tenant a connection acts for, and the owner path.

Every tenant-owned table has PostgreSQL row-level security (the migrations
``accounts/0002`` and ``kb/0006``): a row is visible, and may be written, only when its
tenant is the connection's ``app.tenant_id`` setting. The application logs in as a role
without BYPASSRLS (``bulkhead_app`` by default); with no tenant set, it sees no rows at all.

* :func:`tenant_activate` sets the acting tenant for the rest of the request or task (a
  session setting, so it outlives the transaction; ``set_config(..., false)``), and
  :func:`tenant_context_reset` clears it. Requests clear it at their start and end
  (``bulkhead.middleware.TenantContextMiddleware``), tasks at theirs (``bulkhead/celery.py``):
  a value left on a persistent connection never reaches the next request or task.
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

TENANT_SETTING = "app.tenant_id"
USER_SETTING = "app.user_id"
OWNER_ALIAS = "owner"

_owner_path: contextvars.ContextVar[bool] = contextvars.ContextVar("bulkhead_owner_path", default=False)


def owner_alias() -> str:
    """The database alias of the owner path: ``owner`` where it is configured, else ``default``
    (a deployment that logs in once, as the owner, has no wall to go around)."""
    return OWNER_ALIAS if OWNER_ALIAS in settings.DATABASES else "default"


def _set(values: dict[str, str], *, using: str = "default") -> None:
    sql = ", ".join("set_config(%s, %s, false)" for _ in values)
    params = [item for pair in values.items() for item in pair]
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT {sql}", params)


def tenant_activate(tenant_id: int | None, *, using: str = "default") -> None:
    """Act for ``tenant_id`` on this connection until the next reset (None: for no tenant)."""
    _set({TENANT_SETTING: "" if tenant_id is None else str(int(tenant_id))}, using=using)


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


def current_tenant_id(*, using: str = "default") -> int | None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT NULLIF(current_setting(%s, true), '')::bigint", [TENANT_SETTING])
        return cursor.fetchone()[0]


@contextmanager
def acting_tenant(tenant_id: int) -> Iterator[None]:
    """Act for ``tenant_id`` inside the block (management commands, tests), then for the one before."""
    previous = current_tenant_id()
    tenant_activate(tenant_id)
    try:
        yield
    finally:
        tenant_activate(previous)


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


def token_tenant_id(key_hash: str) -> int | None:
    """The tenant of the live token with this hash, or None -- before any tenant is set.

    ``bulkhead_token_tenant`` is a SECURITY DEFINER function (migration ``accounts/0002``): it
    reads past the wall and returns the tenant id alone; the token itself is then read under the
    wall, as that tenant."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT bulkhead_token_tenant(%s)", [key_hash])
        return cursor.fetchone()[0]
