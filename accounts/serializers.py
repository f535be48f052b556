"""Input and output serializers of the accounts API (groups, memberships, tokens) and the error shape.

Input serializers only validate shapes; the rules live in ``accounts.services``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from accounts import policy
from accounts.api_fields import LimitedCharField
from accounts.models import Group, Role
from accounts.policy import AccessLevel

LEVEL_NAMES = list(policy.LEVEL_NAMES)  # the schema's AccessLevelEnum (settings.SPECTACULAR_SETTINGS)
SLUG_LIST_MAX = 100


# ----------------------------------------------------------------------------- the one error shape


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    """``{"error": {"code", "message", "details"}}`` -- every error response has this shape."""

    error = ErrorDetailSerializer()


_ERROR_DESCRIPTIONS = {
    400: "Invalid request (validation, malformed JSON, unknown level or group).",
    401: "Missing, invalid or revoked token.",
    403: "Your role, clearance or groups do not allow this.",
    404: "Not found -- or not yours to see; the two are indistinguishable.",
    409: "Conflicts with the current state.",
    413: "The request body is larger than BULKHEAD_MAX_UPLOAD_BYTES.",
    415: "Unsupported request Content-Type or document content type.",
    429: "Too many requests for this token; see Retry-After.",
}


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    """Schema entries for error responses; 401, 403 and 429 apply to every operation."""
    wanted = sorted({401, 403, 429, *codes})
    return {code: OpenApiResponse(ErrorSerializer, description=_ERROR_DESCRIPTIONS[code]) for code in wanted}


def slug_list(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=LimitedCharField(max_length=63), max_length=SLUG_LIST_MAX, **kwargs)


# ----------------------------------------------------------------------------- groups


class GroupOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    slug = serializers.CharField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()


class GroupCreateInputSerializer(serializers.Serializer):
    slug = LimitedCharField(max_length=63, help_text="Lowercase letters, digits and hyphens; never changes.")
    name = LimitedCharField(max_length=200, required=False, allow_blank=True, default="")


class GroupUpdateInputSerializer(serializers.Serializer):
    name = LimitedCharField(max_length=200, required=False, allow_blank=True)


# ----------------------------------------------------------------------------- memberships


class MembershipOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField(source="user.email")
    role = serializers.ChoiceField(choices=Role.values)
    clearance = serializers.SerializerMethodField()
    groups = serializers.SerializerMethodField()
    is_active = serializers.BooleanField()
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ChoiceField(choices=LEVEL_NAMES))
    def get_clearance(self, obj) -> str:
        return AccessLevel(obj.clearance).label

    def get_groups(self, obj) -> list[str]:
        return sorted(g.slug for g in obj.groups.all())


class MembershipCreateInputSerializer(serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.values, default=Role.VIEWER.value)
    clearance = serializers.ChoiceField(choices=LEVEL_NAMES, default="internal")
    groups = slug_list(required=False, default=list)


class InvitationOutputSerializer(serializers.Serializer):
    """What adding a member answers: the invitation the person accepts (the same for every address)."""

    id = serializers.IntegerField(help_text="The invitation's id (not a membership's)")
    email = serializers.CharField()
    role = serializers.ChoiceField(choices=Role.values)
    clearance = serializers.SerializerMethodField()
    groups = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField(help_text="Always `invited`: the person joins when they accept")
    expires_at = serializers.DateTimeField()

    @extend_schema_field(serializers.ChoiceField(choices=LEVEL_NAMES))
    def get_clearance(self, obj) -> str:
        return AccessLevel(obj.clearance).label

    def get_groups(self, obj) -> list[str]:
        return sorted(Group.objects.filter(tenant_id=obj.tenant_id, pk__in=obj.group_ids).values_list("slug", flat=True))

    @extend_schema_field(serializers.ChoiceField(choices=["invited"]))
    def get_status(self, obj) -> str:
        return "invited"


class MembershipUpdateInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.values, required=False)
    clearance = serializers.ChoiceField(choices=LEVEL_NAMES, required=False)
    groups = slug_list(required=False)
    is_active = serializers.BooleanField(required=False)


# ----------------------------------------------------------------------------- tokens


class TokenOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    membership_id = serializers.IntegerField()
    email = serializers.CharField(source="membership.user.email")
    created_by_id = serializers.IntegerField(allow_null=True, help_text="The membership that minted it; null: "
                                             "minted on the server")
    created_by_email = serializers.EmailField(source="created_by.user.email", allow_null=True,
                                              help_text="The e-mail of the admin who minted it")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class TokenCreatedOutputSerializer(TokenOutputSerializer):
    key = serializers.CharField(help_text="The secret key: shown only in this response, never again.")


class TokenCreateInputSerializer(serializers.Serializer):
    membership_id = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="Default: your own membership."
    )
    name = LimitedCharField(max_length=100, required=False, allow_blank=True, default="")
