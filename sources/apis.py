"""``/api/v1/sources/`` (admins only): sources, their syncs and previews. Thin views: an input
serializer, one selector or service, an output serializer. Another tenant's source is a 404, as a
missing one."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from accounts.api_fields import PageParameters
from accounts.apis import PAGE_PARAMETERS, MemberAPIView, id_parameter
from accounts.errors import ApplicationError
from accounts.permissions import IsAdmin
from accounts.serializers import error_responses
from kb import selectors as kb_selectors
from sources import selectors, services
from sources.serializers import (
    DetachedListOutputSerializer,
    DetachedOutputSerializer,
    PreviewOutputSerializer,
    ReattachedOutputSerializer,
    SourceInputSerializer,
    SourceOutputSerializer,
    SyncOutputSerializer,
    SyncStartedOutputSerializer,
)

TAGS = ["sources"]
SOURCE_ID = id_parameter("source_id", "Source id")


def _fields(request, *, creating: bool) -> dict:
    serializer = SourceInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = dict(serializer.validated_data)
    if "access_map" in data:
        data["access_map"] = [dict(e) for e in data["access_map"]]
    if "options" in data:
        data["options"] = dict(data["options"])
    if "credentials" in data:
        data["credentials"] = dict(data["credentials"])
    if creating:
        for required in ("kind", "name"):
            if required not in data:
                raise ApplicationError(f"{required} is required", details={"field": required})
    elif "kind" in data:
        raise ApplicationError("a source's kind cannot change", details={"field": "kind"})
    return data


def listed_context(member, sources: list) -> dict:
    """The serializers' context for a page of ``sources``: what each shows beside it read for the page at once
    (``selectors.sources_listed``; the last syncs' states and the rows the member may see of them), so that the
    page's queries do not grow with its sources (found attacking cost, twenty-first session, attack21f: four
    queries a source, one of them over the tenant's jobs)."""
    listed = selectors.sources_listed(sources)
    viewer = selectors.viewer_of(member)
    rows = selectors.syncs_rows_shown(member=member, syncs=listed.last.values(), viewer=viewer)
    return {"member": member, "listed": listed, "_states": dict(listed.states), "_rows": rows, "_viewer": viewer}


class SourceListApi(MemberAPIView):
    permission_classes = [IsAdmin]
    query_parameters = PageParameters

    @extend_schema(tags=TAGS, summary="The tenant's sources", responses={200: SourceOutputSerializer(many=True)})
    def get(self, request):
        page = self.paginate_queryset(selectors.source_list(member=self.member))
        return self.get_paginated_response(
            SourceOutputSerializer(page, many=True, context=listed_context(self.member, page)).data)

    @extend_schema(tags=TAGS, summary="Add a source", request=SourceInputSerializer,
                   responses={201: SourceOutputSerializer, **error_responses(400, 409, 415)})
    def post(self, request):
        data = _fields(request, creating=True)
        source = services.source_create(actor=self.member, tenant=self.member.tenant, **data)
        return Response(SourceOutputSerializer(source, context={"member": self.member}).data,
                        status=status.HTTP_201_CREATED)


class SourcePreviewApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="What a sync of this (unsaved) source would ingest, under which policy",
                   request=SourceInputSerializer, responses={200: PreviewOutputSerializer, **error_responses(400, 415)})
    def post(self, request):
        data = _fields(request, creating=True)
        source = services.source_unsaved(actor=self.member, tenant=self.member.tenant, **data)
        return Response(selectors.source_preview(member=self.member, source=source))


class SourceDetailApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="A source and its last sync", parameters=[SOURCE_ID],
                   responses={200: SourceOutputSerializer, **error_responses(404)})
    def get(self, request, source_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        return Response(SourceOutputSerializer(source, context={"member": self.member}).data)

    @extend_schema(tags=TAGS, summary="Change a source", parameters=[SOURCE_ID], request=SourceInputSerializer,
                   responses={200: SourceOutputSerializer, **error_responses(400, 404, 409, 415)})
    def patch(self, request, source_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        source = services.source_update(actor=self.member, source=source, **_fields(request, creating=False))
        return Response(SourceOutputSerializer(source, context={"member": self.member}).data)

    @extend_schema(tags=TAGS, summary="Delete a source and the documents it owns", parameters=[SOURCE_ID],
                   responses={204: None, **error_responses(404, 409)})
    def delete(self, request, source_id: str):
        services.source_delete(actor=self.member, source=selectors.source_get(member=self.member, source_id=source_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SourceSyncApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="Start a sync (the unfinished one is answered if there is one)",
                   parameters=[SOURCE_ID], request=None,
                   responses={202: SyncStartedOutputSerializer, **error_responses(404)})
    def post(self, request, source_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        sync, created = services.sync_start(actor=self.member, source=source)
        return Response({"id": str(sync.pk), "created": created}, status=status.HTTP_202_ACCEPTED)


class SourceSyncListApi(MemberAPIView):
    permission_classes = [IsAdmin]
    query_parameters = PageParameters

    @extend_schema(tags=TAGS, summary="A source's syncs, newest first", parameters=[SOURCE_ID],
                   responses={200: SyncOutputSerializer(many=True), **error_responses(404)})
    def get(self, request, source_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        page = self.paginate_queryset(selectors.sync_list(source=source))
        # The page's rows read at once: the member and the documents once, not per sync.
        context = {"member": self.member, "_rows": selectors.syncs_rows_shown(member=self.member, syncs=page)}
        return self.get_paginated_response(SyncOutputSerializer(page, many=True, context=context).data)


class SourceSyncDetailApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="One sync: progress, counts, errors",
                   parameters=[SOURCE_ID, id_parameter("sync_id", "Sync id", str)],
                   responses={200: SyncOutputSerializer, **error_responses(404)})
    def get(self, request, source_id: str, sync_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        sync = selectors.sync_get(source=source, sync_id=sync_id)
        return Response(SyncOutputSerializer(sync, context={"member": self.member}).data)


class SourcePreviewSavedApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="What a sync of this source would do now, item by item", parameters=[SOURCE_ID],
                   responses={200: PreviewOutputSerializer, **error_responses(404)})
    def get(self, request, source_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        return Response(selectors.source_preview(member=self.member, source=source))


class SourceDocumentDetachApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="Detach a document from its source (it stays; the sync leaves it)",
                   parameters=[SOURCE_ID, id_parameter("document_id", "Document id", str)], request=None,
                   responses={204: None, **error_responses(404, 409)})
    def post(self, request, source_id: str, document_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        document = kb_selectors.document_get_for_change(member=self.member, document_id=document_id)
        services.source_document_detach(actor=self.member, source=source, document=document)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SourceDetachedListApi(MemberAPIView):
    """A page of the source's detached paths (``?limit=&offset=``, as the other lists: 50 by default, at most 500),
    newest detached first: of the page's detached paths, those you may read (``results``) and how many others
    (``hidden``); ``count``: how many the source holds. A request reads and judges at most ``limit`` of them."""

    permission_classes = [IsAdmin]
    query_parameters = PageParameters

    @extend_schema(tags=TAGS, summary="The source's detached paths (every sync skips them until re-attached)",
                   parameters=[SOURCE_ID, *PAGE_PARAMETERS],
                   responses={200: DetachedListOutputSerializer, **error_responses(404)})
    def get(self, request, source_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        pages = self.paginator
        limit, offset = pages.get_limit(request), pages.get_offset(request)
        page = selectors.detached_page(member=self.member, source=source, offset=offset, limit=limit)
        return pages.page_response(request, count=page.count, offset=page.offset, limit=page.limit,
                                   results=DetachedOutputSerializer(page.rows, many=True).data, hidden=page.hidden)


class SourceDetachedReattachApi(MemberAPIView):
    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="Re-attach a detached path: it follows the source again from the next sync",
                   parameters=[SOURCE_ID, id_parameter("detached_id", "Detached path id")], request=None,
                   responses={200: ReattachedOutputSerializer, **error_responses(404, 409)})
    def post(self, request, source_id: str, detached_id: str):
        source = selectors.source_get(member=self.member, source_id=source_id)
        detached = selectors.detached_get(member=self.member, source=source, detached_id=detached_id)
        document = services.source_path_reattach(actor=self.member, source=source, detached=detached)
        return Response({"document_id": str(document.pk) if document is not None else None})
