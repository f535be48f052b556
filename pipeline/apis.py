"""``POST /api/v1/documents/preview/``: the access preview of an upload (editors, admins).

It lives here, not in ``kb.apis``, because the preview is ingestion's planning step
(``pipeline.preview``) and ``kb`` never imports the pipeline; the project's URLs
(``bulkhead/urls.py``) mount it next to the documents API, with the same input.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from accounts.parsers import SafeJSONParser
from accounts.permissions import IsEditor
from accounts.serializers import LEVEL_NAMES, error_responses
from kb.apis import DOCUMENTS_TAG, UPLOAD_REQUEST, KbAPIView, upload_from_request
from pipeline.preview import document_preview


class SectionPreviewOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    parent = serializers.CharField(allow_null=True)
    depth = serializers.IntegerField()
    title = serializers.CharField(allow_blank=True)
    kind = serializers.CharField()
    line = serializers.IntegerField(allow_null=True, help_text="Line of the heading or marker that opened it.")
    heading_path = serializers.ListField(child=serializers.CharField(allow_blank=True))
    access_level = serializers.ChoiceField(choices=LEVEL_NAMES, help_text="The section's effective level.")
    groups = serializers.ListField(child=serializers.CharField(), help_text="Its effective groups (slugs).")
    marked = serializers.BooleanField(help_text="The policy is the section's own (a marker in the file).")
    tokens = serializers.IntegerField(help_text="Model tokens of the section's own body.")
    chunks = serializers.IntegerField(help_text="Chunks ingestion would make of it.")


class DocumentPreviewOutputSerializer(serializers.Serializer):
    title = serializers.CharField()
    content_type = serializers.CharField()
    size_bytes = serializers.IntegerField()
    access_level = serializers.ChoiceField(choices=LEVEL_NAMES, help_text="The upload's default level.")
    groups = serializers.ListField(child=serializers.CharField())
    index_version = serializers.CharField(help_text="The index version whose configuration chunked it.")
    tokens = serializers.IntegerField(help_text="Model tokens of every section's body.")
    chunks = serializers.IntegerField(help_text="Chunks ingestion would make of the whole document.")
    section_count = serializers.IntegerField(help_text="Every section's count; `sections` lists the first 1,000.")
    sections = SectionPreviewOutputSerializer(many=True)


class DocumentPreviewApi(KbAPIView):
    """Parse and chunk an upload as ingestion would, and store nothing."""

    parser_classes = [SafeJSONParser, MultiPartParser]
    permission_classes = [IsEditor]

    @extend_schema(
        tags=DOCUMENTS_TAG, operation_id="documents_preview",
        summary="Preview an upload (editors, admins): its sections with their effective policies, token and "
                "chunk counts, or the error its ingestion would end with (with its line); nothing is stored",
        description="A preview takes at most BULKHEAD_PREVIEW_SECONDS (10 s) and the small-upload lane's cost "
                    "budget: a file that needs more answers 400 `too_costly_to_preview` (ingest it, or split it).",
        request=UPLOAD_REQUEST,
        responses={200: DocumentPreviewOutputSerializer, **error_responses(400, 413, 415)},
    )
    def post(self, request):
        preview = document_preview(member=self.member, upload=upload_from_request(request))
        return Response(DocumentPreviewOutputSerializer(preview).data)
