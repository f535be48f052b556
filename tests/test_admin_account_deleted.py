"""An account deleted while its Django admin change page is open (fourteenth session).

Deleted before the page is saved, Django's admin answers its own "doesn't exist. Perhaps it was deleted?". Deleted
while the save waits for the account's row -- another operator's deletion, a SCIM deprovisioning, committed
between the admin's read of the row and its lock -- the save found no row and wrote the fields it changed (the form
counts ``date_joined`` among them on every save) with ``update_fields`` to nothing: 500, "Save with update_fields did
not affect any rows", for a deactivation as for any other change. Now the save says the account was deleted, and
nothing is written or recorded. Made for real: another session holds the row, the
save is seen waiting for it (PostgreSQL's own view of who waits), then that session deletes the account."""

from __future__ import annotations

import threading

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from accounts.admin import ACCOUNT_DELETED
from accounts.models import User
from audit.models import AuditEvent
from tests.bounds import START_WAIT

# Whether a session waits for a lock this one holds (the lock manager's own answer; the statistics' snapshot, which a
# transaction keeps, is cleared first so that a session connected since is seen).
WAITING_FOR_THIS_SESSION = ("SELECT count(*) FROM (SELECT pg_stat_clear_snapshot()) AS cleared, pg_stat_activity "
                            "WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))")


def _delete_once_the_save_waits(pk: int, held: threading.Event, failures: list) -> None:
    """In a session of its own: lock the account's row, wait until another session waits for it, delete it."""
    try:
        with transaction.atomic():
            User.objects.select_for_update().get(pk=pk)
            held.set()
            while True:  # the admin's save is waiting for this row (no time is assumed)
                with connection.cursor() as cursor:
                    cursor.execute(WAITING_FOR_THIS_SESSION)
                    if cursor.fetchone()[0]:
                        break
            User.objects.filter(pk=pk).delete()
    except Exception as exc:  # noqa: BLE001 - reported by the test
        failures.append(exc)
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("change", ["active", "last-login"])
def test_a_save_of_an_account_deleted_meanwhile_says_so_and_writes_nothing(change):
    root = User.objects.create_superuser("root@example.com", "not-a-secret")
    leaver = User.objects.create_user("leaver@example.com", "a passphrase of the leaver's")
    client = Client(raise_request_exception=False)
    client.force_login(root)
    page = reverse("admin:accounts_user_change", args=[leaver.pk])
    assert client.get(page).status_code == 200
    data = {"is_active": "on", "date_joined_0": leaver.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": leaver.date_joined.strftime("%H:%M:%S")}
    if change == "active":
        data.pop("is_active")  # the box unticked: a deactivation (``accounts.services.user_active_set``)
    else:
        data |= {"last_login_0": "2026-12-01", "last_login_1": "10:00:00"}
    records, logged = AuditEvent.objects.count(), LogEntry.objects.count()

    held, failures = threading.Event(), []
    deleter = threading.Thread(target=_delete_once_the_save_waits, args=(leaver.pk, held, failures))
    deleter.start()
    assert held.wait(START_WAIT), failures
    answer = client.post(page, data, follow=True)
    deleter.join(START_WAIT)
    assert not failures, failures
    assert answer.status_code == 200, answer.content.decode()[-1500:]
    assert answer.redirect_chain == [(reverse("admin:accounts_user_changelist"), 302)]
    said = [str(m) for m in answer.context["messages"]]
    assert ACCOUNT_DELETED in said and not any("successfully" in m for m in said), said
    assert not User.objects.filter(pk=leaver.pk).exists()
    assert (AuditEvent.objects.count(), LogEntry.objects.count()) == (records, logged)  # nothing said it changed
