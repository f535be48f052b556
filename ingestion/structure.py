"""The format-agnostic document model every parser produces and every chunker consumes.

A parser turns bytes into a :class:`ParsedDocument`: the document text plus a flat,
document-ordered list of :class:`Section` objects that form a tree through
``parent``.  Each section owns a list of :class:`Block` objects -- contiguous
character ranges of *its own* body (paragraphs, list items, code blocks, table
rows).  A block never contains heading lines, access markers, front matter, or any
text of another section, so a chunk built from consecutive blocks of one section
can never cross an access boundary.

Pure Python: no Django imports. Policies (levels, groups, inheritance) are
:mod:`accounts.policy`'s, the one pure home of the access policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from accounts.policy import Policy, PolicyNode, effective_policies


class ParseError(ValueError):
    """A document cannot be ingested. ``line`` is 1-based when known."""

    def __init__(self, message: str, *, line: int | None = None):
        self.message = message
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


# Block kinds: what the chunker may do with a block.
#   prose      -- split on sentences, then words, when too long
#   list_item  -- like prose
#   code       -- split on lines, then characters
#   table_row  -- never split; ``embed_text`` carries the row with its column names
#   table      -- the whole table (raw span); used for the whole-table chunk
BLOCK_KINDS = ("prose", "list_item", "code", "table_row", "turn", "message")


@dataclass(frozen=True)
class Block:
    start: int
    end: int
    kind: str = "prose"
    # Text to embed instead of the raw span (e.g. a table row with its column names).
    embed_text: str | None = None
    # A block with ``joinable=False`` always starts a new chunk (e.g. each table row).
    joinable: bool = True
    metadata: dict = field(default_factory=dict, compare=False)


# Section kinds.
SECTION_KINDS = (
    "document", "heading", "region", "prose", "table", "code", "turn", "message", "page", "function", "class",
)


@dataclass
class Section:
    """One node of the section tree.

    ``start``/``end`` cover the section *including* its heading line and all its
    descendants; ``blocks`` are the section's own body ranges only.
    ``policy`` is the section's own marker (None: inherit); ``effective`` is filled
    by :func:`resolve_policies`.  ``line`` is the line of the heading or marker that
    opened the section, which for a section with a ``policy`` is the line of the
    marker that set it.
    """

    key: str  # deterministic, unique within the document, e.g. "3"
    parent: str | None  # key of the parent section, None for the root
    title: str
    heading_path: tuple[str, ...]
    kind: str
    depth: int
    start: int
    end: int
    blocks: list[Block] = field(default_factory=list)
    policy: Policy | None = None
    effective: Policy | None = None
    line: int | None = None  # 1-based line of the heading/marker that opened it
    metadata: dict = field(default_factory=dict)
    # Prefix lines that belong in every chunk's embed text (e.g. a module's imports,
    # an email's From/Subject) besides the heading path.
    context: str = ""
    # When ``context`` holds text of other sections (a module's imports, an enclosing class's
    # signature): ``(key of the section whose text it is, line)`` per line, for
    # :func:`restrict_context`. Empty: the context is the section's own.
    context_parts: tuple[tuple[str, str], ...] = ()
    # Text of this section that a reader of the rendered document does not see (hidden HTML, a
    # hidden DOCX run, invisible PDF text, invisible characters) is removed from the document text:
    # how many non-whitespace characters were (ingestion.parsers.visible_text).
    hidden_chars_removed: int = 0
    # Text kept although a reader may not see it as text, and why (e.g. an invisible OCR layer over a
    # page image): every chunk of the section carries the flag.
    hidden_text_flags: tuple[str, ...] = ()


@dataclass
class ParsedDocument:
    text: str
    sections: list[Section]  # document order; sections[0] is the root
    title: str | None = None
    # The key of the section bearing ``title``: its heading (Markdown's first H1), or the root for a title no heading
    # bears (a front matter's). None: the parser does not say (``kb.services.document_title_follow`` then takes the
    # first section titled so, else the root).
    title_key: str | None = None
    # Every title a member may be shown, each with the key of the section bearing it, in document order: a front
    # matter's (or the file's properties') on the root, then each H1 (Title paragraph) on its own section. A member is
    # shown the first of a section they may read (``kb.titles.reader_title``). Empty: ``title`` at ``title_key`` alone.
    title_candidates: list[tuple[str, str]] = field(default_factory=list)
    tags: tuple[str, ...] = ()
    tags_line: int | None = None  # the line of the front matter's ``tags:`` (its errors name it)
    # Document default from the file itself (front matter); None: use the upload's.
    default_policy: Policy | None = None
    # 1-based line of the marker that set ``default_policy`` (e.g. front matter ``access:``).
    default_policy_line: int | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def root(self) -> Section:
        return self.sections[0]

    def groups_used(self) -> set[str]:
        used: set[str] = set()
        if self.default_policy:
            used.update(self.default_policy.groups)
        for section in self.sections:
            if section.policy:
                used.update(section.policy.groups)
        return used


def resolve_policies(doc: ParsedDocument, upload_default: Policy) -> ParsedDocument:
    """Fill ``Section.effective`` (:func:`accounts.policy.effective_policies`): own marker, else
    parent's, else the document default.

    The document default is the file's own (front matter) when it has one, else the
    one given at upload.

    Markers can only *narrow*: the document's own default must imply the upload's,
    and a section's own policy must imply what it would otherwise inherit (its
    parent's effective policy, or the document default for a top-level section) --
    see :meth:`Policy.implies`; an equal policy is allowed.  A marker that would
    widen access raises :class:`ParseError` with the marker's line.  Both policies in
    its message are quoted, so that a redacted copy of the message drops them.
    """
    if doc.default_policy is not None and not doc.default_policy.implies(upload_default):
        raise ParseError(
            f"front matter '{doc.default_policy.marker_text()}' would widen access from the upload's "
            f"'{upload_default.describe()}' -- markers can only narrow",
            line=doc.default_policy_line,
        )
    default = doc.default_policy or upload_default
    resolved = effective_policies((PolicyNode(s.key, s.parent, s.policy) for s in doc.sections), default)
    for section in doc.sections:  # document order: the first widening marker is the one reported
        inherits = resolved[section.key].inherits
        if section.policy is not None and not section.policy.implies(inherits):
            raise ParseError(
                f"marker '{section.policy.marker_text()}' would widen access from '{inherits.describe()}' "
                "-- markers can only narrow",
                line=section.line,
            )
        section.effective = resolved[section.key].effective
    return doc


def restrict_context(doc: ParsedDocument, policies: Mapping[str, Policy]) -> ParsedDocument:
    """Keep in each section's ``context`` only the lines that *every* reader of the section may read.

    A line taken from another section (``Section.context_parts``) stays when the section's policy
    implies that one's -- the rule of the heading prefix
    (:func:`accounts.policy.visible_heading_paths`) -- and is left out otherwise, or when that
    section has no policy in ``policies`` (fail closed). ``policies`` are the effective ones by
    section key: the stored policies at ingestion, not necessarily the file's.
    """
    for section in doc.sections:
        if not section.context_parts:
            continue
        own = policies.get(section.key)
        section.context = "\n".join(
            text for key, text in section.context_parts
            if key == section.key or (own is not None and key in policies and own.implies(policies[key]))
        )
    return doc
