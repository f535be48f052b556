"""The documents, sections, jobs and search REST API (v1).

Thin views: validate with an input serializer, call one selector or service (a service that
writes takes the acting member and checks what it may write itself), serialize with an
output serializer. Every id that is missing, another tenant's or not readable answers the
same 404.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.apis import PAGE_PARAMETERS, MemberAPIView, StrictLimitOffsetPagination
from accounts.errors import ApplicationError
from accounts.models import Group
from accounts.parsers import SafeJSONParser
from accounts.permissions import IsAdmin, IsEditor
from accounts.policy import AccessLevel
from accounts.selectors import membership_get_by_id
from accounts.serializers import error_responses
from kb import screening, selectors, services
from kb.serializers import (
    SECTIONS_PAGE_MAX,
    DocumentAcceptedOutputSerializer,
    DocumentAsMemberOutputSerializer,
    DocumentFilterSerializer,
    DocumentJsonInputSerializer,
    DocumentMultipartInputSerializer,
    DocumentOutputSerializer,
    JobOutputSerializer,
    ReviewDecisionInputSerializer,
    ReviewItemSerializer,
    ReviewQueueFilterSerializer,
    ScreeningSettingsSerializer,
    SearchInputSerializer,
    SearchOutputSerializer,
    SectionAccessInputSerializer,
    SectionOutputSerializer,
    SectionPageSerializer,
    SectionReadersOutputSerializer,
)
from kb.services import PayloadTooLarge, Upload

DOCUMENTS_TAG = ["documents"]


def _path_id(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.UUID, OpenApiParameter.PATH, description=description)


class KbAPIView(MemberAPIView):
    """Per-method roles (``method_permissions``) on one URL."""

    method_permissions: dict[str, list] = {}

    def get_permissions(self):
        classes = self.method_permissions.get(self.request.method, self.permission_classes)
        return [permission() for permission in classes]

    def group_context(self) -> dict:
        return {"group_slugs": selectors.group_slugs(member=self.member)}

    def document_context(self, documents) -> dict:
        """Group names, the documents whose ingestion error this member may read in full (an admin every
        one, anyone else those whose failing content they uploaded themselves: the error may quote any part
        of it; others get :func:`kb.serializers.safe_error`), and the screening mode titles are shown under."""
        context = self.group_context()
        context["full_errors"] = selectors.document_errors_in_full(member=self.member, documents=documents)
        context["screening_mode"] = screening.screening_mode(tenant_id=self.member.tenant_id)
        return context

    def job_context(self, job) -> dict:
        """A job's error in full for the uploader of its bytes and admins who may read every section a document could
        hold (``kb.selectors.error_in_full``)."""
        return {"full_error": selectors.error_in_full(member=self.member, job=job)}


def upload_from_request(request, current=None) -> Upload:
    """The input serializer for the request's content type, validated, as an :class:`Upload`.

    Replacing ``current``: a policy left out of the request keeps the document's present one
    (never the serializer's default, which would silently widen a stricter document)."""
    if request.content_type.startswith("multipart/"):
        serializer = DocumentMultipartInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        file = data["file"]
        limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
        if file.size > limit:
            raise PayloadTooLarge(f"the file is {file.size} bytes; the limit is {limit} bytes", details={"limit": limit})
        content, name = file.read(), file.name or ""
        title, source = data["title"] or name, data["source"] or name
        # Not the part's own Content-Type: clients guess it (text/plain for a .md file would
        # silently turn its access markers into plain text). The name and the bytes decide.
        content_type = data["content_type"]
    else:
        serializer = DocumentJsonInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        content, title, source = data["content"].encode("utf-8"), data["title"], data["source"]
        content_type = data["content_type"]
    access_level, groups = data["access_level"], tuple(data["groups"])
    if current is not None:
        if "access_level" not in request.data:
            access_level = AccessLevel(current.access_level).label
        if "groups" not in request.data:
            groups = tuple(Group.objects.filter(id__in=current.access_groups).values_list("slug", flat=True))
    # A replace without tags keeps the document's, as they are (a held list stays held: re-sent, it is judged as typed).
    tags = None if current is not None and "tags" not in request.data else tuple(data["tags"])
    return Upload(
        content=content, title=title, content_type=content_type, source=source, tags=tags,
        access_level=access_level, groups=groups,
    )


def _accepted(document, job) -> dict:
    return DocumentAcceptedOutputSerializer(
        {"id": document.id, "status": document.status, "job": {"id": job.id, "status": job.status}}
    ).data


UPLOAD_REQUEST = {
    "application/json": DocumentJsonInputSerializer,
    "multipart/form-data": DocumentMultipartInputSerializer,
}


# ----------------------------------------------------------------------------- documents


class DocumentListApi(KbAPIView):
    """``/api/v1/documents/``: list (members) and upload (editors, admins)."""

    query_parameters = DocumentFilterSerializer

    parser_classes = [SafeJSONParser, MultiPartParser]
    method_permissions = {"POST": [IsEditor]}

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="List the documents you can see", parameters=[DocumentFilterSerializer],
        responses={200: DocumentOutputSerializer(many=True), **error_responses(400)},
    )
    def get(self, request):
        filters = DocumentFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        documents = selectors.document_list(member=self.member, **filters.validated_data)
        page = self.paginate_queryset(documents)
        data = DocumentOutputSerializer(page, many=True, context=self.document_context(page)).data
        return self.get_paginated_response(data)

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="Upload a document (editors, admins); ingestion runs in the background",
        request=UPLOAD_REQUEST,
        responses={201: DocumentAcceptedOutputSerializer, **error_responses(400, 413, 415)},
    )
    def post(self, request):
        upload = upload_from_request(request)
        document, job = services.document_create(tenant=self.member.tenant, created_by=self.member, upload=upload)
        return Response(_accepted(document, job), status=status.HTTP_201_CREATED)


