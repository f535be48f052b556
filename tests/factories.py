"""Test data: one builder per kb row -- document, index version, section, chunk.

Each builder fills the required fields with defaults that keep the model's invariants (a
section spans its document's text, a chunk's text is ``document.text[start:end]`` and it
carries its section's access) and takes any field as a keyword, so a test names only what
it is about. Rows are written as given: no parsing, no policy derivation, no embedding --
what a test builds is what the table holds. A document's title and a section's heading carry the record
of a clean screening verdict, as ingestion stores it (``kb.models.TITLE_SCREENING``), unless ``metadata``
names one: without a record a title is shown as held (``kb.screening.shown_title``).
"""

from __future__ import annotations

import hashlib
import uuid

from accounts.policy import AccessLevel
from kb.models import EMBEDDING_DIMENSIONS, TITLE_SCREENING, Chunk, Document, IndexVersion, Section
from kb.titles import title_record


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def document(tenant, **fields) -> Document:
    """A document of ``tenant``: plain text "hello world" unless ``text`` is given; ``raw`` and
    ``sha256`` follow the text unless given."""
    fields.setdefault("text", "hello world")
    fields.setdefault("raw", fields["text"].encode())
    fields.setdefault("sha256", _sha256(bytes(fields["raw"])))
    fields = {"title": "Document", "content_type": "text/plain", **fields}
    fields["metadata"] = {TITLE_SCREENING: _clean(fields["title"]), **fields.get("metadata", {})}
    return Document.objects.create(tenant=tenant, **fields)


def _clean(title: str) -> dict:
    return title_record({title: {"flagged": False}}, detector="factory", decided={})


def index_version(tenant, **fields) -> IndexVersion:
    """An index version of ``tenant`` with an empty configuration and a unique hash."""
    fields = {"id": uuid.uuid4(), "config": {}, "config_hash": uuid.uuid4().hex, **fields}
    return IndexVersion.objects.create(tenant=tenant, **fields)


def section(document: Document, **fields) -> Section:
    """A section of ``document`` (in its tenant unless ``tenant`` is given): internal, spanning the
    whole text, with a unique key."""
    fields = {
        "id": uuid.uuid4(), "tenant": document.tenant, "key": uuid.uuid4().hex[:8], "order": 0, "start": 0,
        "end": len(document.text), "access_level": AccessLevel.INTERNAL, **fields,
    }
    fields["metadata"] = {TITLE_SCREENING: _clean(fields.get("title", "")), **fields.get("metadata", {})}
    return Section.objects.create(document=document, **fields)


def chunk(section: Section, version: IndexVersion, *, save: bool = True, **fields) -> Chunk:
    """A chunk of ``section`` in ``version``; unsaved with ``save=False`` (for ``bulk_create``).

    By default it spans the section, its text is the document's text there (also what was
    embedded), and it carries the section's tenant, document and access."""
    fields.setdefault("start", section.start)
    fields.setdefault("end", section.end)
    fields.setdefault("text", section.document.text[fields["start"] : fields["end"]])
    fields.setdefault("embed_text", fields["text"])
    fields = {
        "id": uuid.uuid4(), "tenant": section.tenant, "document": section.document, "ordinal": 0,
        "token_count": len(fields["text"].split()), "content_hash": _sha256(fields["embed_text"].encode()),
        "embedding": [0.1] * EMBEDDING_DIMENSIONS, "access_level": section.access_level,
        "access_groups": section.access_groups, **fields,
    }
    row = Chunk(section=section, index_version=version, **fields)
    if save:
        row.save(force_insert=True)
    return row
