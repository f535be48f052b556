"""Serializers of the sources API: the input of a source (create, change, preview) and its outputs.
Credentials are write-only: no output has them (``has_credentials`` says whether there are any)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.policy import LEVEL_NAMES, AccessLevel
from sources import selectors
from sources.models import Source
from sources.services import access_map_names


class AccessMapEntrySerializer(serializers.Serializer):
    path = serializers.CharField(max_length=500)
    access_level = serializers.ChoiceField(choices=LEVEL_NAMES)
    groups = serializers.ListField(child=serializers.CharField(max_length=63), max_length=100, required=False)


class CredentialsSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=500, required=False, allow_blank=True)
    password = serializers.CharField(max_length=4000, required=False, allow_blank=True)
    # ssh:// or user@host:path: a private key (OpenSSH or PEM, unencrypted) and the server's known_hosts lines.
    private_key = serializers.CharField(max_length=20_000, required=False, allow_blank=True, trim_whitespace=False)
    known_hosts = serializers.CharField(max_length=20_000, required=False, allow_blank=True)


class OptionsSerializer(serializers.Serializer):
    prefix = serializers.URLField(max_length=2000, required=False)
    rate_per_second = serializers.FloatField(min_value=0.01, max_value=50, required=False)
    max_pages = serializers.IntegerField(min_value=1, max_value=100_000, required=False)


class SourceInputSerializer(serializers.Serializer):
    """Create (``kind`` and ``name`` needed) or change (any field) a source; unknown fields are refused."""

    kind = serializers.ChoiceField(choices=Source.Kind.values, required=False)
    name = serializers.CharField(max_length=200, required=False)
    url = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    path = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    branch = serializers.CharField(max_length=200, required=False, allow_blank=True)
    include = serializers.ListField(child=serializers.CharField(max_length=500), max_length=200, required=False)
    exclude = serializers.ListField(child=serializers.CharField(max_length=500), max_length=200, required=False)
    access_level = serializers.ChoiceField(choices=LEVEL_NAMES, required=False)
    groups = serializers.ListField(child=serializers.CharField(max_length=63), max_length=100, required=False)
    access_map = AccessMapEntrySerializer(many=True, required=False)
    options = OptionsSerializer(required=False)
    credentials = CredentialsSerializer(required=False, write_only=True)
    schedule_minutes = serializers.IntegerField(min_value=5, max_value=525_600, required=False, allow_null=True)

    def validate(self, attrs):
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError({sorted(unknown)[0]: "unknown field"})
        return attrs


# Rows of a source's items: {"path", "error"} (errors) or {"path", "reason"} (skips), ...
ROWS = serializers.ListField(child=serializers.DictField())


class SyncOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.SerializerMethodField()
    stage = serializers.SerializerMethodField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    listed = serializers.IntegerField()
    added = serializers.IntegerField()
    changed = serializers.IntegerField()
    renamed = serializers.IntegerField()
    deleted = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    skipped = serializers.IntegerField()
    failed = serializers.SerializerMethodField()
    # The sync's own error (a failed listing's) as the caller may read it: without the subfolder or page it names
    # unless they may read that path (``sources.selectors.sync_rows_shown``; then counted in ``errors_hidden``).
    error = serializers.SerializerMethodField()
    # The items the caller may see (``sources.selectors.sync_rows_shown``: context ``member``); the others counted.
    errors = serializers.SerializerMethodField()
    skips = serializers.SerializerMethodField()
    errors_hidden = serializers.SerializerMethodField()
    skips_hidden = serializers.SerializerMethodField()
    revision = serializers.CharField()
    timings = serializers.JSONField()
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    def _state(self, sync) -> dict:
        cache = self.context.setdefault("_states", {})
        if sync.pk not in cache:
            cache[sync.pk] = selectors.sync_state(sync)
        return cache[sync.pk]

    def _rows(self, sync) -> dict:
        """The rows the caller may see: the context's ``_rows`` (a page's, by ``selectors.syncs_rows_shown``) or
        read here, with the caller's viewer read once per answer (``_viewer``)."""
        cache = self.context.setdefault("_rows", {})
        if sync.pk not in cache:
            if "_viewer" not in self.context:
                self.context["_viewer"] = selectors.viewer_of(self.context.get("member"))
            cache[sync.pk] = selectors.sync_rows_shown(member=self.context.get("member"), sync=sync,
                                                       viewer=self.context["_viewer"])
        return cache[sync.pk]

    def get_error(self, sync) -> str:
        return self._rows(sync)["error"]

    @extend_schema_field(ROWS)
    def get_errors(self, sync) -> list[dict]:
        return self._rows(sync)["errors"]

    @extend_schema_field(ROWS)
    def get_skips(self, sync) -> list[dict]:
        return self._rows(sync)["skips"]

    def get_errors_hidden(self, sync) -> int:
        return self._rows(sync)["errors_hidden"]

    def get_skips_hidden(self, sync) -> int:
        return self._rows(sync)["skips_hidden"]

    def get_status(self, sync) -> str:
        return self._state(sync)["status"]

    def get_stage(self, sync) -> str:
        return self._state(sync)["stage"]

    def get_failed(self, sync) -> int:
        return self._state(sync)["failed"]


class SourceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    url = serializers.CharField()
    path = serializers.CharField()
    branch = serializers.CharField()
    include = serializers.ListField(child=serializers.CharField())
    exclude = serializers.ListField(child=serializers.CharField())
    access_level = serializers.SerializerMethodField()
    groups = serializers.SerializerMethodField()
    access_map = serializers.SerializerMethodField()
    options = serializers.JSONField()
    has_credentials = serializers.SerializerMethodField()
    schedule_minutes = serializers.IntegerField(allow_null=True)
    documents = serializers.SerializerMethodField()
    last_sync = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_access_level(self, source) -> str:
        return AccessLevel(source.access_level).name.lower()

    # A list's page of sources is read whole first (context ``listed``: ``selectors.sources_listed``), so that each
    # source costs no query of its own; one source alone (created, changed, fetched) is read here.

    def _listed(self, source) -> selectors.SourcesListed | None:
        listed = self.context.get("listed")
        return listed if listed is not None and source.pk in listed.documents else None

    def get_groups(self, source) -> list[str]:
        from accounts.models import Group

        listed = self._listed(source)
        if listed is not None:
            return sorted(listed.slugs[g] for g in source.access_groups if g in listed.slugs)
        return sorted(Group.objects.filter(id__in=source.access_groups).values_list("slug", flat=True))

    def get_access_map(self, source) -> list[dict]:
        listed = self._listed(source)
        return access_map_names(source, listed.slugs if listed is not None else None)

    def get_has_credentials(self, source) -> bool:
        return bool(source.credentials)

    def get_documents(self, source) -> int:
        listed = self._listed(source)
        return listed.documents[source.pk] if listed is not None else selectors.source_document_count(source)

    def get_last_sync(self, source) -> dict | None:
        listed = self._listed(source)
        sync = listed.last.get(source.pk) if listed is not None else selectors.last_sync(source)
        return SyncOutputSerializer(sync, context=self.context).data if sync else None


class SyncStartedOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created = serializers.BooleanField()


class PreviewOutputSerializer(serializers.Serializer):
    error = serializers.CharField()
    # The items the caller may see (sources.selectors.preview_shown).
    items = serializers.JSONField(help_text=(
        "The items the caller may see, each {path, action, access_level, groups, reason, renamed_from, default_kept, "
        "source_access_level, source_groups}. access_level/groups: the document's default policy after the sync -- "
        "the source's policy for the path (source_access_level/source_groups), or, default_kept true, a default an "
        "admin set on the document that the sync keeps; an item whose admin default is wider than the source now "
        "gives the path is a fail (the sync's default_wider reason)."))
    counts = serializers.JSONField()  # of those items, by action
    hidden = serializers.IntegerField()  # items left out: the caller may not read them
    errors = serializers.JSONField()  # the listing's errors the caller may see
    errors_hidden = serializers.IntegerField()


class DetachedOutputSerializer(serializers.Serializer):
    """A path of the source an admin detached: every sync skips it until an admin re-attaches it."""

    id = serializers.IntegerField()
    path = serializers.CharField()
    document_id = serializers.CharField(allow_null=True, help_text="The detached document; null once it was deleted")
    detached_at = serializers.DateTimeField()


class DetachedListOutputSerializer(serializers.Serializer):
    """A page of the source's detached paths, newest first: of the page's tombstones, those you may read
    (``results``) and how many others (``hidden``)."""

    count = serializers.IntegerField(help_text="How many detached paths the source holds (shown or not)")
    next = serializers.URLField(allow_null=True, help_text="The next page; null on the last")
    previous = serializers.URLField(allow_null=True, help_text="The previous page; null on the first")
    results = DetachedOutputSerializer(many=True)
    hidden = serializers.IntegerField(help_text="Detached paths of this page left out: you may not read them")


class ReattachedOutputSerializer(serializers.Serializer):
    document_id = serializers.CharField(
        allow_null=True, help_text="The document the source takes back (the next sync brings it the source's content); "
                                   "null when it was deleted: the next sync adds the path as a new document")