class DocumentDetailApi(KbAPIView):
    """``/api/v1/documents/{id}/``: read (members), replace and delete (editors, admins)."""

    parser_classes = [SafeJSONParser, MultiPartParser]
    method_permissions = {"PUT": [IsEditor], "DELETE": [IsEditor]}

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="One document", parameters=[_path_id("document_id", "Document id (UUID)")],
        responses={200: DocumentOutputSerializer, **error_responses(404)},
    )
    def get(self, request, document_id: str):
        document = selectors.document_get(member=self.member, document_id=document_id)
        context = self.document_context([document])
        context["screening"] = {
            document.pk: screening.document_screening_summary(member=self.member, document_id=document.pk)
        }
        return Response(DocumentOutputSerializer(document, context=context).data)

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="Replace a document's content (a new ingestion; old chunks serve until it ends)",
        parameters=[_path_id("document_id", "Document id (UUID)")], request=UPLOAD_REQUEST,
        responses={200: DocumentAcceptedOutputSerializer, **error_responses(400, 404, 413, 415)},
    )
    def put(self, request, document_id: str):
        document = selectors.document_get_for_change(member=self.member, document_id=document_id)
        upload = upload_from_request(request, current=document)
        document, job = services.document_replace(document=document, created_by=self.member, upload=upload)
        return Response(_accepted(document, job))

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="Delete a document; its chunks are gone at once",
        parameters=[_path_id("document_id", "Document id (UUID)")],
        responses={204: OpenApiResponse(description="Deleted."), **error_responses(404)},
    )
    def delete(self, request, document_id: str):
        document = selectors.document_get_for_change(member=self.member, document_id=document_id)
        services.document_delete(document=document, actor=self.member)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DocumentSectionsApi(KbAPIView):
    """``/api/v1/documents/{id}/sections/``: the readable section tree, whole (up to ``SECTIONS_PAGE_MAX``
    sections) or a slice of it (``?offset=&limit=``; ``X-Sections-Total`` says how many there are)."""

    query_parameters = SectionPageSerializer

    pagination_class = None

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="The document's sections you may read, as a tree in document order",
        parameters=[_path_id("document_id", "Document id (UUID)"), SectionPageSerializer],
        responses={200: SectionOutputSerializer(many=True), **error_responses(400, 404)},
    )
    def get(self, request, document_id: str):
        page = SectionPageSerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        document = selectors.document_get(member=self.member, document_id=document_id)
        nodes = selectors.document_section_tree(member=self.member, document=document)
        offset, limit = page.validated_data["offset"], page.validated_data.get("limit")
        if limit is None and len(nodes) > SECTIONS_PAGE_MAX:
            raise ApplicationError(
                f"this document has {len(nodes)} sections you may read: ask for them a page at a time "
                f"(?offset=0&limit={SECTIONS_PAGE_MAX}, at most {SECTIONS_PAGE_MAX} a page)", code="too_many_sections")
        shown = nodes[offset : offset + limit] if limit is not None else nodes
        services.document_read_record(member=self.member, document=document, via="api")
        context = self.group_context()
        context["screening"] = screening.section_screening_summaries(member=self.member, document_id=document.pk)
        response = Response(SectionOutputSerializer(shown, many=True, context=context).data)
        response["X-Sections-Total"] = str(len(nodes))
        return response


