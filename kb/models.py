"""Documents, sections, chunks, index versions and ingestion jobs.

Every tenant-owned row carries ``tenant``. Sections and chunks carry the effective
access policy as ``access_level`` (rank) and ``access_groups`` (group ids), so the
permission filter runs inside SQL without joins (see ``accounts.access``). Levels and their
maximum (the check constraints) come from ``accounts.policy``.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from accounts.models import Tenant, User
from accounts.policy import LEVEL_CHOICES, MAX_LEVEL, AccessLevel
from ingestion.chunking.config import ADDED_OFF, valid_piece_weight

# Ids of sections, chunks and index versions derive from their content (uuid5 in this namespace).
ID_NAMESPACE = uuid.UUID("6f1c5a0e-7b9e-4c1f-9a47-0d2d3b7e5a11")
# Document.metadata / IngestionJob.stats key: the user who uploaded the bytes (see kb.selectors.error_in_full).
CONTENT_BY = "content_by"

# Document.metadata / Section.metadata key: the verdicts of the document's titles (the one typed at upload, the
# content's own) / of the section's heading, each screened on its own (``pipeline.screen``; a typed title also at
# upload, ``kb.services``), by digest and without their text: ``{"detector": ..., "titles": {digest: {"flagged":
# bool, "reasons": [...], "review": "" | "released" | "kept_out"}}}`` (``kb.screening.title_record``). Written
# by ingestion, the re-screen job and a review decision; read by the one rule for showing a title
# (``kb.screening.shown_title``: a held one is a placeholder wherever a title is shown). The document's ``detector``
# says what screened its titles, headings and heads (``pipeline.screen.SCREENED_BY``; ``""`` after a policy change):
# the re-screen job finds a document without chunks by it (``pipeline.rescreen.chunkless_stale_documents``).
TITLE_SCREENING = "title_screening"

# Section.metadata key: the verdict of the section's head -- the text from its start to its first text or subsection,
# when it is no heading line (``kb.screening.section_heads``: a front matter, a definition's decorators and signature,
# a caption file's header), which no chunk holds -- screened on its own at ingestion and by the re-screen job
# (``pipeline.screen.head_records``): ``{"detector": ..., "span": [start, end], "flagged": bool, "score": float,
# "reasons": [...]}``. An agent reads a head only when its record says clean for the span it has now, or flagged in
# a mode that shows flagged chunks (``kb.screening.held_heads``); none, or another span: cut (fail closed).
HEAD_SCREENING = "head_screening"

# Document.metadata key: the reviewers' decisions on the chunks a policy change deleted to rebuild them
# (``kb.services.apply_policies``), as ``[[text digest, flagging titles' digest, review, level, group ids], ...]``
# (``kb.services.text_digest``: their embedded text changes with the heading path): the rebuild
# (``pipeline.store.store_plan``) gives them to the same text under the same flagging titles, as it gives those
# of the chunks it replaces -- a release only to a chunk whose policy every reader of the decided one may read
# (its reviewer could) -- and drops them. Without it a keep-out was lost to any policy change that changed a
# heading path (found attacking the demo).
DECISIONS_KEPT = "review_decisions_kept"

EMBEDDING_DIMENSIONS = 384


class IndexVersion(models.Model):
    """One chunking + embedding configuration of one tenant; its id derives from the config hash."""

    class Status(models.TextChoices):
        EMPTY = "empty"
        BUILDING = "building"
        READY = "ready"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="index_versions")
    name = models.CharField(max_length=100, blank=True)
    config = models.JSONField()
    config_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.EMPTY)
    is_active = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "config_hash"], name="indexversion_unique_config"),
            models.UniqueConstraint(
                fields=["tenant"], condition=Q(is_active=True), name="indexversion_one_active_per_tenant"
            ),
            models.UniqueConstraint(fields=["id", "tenant"], name="indexversion_id_tenant"),
        ]

    @property
    def short_id(self) -> str:
        return self.config_hash[:12]

    @property
    def piece_weight(self) -> float:
        """The config's ``piece_weight`` (issue 30): > 0, its chunks store their pieces and its searches
        score candidates with them; 0 (every config stored before it existed), neither. Only this key is read (a
        search does not re-validate the whole config); a malformed weight is an error, never "off"."""
        return valid_piece_weight((self.config or {}).get("piece_weight", ADDED_OFF["piece_weight"]))

    def __str__(self) -> str:
        return f"{self.tenant.slug}:{self.short_id}{' (active)' if self.is_active else ''}"


class Document(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        PROCESSING = "processing"
        READY = "ready"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=500)
    source = models.CharField(max_length=1000, blank=True, default="")
    content_type = models.CharField(max_length=100)
    raw = models.BinaryField()  # the original bytes; chunks are derived and can be rebuilt
    text = models.TextField(blank=True, default="")  # the document text that spans point into
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField(default=0)
    # What every reader is shown: a title the uploader typed, else "untitled"; the tags the uploader typed. A title and
    # tags from the content are each reader's (``kb.titles.reader_title``, ``reader_tags``): ``content_title`` to a
    # member who may read the section bearing it (``title_section``: its heading's, or the root for a title no heading
    # bears), ``content_tags`` (a front matter's) to one who may read the root. A surface that forgets the reader
    # shows "untitled" and the typed tags (fail closed). docs/security.md, "A title taken from a heading".
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    content_title = models.CharField(max_length=500, blank=True, default="")
    title_section = models.UUIDField(null=True, blank=True)
    content_tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES, default=AccessLevel.INTERNAL)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # Every write moves it, one to a section a reader may not read too: never shown to a member nor filtered on for
    # one (operators' Django admin only). What a member is shown: ``kb.changed.updated_at_shown``.
    updated_at = models.DateTimeField(auto_now=True)
    # The last change of what every reader of the document is shown of it: its title, source, tags, content type
    # and default policy (``kb.changed.shown_fields``). Part of every reader's time (``kb.changed``).
    shown_changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "status"]),
            models.Index(fields=["tenant", "source"]),
            GinIndex(fields=["tags"], name="document_tags_gin"),
            GinIndex(fields=["content_tags"], name="document_content_tags_gin"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["id", "tenant"], name="document_id_tenant"),  # target of composite FKs
            models.CheckConstraint(condition=Q(access_level__lte=MAX_LEVEL), name="document_level_known"),
        ]

    def __str__(self) -> str:
        return self.title


class Section(models.Model):
    """A unit of structure with one effective access policy.

    ``body_spans`` are the section's own text ranges (``[[start, end], ...]``); the
    section's full extent (with heading and descendants) is ``[start, end)``.
    ``own_level``/``own_groups`` hold the section's own policy (marker or override);
    null means inherited.
    """

    id = models.UUIDField(primary_key=True, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="sections")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    key = models.CharField(max_length=64)
    order = models.PositiveIntegerField()
    depth = models.PositiveSmallIntegerField(default=0)
    title = models.CharField(max_length=1000, blank=True, default="")
    # The document's title this section bears ("" none): a front matter's on the root, an H1's on its own section. A
    # member is shown the first, in document order, of a section they may read (``kb.titles.reader_title``).
    title_candidate = models.CharField(max_length=500, blank=True, default="")
    heading_path = ArrayField(models.TextField(), default=list, blank=True)
    kind = models.CharField(max_length=32, default="prose")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    body_spans = models.JSONField(default=list, blank=True)
    own_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES, null=True, blank=True)
    own_groups = ArrayField(models.BigIntegerField(), null=True, blank=True)
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Text of this section a reader of the rendered document does not see, cut out of the document
    # text before chunking (the raw bytes keep it): its non-whitespace characters. Shown only to
    # those who may read the section (docs/security.md, "Hidden text").
    hidden_chars_removed = models.PositiveIntegerField(default=0)
    # Text kept although a reader may not see it as text, and why (a PDF's OCR layer).
    hidden_text_flags = ArrayField(models.TextField(), default=list, blank=True)
    # The last change of what the section's readers read of it -- its title, kind, own text, policies, stored
    # heading path, hidden-text counts -- carried over by new content that leaves all of it as it was
    # (``kb.changed.sections_carry``). The time a reader is shown of a document counts only those they may read.
    changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["document", "order"]
        indexes = [
            models.Index(fields=["document", "order"]),
            # The review queue's flagged heads (``kb.screening._flagged_head_sections``), counted and paged in
            # document order: few sections of a tenant, all found without reading the others.
            models.Index(fields=["tenant", "document", "start"], condition=Q(**{f"metadata__{HEAD_SCREENING}__flagged": True}),
                         name="section_flagged_head_idx"),
            # A reader's title (``kb.titles``: the first title candidate, in document order, of a section they may
            # read) and whether they may read the root (a front matter's tags), asked once per document by a sort
            # or a filter of titles or tags: each probe reads its document's one or few rows here, not its every
            # section (eighteenth session, docs/benchmarks.md).
            models.Index(fields=["document", "order"], condition=~Q(title_candidate=""),
                         name="section_title_candidate_idx"),
            models.Index(fields=["document"], condition=Q(parent__isnull=True), name="section_root_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["document", "key"], name="section_unique_key"),
            models.UniqueConstraint(fields=["id", "tenant"], name="section_id_tenant"),
            models.CheckConstraint(condition=Q(start__lte=F("end")), name="section_span_ordered"),
            models.CheckConstraint(condition=Q(access_level__lte=MAX_LEVEL), name="section_level_known"),
        ]

    def __str__(self) -> str:
        return " > ".join(self.heading_path) or f"section {self.key}"


class SectionGone(models.Model):
    """Content under one policy that went away from a document at ``gone_at``: a section new content has no
    longer (or has changed), or a section's policy changed off this one. Its readers -- the readers of that
    policy -- saw it go, and their time of the document counts it (``kb.changed``); no one else's does. One row
    per document and policy, the latest; no title, no text, no section id."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="+")
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)  # sorted
    gone_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["document", "access_level", "access_groups"],
                                    name="sectiongone_unique_policy"),
            models.CheckConstraint(condition=Q(access_level__lte=MAX_LEVEL), name="sectiongone_level_known"),
        ]


