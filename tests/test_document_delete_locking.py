"""Deleting a document takes the document's row lock first, as every other writer of it does.

Found by the load harness (``kb_bench load``, docs/reliability.md): under the mixed load a
``DELETE /api/v1/documents/{id}/`` now and then answered 503, and PostgreSQL's log said
``deadlock detected``. Policy changes and the pipeline's store step lock the document row and
then its sections; the delete removed chunks and sections first and reached the document row
last, so a delete racing a ``PATCH /sections/{id}/`` (or an ingestion storing that document)
could hold the sections while waiting for the document and deadlock. Now the delete locks the
document row before anything else and waits its turn.

Deterministic: a writer holds the document row; the test waits until the delete is blocked on a
lock (``pg_stat_activity``), then the writer locks the sections, as a policy change does next.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from accounts.services import group_create, tenant_create
from kb.models import Chunk, Document, Section
from kb.services import document_delete
from tests.api_helpers import POLICY_SECTIONS, make_document
from tests.bounds import START_WAIT

pytestmark = pytest.mark.django_db(transaction=True)


def _blocked_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
        row = cursor.fetchone()
    return bool(row) and row[0] == "Lock"


def test_a_delete_racing_a_policy_change_waits_instead_of_deadlocking():
    tenant = tenant_create(slug="delete-lock", name="Delete lock")
    group_create(tenant=tenant, slug="security-team")
    document = make_document(tenant, sections=POLICY_SECTIONS)
    holding, errors, delete_pid = threading.Event(), [], []

    def delete() -> None:
        try:
            holding.wait(START_WAIT)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                delete_pid.append(cursor.fetchone()[0])
            document_delete(document=Document.objects.get(pk=document.pk))
        except Exception as exc:  # a deadlock victim: psycopg's DeadlockDetected (an OperationalError)
            errors.append(exc)
        finally:
            connections.close_all()

    deleter = threading.Thread(target=delete)
    deleter.start()
    try:
        with transaction.atomic():  # a policy change: the document row, then the sections
            Document.objects.select_for_update().get(pk=document.pk)
            holding.set()
            deadline = time.monotonic() + START_WAIT
            while not (delete_pid and _blocked_on_a_lock(delete_pid[0])):
                assert time.monotonic() < deadline, "the delete never waited for the document's lock"
                time.sleep(0.05)
            list(Section.objects.select_for_update().filter(document_id=document.pk))
    except Exception as exc:
        errors.append(exc)
    deleter.join(START_WAIT)
    assert not errors, errors
    assert not Document.objects.filter(pk=document.pk).exists()
    assert not Section.objects.filter(document_id=document.pk).exists()
    assert not Chunk.objects.filter(document_id=document.pk).exists()