class SectionAccessApi(KbAPIView):
    """``/api/v1/sections/{id}/``: change a section's access policy (editors, admins)."""

    method_permissions = {"PATCH": [IsEditor]}

    @extend_schema(
        tags=DOCUMENTS_TAG, summary="Set a section's access policy (no re-embedding)",
        parameters=[_path_id("section_id", "Section id (UUID)")], request=SectionAccessInputSerializer,
        responses={200: SectionOutputSerializer, **error_responses(400, 404, 415)},
    )
    def patch(self, request, section_id: str):
        section = selectors.section_get(member=self.member, section_id=section_id)
        serializer = SectionAccessInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        change = {"access_level": data.get("access_level"), "groups": data.get("groups"), "inherit": data["inherit"]}
        section = services.section_set_access(section=section, actor=self.member, **change)
        node = selectors.section_node(member=self.member, section=section)
        return Response(SectionOutputSerializer(node, context=self.group_context()).data)


# ----------------------------------------------------------------------------- jobs


class JobDetailApi(KbAPIView):
    """``/api/v1/jobs/{id}/``: poll an ingestion job."""

    @extend_schema(
        tags=["jobs"], summary="An ingestion job's status and progress",
        parameters=[_path_id("job_id", "Job id (UUID)")],
        responses={200: JobOutputSerializer, **error_responses(404)},
    )
    def get(self, request, job_id: str):
        job = selectors.job_get(member=self.member, job_id=job_id)
        context = self.job_context(job)
        if job.document_id is not None:
            summary = screening.document_screening_summary(member=self.member, document_id=job.document_id)
            context["screening"] = summary if summary.flagged else None
        return Response(JobOutputSerializer(job, context=context).data)


# ----------------------------------------------------------------------------- search


class SearchApi(KbAPIView):
    """``/api/v1/search/``: permission-filtered retrieval with parent expansion."""

    @extend_schema(
        tags=["search"], summary="Search what you may read; hits expand to their authorized parent sections",
        request=SearchInputSerializer, responses={200: SearchOutputSerializer, **error_responses(400, 404, 415)},
    )
    def post(self, request):
        return Response(search_answer(member=self.member, body=request.data, request=request))


def search_answer(*, member, body, request=None) -> dict:
    """A search from its request body to its response body, as ``member``: validated by
    :class:`SearchInputSerializer`, run by :func:`kb.search.search`, serialized by
    :class:`SearchOutputSerializer`. The REST API and the MCP server (``kb.mcp_server``) both call
    this, so a field added here reaches both. Raises DRF's ValidationError or ApplicationError."""
    from kb.search import SearchFilters, search

    serializer = SearchInputSerializer(data=body)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    version = selectors.index_version_for_search(member=member, index_version_id=data["index_version"])
    raw = data.get("filters") or {}
    filters = SearchFilters(
        document_ids=tuple(raw.get("document_ids", ())), tags=tuple(raw.get("tags", ())),
        content_types=tuple(raw.get("content_types", ())), source_prefix=raw.get("source_prefix", ""),
        updated_after=raw.get("updated_after"), updated_before=raw.get("updated_before"),
    )
    response = search(
        member=member, query=data["query"], top_k=data["top_k"], mode=data["mode"], expand=data["expand"],
        filters=filters, index_version=version, max_contexts=data["max_contexts"],
        context_token_budget=data["context_token_budget"], expand_level=data["expand_level"],
        neighbors=data["neighbors"], exclude_flagged=data["exclude_flagged"], spotlight=data["spotlight"],
        budget_fill=data["budget_fill"],  # None (absent or null): kb.search_modes.DEFAULT_BUDGET_FILL, read there
    )
    # With the request, citation links are absolute (the API); without it (MCP), site-relative.
    return SearchOutputSerializer(response, context={"request": request}).data


