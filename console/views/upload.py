"""Upload (editors, admins): files or a pasted text, an access preview of each, then "Ingest".

The preview is ``pipeline.preview.document_preview`` -- ingestion's own planning step, run on
an unsaved document -- and "Ingest" calls ``kb.services.document_create`` once per file, as the
REST API does; both check the member's role and the default policy inside.

Between the preview and "Ingest" the bytes stay in the browser: the form keeps its files (htmx
swaps only the preview under it), and "Ingest" posts them again. Nothing is held on the server
in between. "Ingest" previews the posted files again and stores only those that preview cleanly,
and only when they, their titles and the policy are the ones the member saw previewed (a digest
of them travels with the preview); otherwise it shows the new preview instead. Without
JavaScript the browser forgets the chosen files with the page, so they are chosen again.

The files of one request share one preview budget (``BULKHEAD_PREVIEW_SECONDS``): a file that
does not fit in what is left, or costs more than a preview takes, says "too costly to preview"
and may be ingested all the same (its job is held to the lanes' budgets, like an API upload).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from django.conf import settings
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from accounts.errors import ApplicationError
from accounts.models import Membership, Role
from accounts.policy import AccessLevel, assignable_levels
from accounts.selectors import group_list
from console.forms import UploadForm
from console.membership import is_admin, member_required
from kb.models import Document, IngestionJob
from kb.overview import job_list
from kb.selectors import document_with_bytes
from kb.services import PayloadTooLarge, Upload, document_create
from pipeline.preview import DocumentPreview, PreviewTooCostly, document_preview, preview_deadline


@dataclass
class Item:
    """One file (or the pasted text) of the request, and what became of it."""

    name: str
    upload: Upload | None
    preview: DocumentPreview | None = None
    error: str = ""
    line: int | None = None
    costly: bool = False  # too costly to preview: ingested without a preview when the member asks
    document: Document | None = None
    job: IngestionJob | None = None
    duplicate: Document | None = None  # a document the member can see that has these very bytes


def _assignable(member: Membership) -> tuple[list[str], list[str]]:
    """The levels and groups the form offers: what ``kb.permissions.policy_check_assignable``
    lets this member set (admins: anything of their tenant). Display only: the services decide."""
    if is_admin(member):
        return [level.label for level in AccessLevel], list(group_list(tenant=member.tenant).values_list("slug",
                                                                                                        flat=True))
    levels = [level.label for level in assignable_levels(member.clearance)]
    return levels, list(member.groups.order_by("slug").values_list("slug", flat=True))


MAX_FILES = 20


def _items(form: UploadForm) -> list[Item]:
    data = form.cleaned_data
    policy = {"access_level": data["access_level"], "groups": tuple(data.get("groups") or ()),
              "tags": form.tag_list()}
    items = []
    limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
    # One request parses and chunks its files in this web thread: at most MAX_FILES files and, all
    # together, no more bytes than one upload may have (the rest are refused, each with the reason).
    total = 0
    for index, file in enumerate(data.get("files") or ()):
        name = file.name or "unnamed"
        if index >= MAX_FILES:
            items.append(Item(name, None, error=f"at most {MAX_FILES} files at once; upload this one separately"))
            continue
        if file.size > limit:  # refused before it is read, as the API refuses it
            items.append(Item(name, None, error=PayloadTooLarge(
                f"the file is {file.size} bytes; the limit is {limit} bytes").message))
            continue
        total += file.size
        if total > limit:
            items.append(Item(name, None, error=f"these files together pass {limit} bytes; upload this one "
                                                "separately"))
            continue
        # No content type: the name and the bytes decide (a browser's guess of text/plain for a .md
        # file would turn its access markers into plain text).
        items.append(Item(name, Upload(content=file.read(), title=name, source=name, **policy)))
    if (data.get("text") or "").strip():
        title = data["title"].strip()
        items.append(Item(title, Upload(content=data["text"].encode("utf-8"), title=title,
                                        content_type=data["content_type"], **policy)))
    return items


def _without_line(message: str, line: int | None) -> str:
    """The message without its leading "line N: " when the page shows "Line N:" before it already."""
    prefix = f"line {line}: "
    return message[len(prefix):] if line is not None and message.lower().startswith(prefix) else message


def _preview(member: Membership, items: list[Item]) -> None:
    deadline = preview_deadline()  # one budget for every file of the request
    for item in items:
        if item.upload is None:
            continue
        try:
            item.preview = document_preview(member=member, upload=item.upload, deadline=deadline)
        except PreviewTooCostly as exc:
            item.error, item.costly = exc.message, True
        except ApplicationError as exc:
            item.error, item.line = _without_line(exc.message, exc.details.get("line")), exc.details.get("line")
            continue
        # The same bytes again (a second click on Ingest, the same file chosen twice): said, not stored twice.
        item.duplicate = document_with_bytes(member=member, sha256=hashlib.sha256(item.upload.content).hexdigest())


def _digest(items: list[Item]) -> str:
    """What a preview showed: each file's name, title, type and bytes, and the policy."""
    shown = [
        [item.name, *((item.upload.title, item.upload.content_type, item.upload.access_level,
                       list(item.upload.groups), list(item.upload.tags),
                       hashlib.sha256(item.upload.content).hexdigest()) if item.upload else ())]
        for item in items
    ]
    return hashlib.sha256(json.dumps(shown).encode()).hexdigest()


def _ingest(member: Membership, items: list[Item]) -> None:
    for item in items:
        if (item.preview is None and not item.costly) or item.duplicate is not None:
            continue
        try:
            item.document, item.job = document_create(tenant=member.tenant, created_by=member, upload=item.upload)
        except ApplicationError as exc:
            item.error = exc.message
            continue
        # As the jobs pages read it (``document_visible``): the line that follows it names the document.
        item.job = job_list(member=member).get(pk=item.job.pk)
        item.job.shown_error = ""


@member_required(Role.EDITOR)
@require_http_methods(["GET", "POST"])
def document_upload(request):
    member = request.member
    levels, groups = _assignable(member)
    form = UploadForm(request.POST or None, request.FILES or None, levels=levels, groups=groups,
                      initial={"access_level": "internal" if "internal" in levels else levels[-1]})
    items: list[Item] = []
    digest, notice, ingested = "", "", False
    if request.method == "POST" and form.is_valid():
        items = _items(form)
        _preview(member, items)
        digest = _digest(items)
        if request.POST.get("action") == "ingest":
            if request.POST.get("preview_digest") == digest:
                _ingest(member, items)
                ingested = True
            else:
                notice = "The files, their titles or the policy changed since the preview: check it again."
    context = {
        "member": member, "nav": "documents", "form": form, "items": items, "digest": digest, "notice": notice,
        "ingested": ingested,
        "previewable": sum(1 for i in items if (i.preview is not None or i.costly) and i.duplicate is None),
        "max_bytes": settings.BULKHEAD_MAX_UPLOAD_BYTES,
        # The browser stops waiting past the server's own preview budget (with room for Ingest's jobs).
        "timeout_ms": (2 * settings.BULKHEAD_PREVIEW_SECONDS + 20) * 1000,
    }
    template = "console/documents/_preview.html" if request.htmx else "console/documents/upload.html"
    return render(request, template, context)
