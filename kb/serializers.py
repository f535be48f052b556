"""Input and output serializers of the documents, sections, jobs and search API.

Inputs validate shapes only; the rules live in ``kb.permissions``, ``kb.selectors`` and
``kb.services``. Policies are shown by name: access levels as ``"internal"``, groups
as slugs (the output serializers take an id -> slug map as ``context["group_slugs"]``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from accounts.api_fields import LimitedCharField, QueryParametersSerializer
from accounts.policy import AccessLevel
from accounts.serializers import LEVEL_NAMES, slug_list
from kb import search_modes
from kb.models import Document, IngestionJob
from kb.titles import shown_source_of, shown_tags_of, shown_title_of, title_flagged_of

DOCUMENT_STATUSES = list(Document.Status.values)
JOB_STATUSES = list(IngestionJob.Status.values)
# The choices kb.search accepts, from where they are declared (kb.search_modes: no engine imported).
SEARCH_MODES = list(search_modes.MODES)
SEARCH_EXPANDS = list(search_modes.EXPANDS)
SEARCH_EXPAND_LEVELS = list(search_modes.EXPAND_LEVELS)
MAX_TOP_K = search_modes.MAX_TOP_K
MAX_QUERY_CHARS = search_modes.MAX_QUERY_CHARS


# ----------------------------------------------------------------------------- ingestion errors

# Messages that end in an exception's own text or in names taken from the document: only the
# part before it is kept.
_ERROR_DETAILS = [
    (re.compile(r"\b(malformed CSV|not a readable DOCX file|invalid HTML|invalid front matter): .*", re.S), r"\1"),
    (re.compile(r"\b(HTML nested too deeply \(more than about \d+ levels\)): .*", re.S), r"\1"),
    (re.compile(r"\b(unreadable e-mail message) \(.*", re.S), r"\1"),
    (re.compile(r"\b(this PDF is corrupt[^(]*?) \(.*", re.S), r"\1"),
    (re.compile(r"\bunknown (groups?) .*?( \(line \d+\))?$", re.S), r"unknown \1\2"),
]
# A quoted piece (Python's repr: '...' or "...", with backslash escapes); an apostrophe inside a
# word (the document's) does not open one.
_QUOTED = re.compile(r"(?<!\w)'(?:[^'\\\n]|\\.)*'" + r'|"(?:[^"\\\n]|\\.)*"')
_STRAY_QUOTE = re.compile(r"'…'|(?P<stray>(?<!\w)'|\")")


def safe_error(message: str) -> str:
    """An ingestion error without any document text: the line number and the kind of problem.

    Parse errors quote what they stumbled on (a heading, a marker, a cue line) with ``repr``;
    each quoted piece becomes ``'…'``; a trailing exception text or list of names from the
    document is dropped; anything after a stray quote is cut. The full message is for the
    job's creator and the tenant's admins (:func:`error_for`).
    """
    for pattern, keep in _ERROR_DETAILS:
        message = pattern.sub(keep, message)
    message = _QUOTED.sub("'…'", message)
    for match in _STRAY_QUOTE.finditer(message):
        if match.group("stray"):
            return message[: match.start()] + "…"
    return message


# A number of an error: digits, with their thousands separators and decimals ("100,000", "1.5").
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def error_for(obj, full: bool, *, numbers: bool, error: str | None = None) -> str:
    """``obj.error`` as one caller may see it: in full, or through :func:`safe_error` -- for everyone when the
    screening detector flags the full message. An error quotes document text (a marker, a heading, a cue line),
    and it reaches a reader's model through MCP's ``list_documents`` and the API: a planted instruction in a
    marker came back whole, unscreened, in the error its uploader's and every admin's agent read (found attacking
    the demo). Held as a planted title is: the line and the kind of problem are left.

    ``numbers``: whether the caller may see the numbers of the document it failed on -- a line number, a count
    of sections or chunks are its size (``error_numbers_shown`` of ``kb.selectors.jobs_shown``; always for a
    document's own error, shown only to those who see the document). Without, each number reads ``…``.
    ``error``: the error in ``obj.error``'s place (a document's as the caller may know it, ``error_shown``)."""
    error = obj.error if error is None else error
    if not error:
        return error
    shown = error if full and not _error_flagged(obj.tenant_id, error) else safe_error(error)
    return shown if numbers else _NUMBER.sub("…", shown)


@lru_cache(maxsize=1024)
def _error_flagged(tenant_id: int, message: str) -> bool:
    """Cached per tenant: a cache shared by every tenant would answer one tenant's request faster when another
    tenant's error held the same text (a timing oracle on another tenant's document text, however faint)."""
    from ingestion.screening import screen_chunks

    return screen_chunks([message])[0].flagged


def _slugs(serializer: serializers.Serializer, group_ids) -> list[str]:
    names = serializer.context.get("group_slugs", {})
    return sorted(names.get(g, str(g)) for g in group_ids)


# ----------------------------------------------------------------------------- screening

REVIEW_STATES = ["", "released", "kept_out"]


# A document may hold up to 100,000 sections: the whole readable tree of one was 32 MB and 11 s of a web thread
# (found attacking the demo). Past this many, the tree is asked for a page at a time.
SECTIONS_PAGE_MAX = 10_000


class SectionPageSerializer(QueryParametersSerializer):
    """``?offset=&limit=`` of ``GET /api/v1/documents/{id}/sections/``: a slice of the readable tree in document
    order. Without ``limit`` the whole tree, if it holds at most ``SECTIONS_PAGE_MAX`` sections."""

    offset = serializers.IntegerField(min_value=0, max_value=10_000_000, default=0)
    limit = serializers.IntegerField(min_value=1, max_value=SECTIONS_PAGE_MAX, required=False)


class ScreeningVerdictSerializer(serializers.Serializer):
    flagged = serializers.BooleanField()
    score = serializers.FloatField(help_text="0 to 1.")
    reasons = serializers.ListField(child=serializers.CharField(), help_text="The families that flagged it.")
    detector = serializers.CharField(allow_blank=True, help_text="The detector version that made the verdict.")
    spans = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2),
        help_text="[start, end) character offsets of the triggering parts, into the chunk's text "
                  "(into the document's text in a context's list).",
    )
    review = serializers.ChoiceField(choices=REVIEW_STATES, help_text="A reviewer's decision: none yet, released, kept_out.")


class ContextFlaggedChunkSerializer(ScreeningVerdictSerializer):
    chunk_id = serializers.UUIDField()


class ContextScreeningSerializer(serializers.Serializer):
    flagged = serializers.BooleanField(help_text="A flagged chunk (flag mode, or released) is part of this context.")
    reasons = serializers.ListField(child=serializers.CharField())
    chunks = ContextFlaggedChunkSerializer(many=True)


class SpotlightSerializer(serializers.Serializer):
    boundary = serializers.CharField(help_text="Random for this response; it marks every wrapped context.")
    system_prompt = serializers.CharField(help_text="Give this to the model: the wrapped text is data, never instructions.")


class ScreeningSummarySerializer(serializers.Serializer):
    flagged = serializers.IntegerField(help_text="Flagged chunks in sections you may read (active version).")
    held = serializers.IntegerField(help_text="Of those, held for review: kept out of search and contexts now.")
    reasons = serializers.ListField(child=serializers.CharField())


class ScreeningSettingsSerializer(serializers.Serializer):
    screening = serializers.ChoiceField(
        choices=["off", "flag", "quarantine"],
        help_text="off: flagged chunks are returned without flags; flag: returned with their flags; quarantine "
                  "(the default): kept out of search and of every context until a reviewer releases them.",
    )


class ReviewItemSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["chunk", "head"], help_text="chunk: a flagged chunk (decide at /review/{chunk_id}/); head: a section's "
                                             "flagged head -- a front matter, a definition's decorators and signature, "
                                             "in no chunk -- (decide at /review/heads/{section_id}/).")
    chunk_id = serializers.UUIDField(allow_null=True, help_text="None for a head.")
    document_id = serializers.UUIDField()
    document_title = serializers.CharField(allow_blank=True)
    document_source = serializers.CharField(
        allow_blank=True, help_text="As stored: a source held for review flags every chunk of its document, and a "
                                    "decision on one of them is one on the source too.")
    document_tags = serializers.ListField(
        child=serializers.CharField(), help_text="As stored: held tags flag every chunk of their document, and a "
                                                 "decision on one of them is one on the tags too.")
    section_id = serializers.UUIDField()
    heading_path = serializers.ListField(child=serializers.CharField(allow_blank=True))
    text = serializers.CharField(allow_blank=True, help_text="The flagged chunk's text (screening.spans point into it), "
                                                             "or the section's head.")
    screening = ScreeningVerdictSerializer()
    review = serializers.ChoiceField(choices=REVIEW_STATES)
    held = serializers.BooleanField(help_text="Kept out of search and contexts now.")


class ReviewQueueFilterSerializer(QueryParametersSerializer):
    extra_parameters = ("limit", "offset")  # the page (kb.apis.ReviewQueueApi)

    state = serializers.ChoiceField(choices=["pending", "decided", "all"], default="pending", required=False)

    def validate(self, attrs):
        # A query parameter sent empty (``?state=``) is an error, not the default (DRF would drop it).
        if "state" in self.initial_data and self.initial_data.get("state") not in ("pending", "decided", "all"):
            raise serializers.ValidationError({"state": ["state must be pending, decided or all."]})
        return attrs


class ReviewDecisionInputSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(
        choices=["release", "keep_out", "delete_document"],
        help_text="release: returned by search again; keep_out: never returned; delete_document: the whole document.",
    )


class _PolicyOutputMixin(serializers.Serializer):
    access_level = serializers.SerializerMethodField()
    groups = serializers.SerializerMethodField()

    @extend_schema_field(serializers.ChoiceField(choices=LEVEL_NAMES))
    def get_access_level(self, obj) -> str:
        return AccessLevel(obj.access_level).label

    def get_groups(self, obj) -> list[str]:
        return _slugs(self, obj.access_groups)


# ----------------------------------------------------------------------------- documents


class _DocumentFieldsInputSerializer(serializers.Serializer):
    content_type = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default="",
        help_text="e.g. text/markdown; detected from source/filename and the bytes when omitted.",
    )
    source = LimitedCharField(max_length=1000, required=False, allow_blank=True, default="")
    tags = serializers.ListField(
        child=LimitedCharField(max_length=100), max_length=100, required=False, default=list,
        help_text="Labels. A replace without tags keeps the document's, with their verdict (held ones stay held).",
    )
    access_level = serializers.ChoiceField(
        choices=LEVEL_NAMES, default="internal",
        help_text="The document's default policy; at most your clearance (admins: any).",
    )
    groups = slug_list(required=False, default=list, help_text="Group slugs; only groups you are in (admins: any).")


class DocumentJsonInputSerializer(_DocumentFieldsInputSerializer):
    title = LimitedCharField(max_length=500)
    content = serializers.CharField(trim_whitespace=False, help_text="The document text (UTF-8).")


class DocumentMultipartInputSerializer(_DocumentFieldsInputSerializer):
    file = serializers.FileField(allow_empty_file=False, use_url=False)
    title = LimitedCharField(max_length=500, required=False, allow_blank=True, default="",
                                  help_text="Default: the file's name.")


class DocumentFilterSerializer(QueryParametersSerializer):
    """Query filters; an empty value (``?tag=``) means no filter, as if the parameter were absent."""

    extra_parameters = ("limit", "offset")  # the list's pagination

    status = serializers.ChoiceField(choices=DOCUMENT_STATUSES, required=False, allow_blank=True)
    tag = LimitedCharField(max_length=100, required=False, allow_blank=True)
    content_type = LimitedCharField(max_length=100, required=False, allow_blank=True)
    source = LimitedCharField(max_length=1000, required=False, allow_blank=True,
                              help_text='Exact match, of the source as shown: a held one matches only "(title held for review)".')


class JobSummarySerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=JOB_STATUSES)


class DocumentAcceptedOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=DOCUMENT_STATUSES)
    job = JobSummarySerializer()


class DocumentOutputSerializer(_PolicyOutputMixin):
    """``context["screening_mode"]``: the tenant's (read when not given and a title's record needs it)."""

    id = serializers.UUIDField()
    title = serializers.SerializerMethodField(
        help_text='A title screening holds for review (quarantine mode) reads "(title held for review)".'
    )
    title_flagged = serializers.SerializerMethodField(
        help_text="Screening flagged the title as a possible planted instruction (always false in off mode)."
    )
    source = serializers.SerializerMethodField(
        help_text='A source that is the document\'s held title (a file uploaded untitled) reads "(title held for review)".'
    )
    content_type = serializers.CharField()
    # Read from the selectors' annotation, never the column: a document read otherwise fails here (fail closed).
    status = serializers.ChoiceField(
        choices=DOCUMENT_STATUSES, source="status_shown",
        help_text="As you may know it: a re-derivation of its chunks after a policy change (a job you may not see "
                  "unless you read the document whole) leaves it as the document's other jobs left it.",
    )
    error = serializers.SerializerMethodField(
        help_text="Why ingestion failed. Quoted document text is shown only to the uploader and admins."
    )
    tags = serializers.SerializerMethodField(
        help_text='Tags screening holds for review (quarantine mode; a tag list stored with screening off or before '
                  'tags were screened, judged by the re-screen job) read ["(tags held for review)"].'
    )
    sections_count = serializers.IntegerField(help_text="Sections you may read.")
    chunks_count = serializers.IntegerField(help_text="Chunks you may read, in the active index version.")
    created_at = serializers.DateTimeField()
    # Read from the selectors' annotation, never the column: a document read otherwise fails here (fail closed).
    updated_at = serializers.DateTimeField(
        source="updated_at_shown",
        help_text="The latest change of what you can read: the document's title, source, tags, content type or "
                  "default policy, or a section you may read (its text, title or policy; one leaving your access, "
                  "or content under a policy you may read going away). A change to a section you cannot read "
                  "does not move it. The search filters updated_after / updated_before read this time.",
    )
    screening = serializers.SerializerMethodField(
        help_text="One document only (null in lists): flagged and held chunks in sections you may read, and why."
    )

    @extend_schema_field(ScreeningSummarySerializer(allow_null=True))
    def get_screening(self, obj):
        summary = self.context.get("screening", {}).get(obj.pk)
        return None if summary is None else summary.as_dict()

    def get_title(self, obj) -> str:
        return shown_title_of(obj, self.context.get("screening_mode"))

    def get_source(self, obj) -> str:
        return shown_source_of(obj, self.context.get("screening_mode"))

    def get_tags(self, obj) -> list[str]:
        return shown_tags_of(obj, self.context.get("screening_mode"))

    def get_title_flagged(self, obj) -> bool:
        return title_flagged_of(obj, self.context.get("screening_mode"))

    def get_error(self, obj) -> str:
        """``context["full_errors"]``: ids of the documents whose full error this caller may see."""
        return error_for(obj, obj.pk in self.context.get("full_errors", ()), numbers=True,  # a document it sees
                         error=obj.error_shown)


# ----------------------------------------------------------------------------- sections


class SectionOutputSerializer(_PolicyOutputMixin):
    id = serializers.UUIDField()
    document_id = serializers.UUIDField()
    parent_id = serializers.UUIDField(allow_null=True, help_text="The nearest ancestor you may read, or null.")
    heading_path = serializers.ListField(child=serializers.CharField(allow_blank=True))
    level = serializers.IntegerField(help_text="Depth in the tree of sections you may read (0 = top).")
    kind = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    hidden_chars_removed = serializers.IntegerField(
        help_text="Characters of this section's text that a reader of the rendered document does not see "
                  "(hidden HTML, a hidden Word run, invisible PDF text, invisible characters): cut out of the "
                  "text at ingestion, so never embedded, indexed or returned. The uploaded file keeps them."
    )
    hidden_text_flags = serializers.ListField(
        child=serializers.CharField(),
        help_text="Text of this section kept although a reader may not see it as text, and why "
                  "(e.g. a scanned PDF page's invisible OCR layer).",
    )
    heading_path_flagged = serializers.BooleanField(
        help_text="Screening flagged a title of the heading path (always false in off mode); a held one reads "
                  '"(title held for review)".'
    )
    screening = serializers.SerializerMethodField(
        help_text="Flagged chunks of this section (active version) and held ones, and why; null: none flagged."
    )

    @extend_schema_field(ScreeningSummarySerializer(allow_null=True))
    def get_screening(self, obj):
        summary = self.context.get("screening", {}).get(obj.id)
        return None if summary is None else summary.as_dict()


class SectionAccessInputSerializer(serializers.Serializer):
    access_level = serializers.ChoiceField(choices=LEVEL_NAMES, required=False)
    groups = slug_list(required=False, help_text="Replaces the section's groups; [] for none.")
    inherit = serializers.BooleanField(
        required=False, default=False, help_text="Drop the section's own policy and inherit its parent's again."
    )

    def validate(self, attrs):
        if attrs.get("inherit") and ("access_level" in attrs or "groups" in attrs):
            raise serializers.ValidationError("inherit cannot be combined with access_level or groups.")
        if not attrs.get("inherit") and "access_level" not in attrs and "groups" not in attrs:
            raise serializers.ValidationError("Give access_level, groups, or inherit: true.")
        return attrs


# ----------------------------------------------------------------------------- jobs


class JobProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()


def progress_shown(job) -> bool:
    """Whether the caller may see ``job``'s progress: ``progress_shown`` as ``kb.selectors.jobs_shown`` annotates it
    (a job read otherwise shows none)."""
    return bool(getattr(job, "progress_shown", False))


def error_numbers_shown(job) -> bool:
    """Whether the caller may see the numbers of ``job``'s error: ``error_numbers_shown`` of
    ``kb.selectors.jobs_shown`` (a job read otherwise shows none)."""
    return bool(getattr(job, "error_numbers_shown", False))


class JobOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=IngestionJob.Kind.values)
    document_id = serializers.UUIDField(allow_null=True)
    status = serializers.ChoiceField(choices=JOB_STATUSES)
    stage = serializers.CharField()
    progress = serializers.SerializerMethodField(
        help_text="Null for a document you can see no part of and did not upload, or not ready with its sections (being ingested): its "
        "total of chunks is its size. Unless you are an admin, also null for one you do not read whole (and did not upload)."
    )
    error = serializers.SerializerMethodField(
        help_text="Why the job failed. Quoted document text is shown only to the uploader of the bytes and admins "
        "who may read every section; its numbers (a line, a count) only where you see its document or uploaded it."
    )
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    screening = serializers.SerializerMethodField(
        help_text="The job's document: flagged and held chunks in sections you may read, and why (null: none)."
    )

    @extend_schema_field(ScreeningSummarySerializer(allow_null=True))
    def get_screening(self, obj):
        summary = self.context.get("screening")
        return None if summary is None else summary.as_dict()

    def get_error(self, obj) -> str:
        """``context["full_error"]``: whether this caller may see the full message (else redacted)."""
        return error_for(obj, bool(self.context.get("full_error")), numbers=error_numbers_shown(obj))

    @extend_schema_field(JobProgressSerializer(allow_null=True))
    def get_progress(self, obj):
        """``obj`` read through ``kb.selectors.job_get``: its ``progress_shown`` (else no progress)."""
        if not progress_shown(obj):
            return None
        return JobProgressSerializer({"done": obj.done, "total": obj.total}).data


# ----------------------------------------------------------------------------- search


class SearchFiltersInputSerializer(serializers.Serializer):
    document_ids = serializers.ListField(child=serializers.UUIDField(), max_length=1000, required=False, default=list)
    tags = serializers.ListField(
        child=LimitedCharField(max_length=100), max_length=100, required=False, default=list
    )
    content_types = serializers.ListField(
        child=LimitedCharField(max_length=100), max_length=100, required=False, default=list
    )
    source_prefix = LimitedCharField(
        max_length=1000, required=False, allow_blank=True, default="",
        help_text='Of the source as shown: a held one starts only as "(title held for review)".')
    updated_after = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="Documents whose updated_at as you are shown it (the latest change of what you can read) is at or "
                  "after this time.")
    updated_before = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="Documents whose updated_at as you are shown it is before this time.")

    def to_internal_value(self, data):
        """An unknown filter is refused, naming it: ignored, a misspelt one (``document_idz``) would
        silently search everything the member may read instead of what was asked (found attacking the demo)."""
        unknown = sorted(set(data) - set(self.fields)) if isinstance(data, dict) else []
        if unknown:
            raise serializers.ValidationError({unknown[0]: [f"unknown filter; known: {', '.join(self.fields)}"]})
        return super().to_internal_value(data)


class NullableBooleanField(serializers.BooleanField):
    """A boolean whose null is JSON's ``null`` (or the field left out) alone: DRF's nullable BooleanField also reads
    ``""`` and ``"null"`` as null, so a stray string would silently mean "the server's default"."""

    NULL_VALUES = {None}


class SearchInputSerializer(serializers.Serializer):
    query = LimitedCharField(max_length=MAX_QUERY_CHARS)
    top_k = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, default=5)
    mode = serializers.ChoiceField(choices=SEARCH_MODES, default=search_modes.DEFAULT_MODE)
    expand = serializers.ChoiceField(
        choices=SEARCH_EXPANDS, default=search_modes.DEFAULT_EXPAND,
        help_text="parent: each hit's authorized parent section; neighbors: the chunks around it; none.",
    )
    expand_level = serializers.ChoiceField(
        choices=SEARCH_EXPAND_LEVELS, default=search_modes.DEFAULT_EXPAND_LEVEL,
        help_text="leaf: the hit's own section; parent: one heading level up (still only what you may read).",
    )
    neighbors = serializers.IntegerField(min_value=0, max_value=10, default=1, help_text="For expand=neighbors.")
    max_contexts = serializers.IntegerField(min_value=1, max_value=MAX_TOP_K, default=5)
    context_token_budget = serializers.IntegerField(min_value=1, max_value=100_000, default=2000)
    filters = SearchFiltersInputSerializer(required=False)
    index_version = serializers.UUIDField(
        required=False, allow_null=True, default=None, help_text="Admins only; default: the active version."
    )
    exclude_flagged = serializers.BooleanField(
        required=False, default=False, help_text="Return no flagged chunk at all, released ones included.",
    )
    spotlight = serializers.BooleanField(
        required=False, default=False,
        help_text="Wrap each context for a model between markers with a random boundary and its source, and "
                  "return the system-prompt snippet that says the wrapped text is data (docs/screening.md).",
    )
    budget_fill = NullableBooleanField(
        required=False, allow_null=True, default=None,
        help_text="The budget fill: when the contexts of the top_k hits leave part of context_token_budget unused, "
                  "the next top_k hits of the same search (ranks top_k+1 to 2*top_k, as access-checked as the hits) "
                  "add their own chunk's text as further contexts, in rank order, while each fits -- up to top_k "
                  "more than max_contexts, never over context_token_budget; results (the hits) are the same. Only "
                  "with expansion (expand parent or neighbors; with expand none it does nothing). Absent or null: "
                  f"the server's default (on this server: {'on' if search_modes.DEFAULT_BUDGET_FILL else 'off'}).",
    )

    def to_internal_value(self, data):
        """An unknown option is refused, naming it, as an unknown filter is: ignored, a misspelt safety option
        (``exclude_flaged``, ``spotlite``) silently searched without it -- flagged chunks returned, text unwrapped
        (found attacking the demo, 2026-12-03)."""
        unknown = sorted(set(data) - set(self.fields)) if isinstance(data, dict) else []
        if unknown:
            raise serializers.ValidationError({unknown[0]: [f"unknown option; known: {', '.join(self.fields)}"]})
        return super().to_internal_value(data)


def section_citation_url(document_id, section_id) -> str:
    """The console page of a document with one section chosen, scrolled to that section's row: the
    citation a hit or a context links to. Only ids: the page itself checks the reader again."""
    from django.urls import reverse

    return f"{reverse('console:document', kwargs={'document_id': document_id})}?section={section_id}#section-{section_id}"


class _CitationMixin(serializers.Serializer):
    """A hit's or a context's citation: the console page of its section (absolute when the request is
    known), and the section's anchor on that page. The reader's access is checked again there."""

    url = serializers.SerializerMethodField(help_text="The document's console page, this section chosen.")
    section_anchor = serializers.SerializerMethodField(help_text="The section's anchor on that page.")

    def get_url(self, obj) -> str:
        url = section_citation_url(obj.document_id, obj.section_id)
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request is not None else url

    def get_section_anchor(self, obj) -> str:
        return f"section-{obj.section_id}"


class SearchHitOutputSerializer(_CitationMixin):
    chunk_id = serializers.UUIDField()
    document_id = serializers.UUIDField()
    document_title = serializers.CharField(allow_blank=True)
    section_id = serializers.UUIDField()
    heading_path = serializers.ListField(child=serializers.CharField(allow_blank=True))
    text = serializers.CharField(allow_blank=True)
    score = serializers.FloatField()
    distance = serializers.FloatField(allow_null=True)
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    rank = serializers.IntegerField()
    screening = ScreeningVerdictSerializer(allow_null=True, help_text="The chunk's stored verdict; null in off mode.")


class SearchContextOutputSerializer(_CitationMixin):
    section_id = serializers.UUIDField()
    document_id = serializers.UUIDField()
    document_title = serializers.CharField(allow_blank=True)
    heading_path = serializers.ListField(child=serializers.CharField(allow_blank=True))
    text = serializers.CharField(allow_blank=True)
    chunk_ids = serializers.ListField(child=serializers.UUIDField())
    score = serializers.FloatField()
    token_count = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="Cut to fit the token budget.")
    screening = ContextScreeningSerializer(allow_null=True, help_text="Null in off mode.")
    spotlighted = serializers.CharField(
        allow_null=True, help_text="With spotlight: the context between the response's boundary markers, with its source."
    )


class SearchOutputSerializer(serializers.Serializer):
    results = SearchHitOutputSerializer(many=True)
    contexts = SearchContextOutputSerializer(many=True)
    index_version_id = serializers.UUIDField(allow_null=True)
    mode = serializers.CharField()
    expand = serializers.CharField()
    screening = serializers.CharField(help_text="The tenant's screening mode: off, flag or quarantine.")
    spotlight = SpotlightSerializer(allow_null=True)


# ----------------------------------------------------------------------------- effective access (admins)

ROLES = ["viewer", "editor", "admin"]


class MemberSummaryOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.CharField()
    role = serializers.ChoiceField(choices=ROLES)
    clearance = serializers.ChoiceField(choices=LEVEL_NAMES)
    groups = serializers.ListField(child=serializers.CharField(), help_text="Group slugs.")
    is_active = serializers.BooleanField()


class SectionAsMemberOutputSerializer(_PolicyOutputMixin):
    id = serializers.UUIDField()
    order = serializers.IntegerField(help_text="Position in the document (0 = first).")
    depth = serializers.IntegerField(help_text="Depth in the whole section tree (0 = the root).")
    kind = serializers.CharField()
    readable = serializers.BooleanField(help_text="Whether the member may read the section.")
    withheld = serializers.BooleanField(
        help_text="The member may read it but you may not: its title and text are not shown to you either."
    )
    heading_path = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        help_text="Titles above the section that both the member and you may read.",
    )
    title = serializers.CharField(allow_blank=True, help_text="Empty unless both the member and you may read it.")
    excerpt = serializers.CharField(allow_blank=True, help_text="The start of its own text, on the same terms.")
    reasons = serializers.ListField(
        child=serializers.CharField(), help_text="Why the member may not read it; empty when they may."
    )
    chunks = serializers.IntegerField(help_text="Chunks in the active index version.")
    chunks_readable = serializers.IntegerField(help_text="Of them, those the member may read.")


class DocumentAsMemberOutputSerializer(serializers.Serializer):
    document_id = serializers.UUIDField()
    member = MemberSummaryOutputSerializer()
    document_visible = serializers.BooleanField(help_text="Whether the document is in the member's own list.")
    sections_readable = serializers.IntegerField()
    chunks = serializers.IntegerField()
    chunks_readable = serializers.IntegerField()
    sections = SectionAsMemberOutputSerializer(many=True)


class MemberAccessOutputSerializer(serializers.Serializer):
    member = MemberSummaryOutputSerializer()
    reasons = serializers.ListField(child=serializers.CharField())


class GroupAccessOutputSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    members = serializers.IntegerField(help_text="Active members of the group.")
    readers = serializers.IntegerField(help_text="Of them, those with clearance enough.")


class SectionReadersOutputSerializer(_PolicyOutputMixin):
    section_id = serializers.UUIDField()
    document_id = serializers.UUIDField()
    heading_path = serializers.ListField(
        child=serializers.CharField(allow_blank=True), help_text="The titles you may read, root first."
    )
    kind = serializers.CharField()
    readers = MemberAccessOutputSerializer(many=True, help_text="Active members who may read the section.")
    others = MemberAccessOutputSerializer(many=True, help_text="Active members who may not, and why.")
    reader_groups = GroupAccessOutputSerializer(
        many=True, source="groups", help_text="The section's groups (none: clearance alone decides)."
    )
    inactive = serializers.IntegerField(help_text="Inactive members, who read nothing and are not listed.")
