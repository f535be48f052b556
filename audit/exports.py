"""The audit trail as files: CSV and JSON lines, one record a row, streamed (never all in memory).
The API (``GET /api/v1/audit/export/``) and the console's audit page give the same bytes."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import json
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet

from audit.models import Action, AuditEvent
from ingestion.parsers.tabular import formula_lead

FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
COLUMNS = [
    "id", "created_at", "action", "membership_id", "user_id", "actor_email", "target_type", "target_id",
    "document_ids", "details", "query_text", "query_hash", "mode", "index_version_id", "plan", "chunk_ids",
    "section_ids", "latency_ms",
]
_ARRAYS = ("document_ids", "chunk_ids", "section_ids")
_FORMULA_STARTS = frozenset("=+-@\t\r")


# What records of these actions held before 2026-12-04 and is never shown: a document's size in bytes, in
# the ``before``/``after`` views of an upload, a replacement or a deletion (``kb.services._document_view``
# records it no more). Every admin of the tenant reads the trail, and the size is of a document an admin
# may see no part of -- it moved with its restricted text.
_DOCUMENT_ACTIONS = frozenset({Action.DOCUMENT_CREATE, Action.DOCUMENT_REPLACE, Action.DOCUMENT_DELETE})
_NEVER_SHOWN = ("size_bytes",)


def shown_details(event: AuditEvent) -> object:
    """``event.details`` as the API, the export and the console show it: a document's size left out of the
    views of old upload, replacement and deletion records (any other details as recorded)."""
    details = event.details
    if event.action not in _DOCUMENT_ACTIONS or not isinstance(details, dict):
        return details
    return {key: ({k: v for k, v in view.items() if k not in _NEVER_SHOWN}
                  if key in ("before", "after") and isinstance(view, dict) else view)
            for key, view in details.items()}


def shown_id(event: AuditEvent) -> str:
    """The record's id as its tenant reads it (the API's list, both exports): a digest of the row's id keyed with
    the server's secret and the tenant, the same in every answer and never two the same in a tenant. The row's own
    id is the table's sequence, which every tenant's records advance: an admin read off how many records the other
    tenants made between two of theirs -- their searches and reads, and the one record a failed sign-in or a
    password reset request makes in each tenant of the address, so how many tenants an address belongs to (found
    attacking the demo, 2026-12-04)."""
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"audit-record\x00{event.tenant_id}\x00{event.pk}".encode(), hashlib.sha256).hexdigest()[:32]


def event_dict(event: AuditEvent) -> dict:
    """One record with the API's field names; ids as strings."""
    row = {name: getattr(event, name) for name in COLUMNS}
    row["id"] = shown_id(event)
    row["details"] = shown_details(event)
    row["created_at"] = event.created_at.isoformat()
    row["user_id"] = None  # the account's id, every tenant's: never a tenant's to read (audit.serializers)
    row["plan"] = ""  # chosen against every tenant's chunks; records before 2026-12-03 hold one (audit.serializers)
    for name in _ARRAYS:
        row[name] = [str(value) for value in row[name]]
    row["index_version_id"] = str(event.index_version_id) if event.index_version_id else None
    return row


def _csv_cell(value) -> str:
    if isinstance(value, list):
        return " ".join(value)
    if isinstance(value, dict):
        return json.dumps(value, cls=DjangoJSONEncoder, sort_keys=True)
    text = "" if value is None else str(value)
    # A spreadsheet would run a cell starting with these as a formula (CSV injection): quote it as text.
    # Searched text is a member's, so also what a spreadsheet may read as one: the same signs after any
    # leading whitespace or invisible format character, and their fullwidth and small forms (formula_lead).
    _, first = formula_lead(text)
    return "'" + text if first in _FORMULA_STARTS or text[:1] in ("\t", "\r") else text


def csv_lines(events: Iterable[AuditEvent]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS)
    for event in events:
        row = event_dict(event)
        writer.writerow([_csv_cell(row[name]) for name in COLUMNS])
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(events: Iterable[AuditEvent]) -> Iterator[str]:
    for event in events:
        yield json.dumps(event_dict(event), cls=DjangoJSONEncoder, sort_keys=True) + "\n"


def export_lines(events: QuerySet[AuditEvent], file_format: str) -> Iterator[str]:
    """``events`` as ``file_format`` ("csv" or "jsonl"), read from the database in batches."""
    rows = events.iterator(chunk_size=2000)
    return csv_lines(rows) if file_format == "csv" else jsonl_lines(rows)
