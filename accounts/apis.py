"""The accounts REST API (admins only): groups, memberships and API tokens of the caller's tenant.

Also the base view every ``/api/v1/`` view derives from: token or session
authentication, the acting membership as ``self.member``, members only.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from accounts import selectors, services
from accounts.api_fields import PageParameters, QueryParametersSerializer
from accounts.authentication import TokenAuthentication
from accounts.errors import ApplicationError
from accounts.invitations import invitation_create
from accounts.models import Membership
from accounts.parsers import SafeJSONParser
from accounts.permissions import IsAdmin, IsMember, SessionMemberAuthentication, request_member
from accounts.serializers import (
    ErrorSerializer,
    GroupCreateInputSerializer,
    GroupOutputSerializer,
    GroupUpdateInputSerializer,
    InvitationOutputSerializer,
    MembershipCreateInputSerializer,
    MembershipOutputSerializer,
    MembershipUpdateInputSerializer,
    TokenCreatedOutputSerializer,
    TokenCreateInputSerializer,
    TokenOutputSerializer,
    error_responses,
)


class RequestTooLarge(ApplicationError):
    code = "payload_too_large"
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE


class ErrorAwareAutoSchema(AutoSchema):
    """Adds the error responses every operation can give, in the one error shape, where a view
    did not declare them: 401/403/429 always, 404 with a path id, 400/413/415 with a body, 400
    on a GET (an unknown query parameter; a bad ``limit``/``offset``)."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        codes = {401, 403, 429}
        if "{" in path:
            codes.add(404)
        if method in ("POST", "PUT", "PATCH"):
            codes |= {400, 413, 415}
        if method == "GET":  # a query parameter it does not take, or a bad ``limit``/``offset``
            codes.add(400)
        error = self.resolve_serializer(ErrorSerializer, "response").ref
        for code, entry in error_responses(*codes).items():
            operation["responses"].setdefault(
                str(code), {"content": {"application/json": {"schema": error}}, "description": entry.description}
            )
        return operation


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """``?limit=&offset=`` that refuses (400) what it cannot honour instead of quietly ignoring it."""

    default_limit = 50
    max_limit = 500

    def _bounded(self, request, name: str, low: int, high: int | None, default: int) -> int:
        raw = request.query_params.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ValidationError({name: ["A whole number is required."]}) from None
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise ValidationError({name: [f"Must be {bounds}."]})
        return value

    def get_limit(self, request) -> int:
        return self._bounded(request, self.limit_query_param, 1, self.max_limit, self.default_limit)

    def get_offset(self, request) -> int:
        return self._bounded(request, self.offset_query_param, 0, None, 0)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        bounds = {self.limit_query_param: {"minimum": 1, "maximum": self.max_limit},
                  self.offset_query_param: {"minimum": 0}}
        for parameter in parameters:
            parameter["schema"].update(bounds.get(parameter["name"], {}))
        return parameters

    def page_response(self, request, *, count: int, offset: int, limit: int, results: list, **more) -> Response:
        """The paged lists' answer (``count``, ``next``, ``previous``, ``results``) for a page a selector cut itself
        (its ``limit`` and ``offset`` read by :meth:`get_limit` and :meth:`get_offset`; its rows judged after the cut:
        a source's detached paths), with ``more`` fields beside them."""
        self.request, self.count, self.offset, self.limit = request, count, offset, limit
        response = self.get_paginated_response(results)
        response.data.update(more)
        return response


# A page's query parameters as StrictLimitOffsetPagination reads them, for the schema of a view whose answer the schema
# generator does not page itself (the review queue's list, a source's detached paths).
PAGE_PARAMETERS = [
    OpenApiParameter("limit", {"type": "integer", "minimum": 1, "maximum": StrictLimitOffsetPagination.max_limit},
                     OpenApiParameter.QUERY, description="Number of results to return per page."),
    OpenApiParameter("offset", {"type": "integer", "minimum": 0}, OpenApiParameter.QUERY,
                     description="The initial index from which to return the results."),
]