# ----------------------------------------------------------------------------- screening and review


REVIEW_TAG = ["review"]
REVIEW_TOTAL_HEADER = "X-Review-Total"


class ScreeningSettingsApi(KbAPIView):
    """``/api/v1/settings/screening/``: the tenant's screening mode (admins; changes are audited)."""

    permission_classes = [IsAdmin]

    @extend_schema(tags=REVIEW_TAG, summary="The tenant's screening mode",
                   responses={200: ScreeningSettingsSerializer, **error_responses()})
    def get(self, request):
        return Response({"screening": screening.screening_mode(tenant_id=self.member.tenant_id)})

    @extend_schema(tags=REVIEW_TAG, summary="Change the tenant's screening mode (audited)",
                   request=ScreeningSettingsSerializer,
                   responses={200: ScreeningSettingsSerializer, **error_responses(400, 415)})
    def patch(self, request):
        serializer = ScreeningSettingsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        mode = screening.screening_settings_update(actor=self.member, mode=serializer.validated_data["screening"])
        return Response({"screening": mode})


class ReviewQueueApi(KbAPIView):
    """``/api/v1/review/``: flagged chunks, then sections' flagged heads, that the reviewer (an admin) may read, a page
    at a time (``?limit=&offset=``, as the other lists: 50 by default, at most 500; ``X-Review-Total`` says how many
    the queue holds). Nothing -- no item, no count -- of flagged chunks or heads in sections they may not read."""

    query_parameters = ReviewQueueFilterSerializer

    permission_classes = [IsAdmin]
    pagination_class = None  # a list, as before pages: the page's bounds are StrictLimitOffsetPagination's

    @extend_schema(tags=REVIEW_TAG, summary="Flagged chunks and heads you may read, waiting for (or past) review",
                   parameters=[ReviewQueueFilterSerializer, *PAGE_PARAMETERS,
                               OpenApiParameter(REVIEW_TOTAL_HEADER, int, OpenApiParameter.HEADER, response=[200],
                                                description="How many items the queue holds in this state.")],
                   responses={200: ReviewItemSerializer(many=True), **error_responses(400)})
    def get(self, request):
        filters = ReviewQueueFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        pages = StrictLimitOffsetPagination()
        limit, offset = pages.get_limit(request), pages.get_offset(request)
        page = screening.review_page(member=self.member, state=filters.validated_data["state"], offset=offset,
                                     limit=limit)
        response = Response(ReviewItemSerializer([vars(i) for i in page.items], many=True).data)
        response[REVIEW_TOTAL_HEADER] = str(page.count)
        return response


class ReviewItemApi(KbAPIView):
    """``/api/v1/review/{chunk_id}/``: one flagged chunk; POST a decision (audited with the reviewer)."""

    permission_classes = [IsAdmin]

    @extend_schema(tags=REVIEW_TAG, summary="One flagged chunk you may read",
                   parameters=[_path_id("chunk_id", "Chunk id (UUID)")],
                   responses={200: ReviewItemSerializer, **error_responses(404)})
    def get(self, request, chunk_id: str):
        return Response(ReviewItemSerializer(vars(screening.review_item_get(member=self.member, chunk_id=chunk_id))).data)

    @extend_schema(tags=REVIEW_TAG, summary="Release, keep out, or delete the document (audited)",
                   parameters=[_path_id("chunk_id", "Chunk id (UUID)")], request=ReviewDecisionInputSerializer,
                   responses={200: ReviewItemSerializer, 204: OpenApiResponse(description="The document was deleted."),
                              **error_responses(400, 404, 415)})
    def post(self, request, chunk_id: str):
        return _review_decided(request, lambda decision: screening.review_decide(
            member=self.member, chunk_id=chunk_id, decision=decision))


