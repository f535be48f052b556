"""Input and output serializers of the index-version API (admins only)."""

from __future__ import annotations

from rest_framework import serializers

from accounts.api_fields import LimitedCharField
from kb.index_versions import config_summary
from kb.models import IndexVersion


class IndexVersionCreateInputSerializer(serializers.Serializer):
    config = serializers.DictField(
        required=False, default=dict,
        help_text="Chunking/embedding config keys (strategy, target_tokens, overlap, max_tokens, prefix, model, "
        "semantic_split, special_tokens, embedding_dimensions); omitted keys take the defaults.",
    )
    name = LimitedCharField(max_length=100, required=False, allow_blank=True, default="")


class IndexVersionActivateInputSerializer(serializers.Serializer):
    force = serializers.BooleanField(
        required=False, default=False, help_text="Activate even if the version is not built for every ready document."
    )


class IndexVersionOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    short_id = serializers.CharField(help_text="The first 12 hex digits of the config hash.")
    name = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=IndexVersion.Status.values)
    is_active = serializers.BooleanField()
    config = serializers.DictField()
    summary = serializers.SerializerMethodField()
    chunk_count = serializers.IntegerField(default=0, help_text="Chunks of the version you may read.")
    document_count = serializers.IntegerField(default=0, help_text="Documents with chunks of the version you may read.")
    created_at = serializers.DateTimeField()
    activated_at = serializers.DateTimeField(allow_null=True)

    def get_summary(self, obj) -> str:
        return config_summary(obj.config)
