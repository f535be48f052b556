"""The audit REST API (admins only): the tenant's records, filtered; their export; the settings.

Every read is of the acting admin's own tenant (``audit.selectors``): another tenant's ids in a
filter find nothing, as made-up ids do.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from accounts.apis import MemberAPIView
from accounts.permissions import IsAdmin
from accounts.serializers import error_responses
from audit import selectors, services
from audit.exports import FORMATS, export_lines
from audit.serializers import (
    AuditEventOutputSerializer,
    AuditExportFilterSerializer,
    AuditFilterSerializer,
    AuditSettingsSerializer,
)

TAGS = ["audit"]


class AuditListApi(MemberAPIView):
    """``/api/v1/audit/`` (admins): the tenant's records, newest first."""

    query_parameters = AuditFilterSerializer

    permission_classes = [IsAdmin]

    @extend_schema(tags=TAGS, summary="The tenant's audit records, newest first, filtered",
                   parameters=[AuditFilterSerializer],
                   responses={200: AuditEventOutputSerializer(many=True), **error_responses(400)})
    def get(self, request):
        filters = AuditFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        events = selectors.audit_list(tenant_id=self.member.tenant_id, **filters.selector_arguments())
        return self.paginated(events, AuditEventOutputSerializer)


class _AnyAccept(BaseContentNegotiation):
    """The export answers its file whatever the Accept header says (errors stay JSON)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0]


class AuditExportApi(MemberAPIView):
    """``/api/v1/audit/export/`` (admins): the same records as a CSV or JSON lines file, streamed."""

    query_parameters = AuditExportFilterSerializer

    permission_classes = [IsAdmin]
    pagination_class = None
    content_negotiation_class = _AnyAccept

    @extend_schema(
        tags=TAGS, summary="Export the tenant's audit records (filtered) as CSV or JSON lines",
        parameters=[AuditExportFilterSerializer],
        responses={
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV with a header row."),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="One JSON record a line."),
            **error_responses(400),
        },
    )
    def get(self, request):
        filters = AuditExportFilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        file_format = filters.validated_data["file"]
        events = selectors.audit_list(tenant_id=self.member.tenant_id, **filters.selector_arguments())
        response = StreamingHttpResponse(export_lines(events, file_format), content_type=FORMATS[file_format])
        response["Content-Disposition"] = f'attachment; filename="audit-{self.member.tenant.slug}.{file_format}"'
        return response


class AuditSettingsApi(MemberAPIView):
    """``/api/v1/audit/settings/`` (admins): retention and query hashing of the tenant."""

    permission_classes = [IsAdmin]
    pagination_class = None

    @extend_schema(tags=TAGS, summary="The tenant's audit settings",
                   responses={200: AuditSettingsSerializer, **error_responses()})
    def get(self, request):
        return Response(AuditSettingsSerializer(services.audit_settings_get(tenant_id=self.member.tenant_id)).data)

    @extend_schema(tags=TAGS, summary="Change the tenant's audit retention or query hashing (recorded)",
                   request=AuditSettingsSerializer,
                   responses={200: AuditSettingsSerializer, **error_responses(400, 415)})
    def patch(self, request):
        serializer = AuditSettingsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        current = services.audit_settings_update(actor=self.member, **serializer.validated_data)
        return Response(AuditSettingsSerializer(current).data)
