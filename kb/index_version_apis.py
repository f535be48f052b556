"""The index-version REST API (admins): list, create, build, activate.

Thin views over ``kb.index_versions``. A version id in the path is the full uuid or the
short id; one of another tenant, unknown or malformed answers the same 404. Members
who are not admins get 403.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response

from accounts.api_fields import PageParameters
from accounts.permissions import IsAdmin
from accounts.selectors import reader_for
from accounts.serializers import error_responses
from kb import index_versions as versions
from kb import selectors
from kb.apis import KbAPIView
from kb.index_version_serializers import (
    IndexVersionActivateInputSerializer,
    IndexVersionCreateInputSerializer,
    IndexVersionOutputSerializer,
)
from kb.serializers import JobOutputSerializer

TAGS = ["index versions"]
VERSION_ID = OpenApiParameter(
    "version_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="Version uuid or short id (12 hex)"
)


class _VersionAPIView(KbAPIView):
    permission_classes = [IsAdmin]
    method_permissions = {"GET": [IsAdmin], "POST": [IsAdmin]}

    def counted(self, version):
        """The version again, with its chunk and document counts (of what the admin may read)."""
        return versions.index_version_list(tenant=self.member.tenant, reader=reader_for(self.member)).get(pk=version.pk)


class IndexVersionListApi(_VersionAPIView):
    """``/api/v1/index-versions/``: list and create (admins)."""

    query_parameters = PageParameters

    @extend_schema(
        tags=TAGS, summary="The tenant's index versions with counts (active first)",
        responses={200: IndexVersionOutputSerializer(many=True)},
    )
    def get(self, request):
        listed = versions.index_version_list(tenant=self.member.tenant, reader=reader_for(self.member))
        return self.paginated(listed, IndexVersionOutputSerializer)

    @extend_schema(
        tags=TAGS, summary="Create a shadow version from a config (the same config returns the existing one)",
        request=IndexVersionCreateInputSerializer,
        responses={201: IndexVersionOutputSerializer, 200: IndexVersionOutputSerializer, **error_responses(400, 415)},
    )
    def post(self, request):
        serializer = IndexVersionCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        config = versions.index_version_config(base=data["config"])
        version, created = versions.index_version_create(tenant=self.member.tenant, config=config, name=data["name"])
        body = IndexVersionOutputSerializer(self.counted(version)).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class IndexVersionBuildApi(_VersionAPIView):
    """``/api/v1/index-versions/{id}/build/``: start or resume a build (admins)."""

    @extend_schema(
        tags=TAGS, summary="Build (or resume building) the version; poll the returned job",
        parameters=[VERSION_ID], request=None, responses={202: JobOutputSerializer, **error_responses(404)},
    )
    def post(self, request, version_id: str):
        version = versions.index_version_get(tenant=self.member.tenant, ref=version_id)
        job = versions.index_version_build(version=version, created_by=request.user)
        job = selectors.job_get(member=self.member, job_id=job.pk)  # read as the caller (``progress_shown``)
        return Response(JobOutputSerializer(job, context=self.job_context(job)).data, status=status.HTTP_202_ACCEPTED)


class IndexVersionActivateApi(_VersionAPIView):
    """``/api/v1/index-versions/{id}/activate/``: switch the tenant's searches (admins)."""

    @extend_schema(
        tags=TAGS, summary="Make the version active, atomically; refused (409) unless built for every ready document",
        parameters=[VERSION_ID], request=IndexVersionActivateInputSerializer,
        responses={200: IndexVersionOutputSerializer, **error_responses(404, 409)},
    )
    def post(self, request, version_id: str):
        version = versions.index_version_get(tenant=self.member.tenant, ref=version_id)
        serializer = IndexVersionActivateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        version = versions.index_version_activate(
            version=version, force=serializer.validated_data["force"], reader=reader_for(self.member),
            actor=self.member,
        )
        return Response(IndexVersionOutputSerializer(self.counted(version)).data)
