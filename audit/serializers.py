"""Input and output serializers of the audit API. Shapes only; the reads are ``audit.selectors``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api_fields import QueryParametersSerializer
from audit.exports import FORMATS, shown_details, shown_id
from audit.models import MAX_RETENTION_DAYS, MIN_RETENTION_DAYS, Action

BIGINT = 2**63 - 1


class AuditFilterSerializer(QueryParametersSerializer):
    """Query filters of the list and the export; each one left out filters nothing."""

    extra_parameters = ("limit", "offset")  # the list's pagination (the export has none: refused there)

    member = serializers.IntegerField(required=False, min_value=1, max_value=BIGINT,
                                      help_text="The acting membership's id.")
    action = serializers.ChoiceField(choices=Action.choices, required=False)
    document = serializers.UUIDField(
        required=False, help_text="A document: acts on it, reads of it and searches that returned any of its chunks."
    )
    since = serializers.DateTimeField(required=False, help_text="From this time on (inclusive).")
    until = serializers.DateTimeField(required=False, help_text="Before this time (exclusive).")

    def validate(self, attrs):
        # DRF reads ``?member=`` as no filter at all; the schema says a filter is a value of its type.
        blank = sorted(name for name in self.fields if self.initial_data.get(name, None) == "")
        if blank:
            raise serializers.ValidationError({name: ["May not be empty; leave the filter out instead."]
                                               for name in blank})
        return attrs

    def selector_arguments(self) -> dict:
        data = self.validated_data
        return {"membership_id": data.get("member"), "action": data.get("action"),
                "document_id": data.get("document"), "since": data.get("since"), "until": data.get("until")}


class AuditExportFilterSerializer(AuditFilterSerializer):
    extra_parameters = ()

    file = serializers.ChoiceField(choices=sorted(FORMATS), default="jsonl",
                                   help_text="csv, or JSON lines (one record per line).")


class AuditEventOutputSerializer(serializers.Serializer):
    id = serializers.SerializerMethodField(
        help_text="The record's id in this tenant's trail (the exports give the same): opaque, never the database's "
        "row number, which every tenant's records advance (2026-12-04).")
    created_at = serializers.DateTimeField()
    action = serializers.ChoiceField(choices=Action.choices)
    membership_id = serializers.IntegerField(allow_null=True, help_text="The acting membership (null: the system, or the "
                                             "installation's operator -- `details.operator` true, `actor_email` "
                                             "theirs -- in the operator's admin).")
    user_id = serializers.SerializerMethodField(help_text="Always null: the account's id is shared by every tenant "
                                                "of the person, and its age told a tenant that an address had an "
                                                "account elsewhere (2026-12-03). `membership_id` names the actor.")
    actor_email = serializers.CharField(help_text="The actor's e-mail when it acted.")
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    document_ids = serializers.ListField(child=serializers.UUIDField())
    details = serializers.SerializerMethodField(
        help_text="What changed ({before, after}), an address, a chosen section, ... A document's size is never "
        "shown (records before 2026-12-04 hold one).")
    query_text = serializers.CharField(help_text="A search's text; empty when the tenant keeps only its hash.")
    query_hash = serializers.CharField(help_text="HMAC-SHA256 of a search's text, keyed per tenant.")
    mode = serializers.CharField()
    index_version_id = serializers.UUIDField(allow_null=True)
    plan = serializers.SerializerMethodField(help_text="Always blank: a search's plan is chosen against every "
                                             "tenant's chunks, so it is not a tenant's to read; records kept "
                                             "before 2026-12-03 hold one, never shown (2026-12-04).")
    chunk_ids = serializers.ListField(child=serializers.UUIDField())
    section_ids = serializers.ListField(child=serializers.UUIDField())
    latency_ms = serializers.FloatField(allow_null=True)

    @extend_schema_field(serializers.CharField())
    def get_id(self, obj) -> str:
        return shown_id(obj)

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_user_id(self, obj) -> None:
        return None

    @extend_schema_field(serializers.CharField())
    def get_plan(self, obj) -> str:
        return ""

    @extend_schema_field(serializers.DictField())
    def get_details(self, obj):
        return shown_details(obj)


class AuditSettingsSerializer(serializers.Serializer):
    """The tenant's audit settings (PATCH: any subset)."""

    retention_days = serializers.IntegerField(
        min_value=MIN_RETENTION_DAYS, max_value=MAX_RETENTION_DAYS, required=False,
        help_text="Records older than this many days are deleted by the hourly expiry.",
    )
    hash_queries = serializers.BooleanField(
        required=False, help_text="Keep only a keyed hash of search texts, never the text.",
    )