class ReviewHeadApi(KbAPIView):
    """``/api/v1/review/heads/{section_id}/``: a section's flagged head (in no chunk: a front matter, a definition's
    decorators and signature); POST a decision (audited with the reviewer). The same 404 for anything else."""

    permission_classes = [IsAdmin]

    @extend_schema(tags=REVIEW_TAG, summary="A section's flagged head you may read",
                   parameters=[_path_id("section_id", "Section id (UUID)")],
                   responses={200: ReviewItemSerializer, **error_responses(404)})
    def get(self, request, section_id: str):
        return Response(ReviewItemSerializer(vars(screening.head_review_item_get(member=self.member,
                                                                                  section_id=section_id))).data)

    @extend_schema(tags=REVIEW_TAG, summary="Release a head, keep it out, or delete the document (audited)",
                   parameters=[_path_id("section_id", "Section id (UUID)")], request=ReviewDecisionInputSerializer,
                   responses={200: ReviewItemSerializer, 204: OpenApiResponse(description="The document was deleted."),
                              **error_responses(400, 404, 415)})
    def post(self, request, section_id: str):
        return _review_decided(request, lambda decision: screening.head_review_decide(
            member=self.member, section_id=section_id, decision=decision))


def _review_decided(request, decide) -> Response:
    """A review decision's answer: ``decide(decision)`` (a chunk's or a head's) for the validated body; the item as it
    is now, or 204 when the document was deleted."""
    serializer = ReviewDecisionInputSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    item = decide(serializer.validated_data["decision"])
    if item is None:
        return Response(status=status.HTTP_204_NO_CONTENT)
    return Response(ReviewItemSerializer(vars(item)).data)


# ----------------------------------------------------------------------------- effective access (admins)


class DocumentAsMemberApi(KbAPIView):
    """``/api/v1/documents/{id}/as/{membership_id}/``: the document as one member sees it (admins): every section
    (up to ``SECTIONS_PAGE_MAX``) or a slice of them (``?offset=&limit=``, as the sections' list;
    ``X-Sections-Total`` says how many the document holds)."""

    query_parameters = SectionPageSerializer

    permission_classes = [IsAdmin]
    pagination_class = None

    @extend_schema(
        tags=["admin"], summary="Every section of a document as one member sees it, and why the rest is hidden",
        parameters=[_path_id("document_id", "Document id (UUID)"),
                    OpenApiParameter("membership_id", int, OpenApiParameter.PATH, description="Membership id"),
                    SectionPageSerializer],
        responses={200: DocumentAsMemberOutputSerializer, **error_responses(400, 404)},
    )
    def get(self, request, document_id: str, membership_id: str):
        page = SectionPageSerializer(data=request.query_params)
        page.is_valid(raise_exception=True)
        document = selectors.document_get(member=self.member, document_id=document_id)
        member = membership_get_by_id(tenant=self.member.tenant, membership_id=membership_id)
        # Unpaged, a document of up to 100,000 sections was every one of them -- its path, excerpt and reasons
        # made, and sent -- in one request (found attacking cost, twenty-first session, attack21f).
        offset, limit = page.validated_data["offset"], page.validated_data.get("limit")
        view = selectors.document_as_member(admin=self.member, member=member, document=document, offset=offset,
                                            limit=SECTIONS_PAGE_MAX + 1 if limit is None else limit)
        if limit is None and view.sections_total > SECTIONS_PAGE_MAX:
            raise ApplicationError(
                f"this document has {view.sections_total} sections: ask for them a page at a time "
                f"(?offset=0&limit={SECTIONS_PAGE_MAX}, at most {SECTIONS_PAGE_MAX} a page)", code="too_many_sections")
        services.document_read_record(member=self.member, document=document, via="api", as_member=member)
        data = {"document_id": document.pk, **vars(view)}
        response = Response(DocumentAsMemberOutputSerializer(data, context=self.group_context()).data)
        response["X-Sections-Total"] = str(view.sections_total)
        return response


class SectionReadersApi(KbAPIView):
    """``/api/v1/sections/{id}/readers/``: who may read a section, and why the others may not (admins)."""

    permission_classes = [IsAdmin]
    pagination_class = None

    @extend_schema(
        tags=["admin"], summary="The members who may read a section, those who may not and why, and its groups",
        parameters=[_path_id("section_id", "Section id (UUID)")],
        responses={200: SectionReadersOutputSerializer, **error_responses(404)},
    )
    def get(self, request, section_id: str):
        readers = selectors.section_readers(admin=self.member, section_id=section_id)
        return Response(SectionReadersOutputSerializer(readers, context=self.group_context()).data)