class ChunkReview(models.TextChoices):
    NONE = "", "not reviewed"
    RELEASED = "released"
    KEPT_OUT = "kept_out"


class ScreeningMode(models.TextChoices):
    """What search does with a flagged chunk (docs/screening.md, "Quarantine and review")."""

    OFF = "off"  # returned, without its flags
    FLAG = "flag"  # returned, with its flags
    QUARANTINE = "quarantine"  # kept out of search and of every context until a reviewer releases it


DEFAULT_SCREENING_MODE = ScreeningMode.QUARANTINE  # fail closed: docs/security.md, "Planted instructions"


class ScreeningSettings(models.Model):
    """A tenant's screening mode (admins; audited as ``screening.settings``). No row: the default."""

    tenant = models.OneToOneField(Tenant, primary_key=True, on_delete=models.CASCADE, related_name="+")
    mode = models.CharField(max_length=16, choices=ScreeningMode.choices, default=DEFAULT_SCREENING_MODE)
    updated_at = models.DateTimeField(auto_now=True)


class Chunk(models.Model):
    """A small, embedded piece of one section, produced by one index version."""

    id = models.UUIDField(primary_key=True, editable=False)  # deterministic (uuid5)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    section = models.ForeignKey(Section, on_delete=models.CASCADE, related_name="chunks")
    index_version = models.ForeignKey(IndexVersion, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()  # document.text[start:end]
    embed_text = models.TextField()  # heading path + body: what the model saw
    token_count = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # The screening verdict, made once at ingestion (``ingestion.screening``; re-made by
    # ``pipeline.screening.rescreen`` when the detector's version changes, never per query):
    # ``Screening.as_dict()`` -- flagged, score, reasons, detector, spans (offsets into ``text``).
    screening = models.JSONField(default=dict, blank=True)
    screening_flagged = models.BooleanField(default=False)  # = screening["flagged"], for the SQL filters
    screening_detector = models.CharField(max_length=64, blank=True, default="")  # = screening["detector"]
    # A reviewer's decision on a flagged chunk (docs/screening.md, "Quarantine and review"): none yet
    # (held in quarantine mode), released (returned like any chunk), kept out (never returned).
    review = models.CharField(max_length=16, choices=ChunkReview.choices, blank=True, default=ChunkReview.NONE)
    # The chunk's pieces (issue 30): its sentences' and lines' vectors, pooled from the chunk's own forward pass
    # (``ingestion.pieces``), as n x 384 little-endian float16 (``pack_pieces``). Written only for an index
    # version whose config has ``piece_weight`` > 0 (null otherwise); read by search for its candidates only.
    pieces = models.BinaryField(null=True, blank=True, editable=False)
    search_vector = models.GeneratedField(
        expression=SearchVector("embed_text", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=200,  # 64 lost recall (docs/benchmarks.md, "Tuning history")
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
            GinIndex(fields=["access_groups"], name="chunk_access_groups_gin"),
            models.Index(fields=["tenant", "index_version", "access_level"], name="chunk_access_idx"),
            models.Index(fields=["document", "index_version", "ordinal"], name="chunk_document_idx"),
            models.Index(fields=["section"], name="chunk_section_idx"),
            models.Index(fields=["tenant", "screening_detector"], name="chunk_screening_detector_idx"),
            models.Index(
                fields=["tenant", "index_version"], condition=Q(screening_flagged=True), name="chunk_flagged_idx"
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="chunk_span_nonempty_ordered"),
            models.CheckConstraint(condition=Q(access_level__lte=MAX_LEVEL), name="chunk_level_known"),
            models.UniqueConstraint(fields=["document", "index_version", "ordinal"], name="chunk_unique_ordinal"),
        ]


class EmbeddingCacheEntry(models.Model):
    """Content-hash embedding cache: (tenant, policy, model, hash of the embedded text) -> vector.

    Scoped by tenant and by the effective policy of the section the text was embedded for: a
    cache hit makes a job faster and shows in its stats, so it must never tell one tenant what
    another holds, nor a member what text exists above their access (see
    ``pipeline.embed.EmbeddingCache.may_use``).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    model = models.CharField(max_length=200)
    content_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    # The text's pieces, as ``Chunk.pieces`` stores them; null when it was embedded for a version without them
    # (a version with pieces then embeds it again, and the store step adds them here).
    pieces = models.BinaryField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "model", "content_hash", "access_level", "access_groups"],
                name="embeddingcache_unique_scope",
            ),
            models.CheckConstraint(condition=Q(access_level__lte=MAX_LEVEL), name="embeddingcache_level_known"),
        ]


class JobCause(models.TextChoices):
    """What started the job (every creator names it: ``kb.jobs.job_create`` asks for it, and the table refuses a
    job without one). A re-derivation after a policy change is a ``document`` job like an upload's; what tells it
    apart -- its creator did not ask for it, so they are shown it as anyone else is (``kb.selectors.jobs_shown``)
    -- is its cause. A retry is its retrier's, whatever it retries (``stats["rederive"]`` says the pipeline
    rebuilds stored sections, for a re-derivation and a retry of one alike)."""

    UPLOAD = "upload"  # a member's (or an internal caller's) upload or replacement, alone or in a batch
    SOURCE_SYNC = "source_sync"  # a source's sync storing new or changed bytes
    POLICY_CHANGE = "policy_change"  # re-deriving a document's chunks after a section's policy changed
    RETRY = "retry"  # a member running a failed document job again
    INDEX_BUILD = "index_build"  # building an index version: the build's job and its children


class IngestionJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    class Kind(models.TextChoices):
        """What the job does: ingest one document, group a batch of them, build an index version."""

        DOCUMENT = "document"
        BATCH = "batch"
        REINDEX = "reindex"

    Cause = JobCause

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="ingestion_jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.DOCUMENT)
    # Jobs made directly (fixtures, benches) are uploads; every creator in the code names its cause (``job_create``).
    cause = models.CharField(max_length=16, choices=Cause.choices, default=Cause.UPLOAD)
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
    batch = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    index_version = models.ForeignKey(IndexVersion, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=32, blank=True, default="queued")
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    stats = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "heartbeat_at"]), models.Index(fields=["tenant", "created_at"])]
        constraints = [models.CheckConstraint(condition=Q(done__lte=F("total")), name="job_progress_sane"),
                       models.CheckConstraint(condition=Q(cause__in=JobCause.values), name="job_cause_named")]