class MemberAPIView(GenericAPIView):
    """Base of every API view: authenticated as one membership; members of any role by default.

    A ``GenericAPIView`` only for its pagination helpers; views never use its queryset machinery.
    """

    # Token first: its ``WWW-Authenticate`` header makes an anonymous call a 401, not a 403.
    authentication_classes = [TokenAuthentication, SessionMemberAuthentication]
    permission_classes = [IsMember]
    parser_classes = [SafeJSONParser]
    pagination_class = StrictLimitOffsetPagination
    schema = ErrorAwareAutoSchema()
    # What a GET may be asked in its query string, checked before the handler runs: a parameter it does not
    # take is a 400 naming it (ignored, a misspelt one -- ``?limt=5`` -- answered as if it were absent). None
    # by default; ``PageParameters`` on a list; a filtered list's own filter serializer, which the view also
    # validates the values with. The OpenAPI schema documents the same names (tests/test_api_query_parameters.py).
    query_parameters: type[QueryParametersSerializer] = QueryParametersSerializer

    def initial(self, request, *args, **kwargs):
        # Before authentication (whose CSRF check may read a form body) and before request.data
        # (DRF reads the stream itself, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE): a body
        # announced larger than the limit is refused without reading a byte of it. Without a
        # Content-Length, Django reads no body at all.
        limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            raise RequestTooLarge(
                f"the request body is {length} bytes; the limit is {limit} bytes", details={"limit": limit}
            )
        super().initial(request, *args, **kwargs)
        if request.method in ("GET", "HEAD"):  # after authentication: an anonymous call is still a 401
            self.query_parameters.check_names(request.query_params)

    @property
    def member(self) -> Membership:
        return request_member(self.request)

    def paginated(self, queryset, serializer_class, context: dict | None = None) -> Response:
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(serializer_class(page, many=True, context=context or {}).data)


def id_parameter(name: str, description: str, type_=int) -> OpenApiParameter:
    return OpenApiParameter(name, type_, OpenApiParameter.PATH, description=description)


# ----------------------------------------------------------------------------- groups


class GroupListApi(MemberAPIView):
    """``/api/v1/groups/`` (admins)."""

    permission_classes = [IsAdmin]
    query_parameters = PageParameters

    @extend_schema(tags=["admin"], summary="List the tenant's groups", responses={
        200: GroupOutputSerializer(many=True), **error_responses()})
    def get(self, request):
        return self.paginated(selectors.group_list(tenant=self.member.tenant), GroupOutputSerializer)

    @extend_schema(tags=["admin"], summary="Create a group", request=GroupCreateInputSerializer, responses={
        201: GroupOutputSerializer, **error_responses(400, 409, 415)})
    def post(self, request):
        serializer = GroupCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        group = services.group_create(tenant=self.member.tenant, actor=self.member, **serializer.validated_data)
        return Response(GroupOutputSerializer(group).data, status=status.HTTP_201_CREATED)


class GroupDetailApi(MemberAPIView):
    """``/api/v1/groups/{id}/`` (admins)."""

    permission_classes = [IsAdmin]

    @extend_schema(tags=["admin"], summary="Rename a group (its slug never changes)",
                   parameters=[id_parameter("group_id", "Group id")], request=GroupUpdateInputSerializer,
                   responses={200: GroupOutputSerializer, **error_responses(400, 404, 415)})
    def patch(self, request, group_id: str):
        group = selectors.group_get(tenant=self.member.tenant, group_id=group_id)
        serializer = GroupUpdateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        group = services.group_update(group=group, actor=self.member, **serializer.validated_data)
        return Response(GroupOutputSerializer(group).data)


# ----------------------------------------------------------------------------- memberships


class MembershipListApi(MemberAPIView):
    """``/api/v1/memberships/`` (admins)."""

    permission_classes = [IsAdmin]
    query_parameters = PageParameters

    @extend_schema(tags=["admin"], summary="List the tenant's memberships", responses={
        200: MembershipOutputSerializer(many=True), **error_responses()})
    def get(self, request):
        return self.paginated(selectors.membership_list(tenant=self.member.tenant), MembershipOutputSerializer)

    @extend_schema(tags=["admin"], summary="Add a person: an invitation e-mailed to them, which they accept",
                   description="The person joins with this role, clearance and groups when they accept the "
                               "e-mailed invitation (a new address sets a password; an account that already "
                               "exists signs in with its own), never at once: the answer and the state are the "
                               "same whether the address has an account or not. 409: already a member of "
                               "this tenant; 400 `mail_failed`: the e-mail could not be sent, nothing changed.",
                   request=MembershipCreateInputSerializer,
                   responses={202: InvitationOutputSerializer, **error_responses(400, 409, 415)})
    def post(self, request):
        serializer = MembershipCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        invitation = invitation_create(
            tenant=self.member.tenant, email=data["email"], role=data["role"], clearance=data["clearance"],
            group_slugs=data["groups"], actor=self.member, request=request,
        )
        return Response(InvitationOutputSerializer(invitation).data, status=status.HTTP_202_ACCEPTED)


class MembershipDetailApi(MemberAPIView):
    """``/api/v1/memberships/{id}/`` (admins)."""

    permission_classes = [IsAdmin]

    @extend_schema(tags=["admin"], summary="Change a membership's role, clearance, groups or active flag",
                   parameters=[id_parameter("membership_id", "Membership id")],
                   request=MembershipUpdateInputSerializer,
                   responses={200: MembershipOutputSerializer, **error_responses(400, 404, 409, 415)})
    def patch(self, request, membership_id: str):
        tenant = self.member.tenant
        membership = selectors.membership_get_by_id(tenant=tenant, membership_id=membership_id)
        serializer = MembershipUpdateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        services.membership_update(
            membership=membership, acting=self.member, role=data.get("role"), clearance=data.get("clearance"),
            group_slugs=data.get("groups"), is_active=data.get("is_active"),
        )
        membership = selectors.membership_get_by_id(tenant=tenant, membership_id=membership.pk)
        return Response(MembershipOutputSerializer(membership).data)


# ----------------------------------------------------------------------------- tokens


class TokenListApi(MemberAPIView):
    """``/api/v1/tokens/`` (admins)."""

    permission_classes = [IsAdmin]
    query_parameters = PageParameters

    @extend_schema(tags=["admin"], summary="List the tenant's API tokens (never their keys)", responses={
        200: TokenOutputSerializer(many=True), **error_responses()})
    def get(self, request):
        return self.paginated(selectors.api_token_list(tenant=self.member.tenant), TokenOutputSerializer)

    @extend_schema(tags=["admin"], summary="Create a token for a membership; the key is shown once",
                   request=TokenCreateInputSerializer,
                   responses={201: TokenCreatedOutputSerializer, **error_responses(400, 404, 415)})
    def post(self, request):
        serializer = TokenCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        membership = selectors.membership_get_by_id(
            tenant=self.member.tenant, membership_id=data.get("membership_id", self.member.pk)
        )
        token, key = services.api_token_create(membership=membership, name=data["name"], actor=self.member)
        token.key = key
        return Response(TokenCreatedOutputSerializer(token).data, status=status.HTTP_201_CREATED)


class TokenRevokeApi(MemberAPIView):
    """``/api/v1/tokens/{id}/revoke/`` (admins)."""

    permission_classes = [IsAdmin]

    @extend_schema(tags=["admin"], summary="Revoke a token (idempotent)", request=None,
                   parameters=[id_parameter("token_id", "Token id")],
                   responses={200: TokenOutputSerializer, **error_responses(404)})
    def post(self, request, token_id: str):
        token = selectors.api_token_get(tenant=self.member.tenant, token_id=token_id)
        token = services.api_token_revoke(token=token, actor=self.member)
        return Response(TokenOutputSerializer(token).data)
