"""Markdown (CommonMark + pipe tables) with access markers, via markdown-it-py's token stream.

The document text is the decoded file.  markdown-it gives each block token a
``map`` of 0-based source lines; a :class:`LineIndex` turns those into offsets.
Only *block* parsing runs over the whole file (inline parsing is quadratic-ish on
pathological lines); inline parsing runs just for heading titles, table cells and
paragraphs that contain marker-like text.

Structure:

* Headings at the top level (not inside lists or quotes) open sections; a
  ``# Title`` is a child of the root, whose heading path is ``()``.
* Body blocks of a section: paragraphs, block quotes and raw HTML blocks (kind
  ``prose``), each top-level list item with its nested items (``list_item``),
  fenced and indented code including the fence lines (``code``).  Link reference
  definitions and thematic breaks produce no block.
* A pipe table becomes a child section of kind ``table`` whose blocks are its data
  rows (``table_row``, not joinable, ``embed_text`` = ``Column: value | ...``); the
  header and delimiter rows are in the section span but in no block.

Access markers (docs/formats.md, "Access markers: fail closed, narrow only"):

* Front matter ``access`` / ``groups`` set the document default policy; ``title`` and
  ``tags`` set the document's.  ``groups`` without ``access`` is an error (the level
  must be explicit for a policy to exist), so are a non-string ``access``, a key
  that is a near miss of ``access``/``groups`` (``Access``, ``acess``, ``group``,
  ``access_level``...), a duplicate key, YAML anchors and aliases (no alias bombs),
  front matter over 64 KB or nested deeper than 32 levels, and a front-matter-like
  block with an ``access`` key that does not start on the very first line.
* ``## Title <!-- access: LEVEL; groups: a, b -->`` sets the heading section's own policy.
* ``<!-- access: LEVEL -->`` ... ``<!-- /access -->`` alone on their lines, at the
  top level, enclose a region: a section of kind ``region`` with that policy and
  its parent's heading path.  Regions nest.  Headings inside a region are its
  descendants; a heading that would close the section the region sits in (same or
  higher level) before ``<!-- /access -->`` is an error.
* Markers in code (fenced, indented, inline) are text.  Marker-like text anywhere
  else (in a paragraph, a list, a quote, a malformed or multi-line comment, a near
  miss such as ``<!-- acess: ...`` or one with an invisible character, see
  :mod:`~ingestion.parsers.access_markers`) fails the document with the 1-based
  line: fail closed.  So do ``data-access``/``data-groups`` attributes (and near
  misses) in raw HTML: they mean nothing in Markdown.
* Whether a marker only narrows what encloses it is checked by
  :func:`~ingestion.structure.resolve_policies`, which knows the upload's default;
  the front matter policy's line is ``ParsedDocument.default_policy_line``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from accounts.policy import Policy
from ingestion.parsers import access_markers
from ingestion.parsers.markdown_hidden import (
    FOOTNOTES_ENV_KEY,
    REFERENCES_ENV_KEY,
    MarkdownHidden,
    hidden_ranges,
    recording_references,
    uncited_footnotes,
)
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import LineIndex, SectionTreeBuilder
from ingestion.parsers.tables import column_names, serialize_row
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import remove_ranges
from ingestion.structure import Block, ParsedDocument, ParseError

# maxNesting bounds markdown-it's recursion into nested lists and quotes (two token
# levels per list level): past it, markdown-it leaves the rest of the container
# unparsed, inside its top-level item's span and so inside that item's block.
_MAX_NESTING = 40
_BLOCK_MD = recording_references(
    MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).enable("table").disable("inline"))
_INLINE_MD = MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING})
# Longer inline content (a 5 MB heading...) is used raw rather than inline-parsed.
_MAX_INLINE_PARSE = 4096
_FRONT_MATTER_OPEN = "---"
_FRONT_MATTER_CLOSE = ("---", "...")
MAX_FRONT_MATTER_BYTES = 64 * 1024
_MAX_FRONT_MATTER_DEPTH = 32


class _FrontMatterLoader(yaml.SafeLoader):
    """SafeLoader that refuses anchors and aliases (no alias bombs), duplicate keys and deep nesting.

    Line numbers in its errors are those of the file: the front matter starts on line 2.
    """

    _FIRST_LINE = 2

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def _line(self, mark: yaml.Mark | None) -> int:
        return mark.line + self._FIRST_LINE if mark is not None else 1

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise ParseError("YAML aliases are not allowed in front matter (no '&anchor' or '*alias')",
                             line=self._line(event.start_mark))
        self._depth += 1
        try:
            if self._depth > _MAX_FRONT_MATTER_DEPTH:
                raise ParseError(f"front matter nested deeper than {_MAX_FRONT_MATTER_DEPTH} levels",
                                 line=self._line(event.start_mark))
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise ParseError("YAML merge keys ('<<') are not allowed in front matter",
                                 line=self._line(key_node.start_mark))
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # unhashable: the base class reports it
                continue
            if duplicate:
                raise ParseError(f"duplicate key {key!r} in front matter", line=self._line(key_node.start_mark))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _inline_children(content: str) -> list[Token]:
    tokens = _INLINE_MD.parseInline(content)
    return list(tokens[0].children or []) if tokens else []


def _plain_inline(content: str) -> str:
    """Inline Markdown rendered to plain text (emphasis markers, link syntax dropped)."""
    if len(content) > _MAX_INLINE_PARSE:
        return " ".join(content.split())
    parts = []
    for child in _inline_children(content):
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def _policy_attribute_in_html(content: str, *, inline: bool) -> bool:
    """Whether raw HTML in ``content`` carries ``data-access``/``data-groups`` (or a near miss of them).

    Those attributes mean something in HTML documents, not in Markdown; an author
    who writes them here expects a protection that would silently not happen.
    """
    if access_markers.find_policy_attribute(content) is None:
        return False
    if not inline or len(content) > _MAX_INLINE_PARSE * 16:
        return True
    return any(
        child.type == "html_inline" and access_markers.find_policy_attribute(child.content) is not None
        for child in _inline_children(content)
    )


_CODE_SPAN_RE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def _markers_outside_code(content: str) -> bool:
    """Whether inline ``content`` has marker-like text outside code spans."""
    if not access_markers.looks_like_marker(content):
        return False
    if len(content) > _MAX_INLINE_PARSE * 16:
        return True  # too big to inline-parse cheaply; fail closed
    # The source without its code spans: the tokens do not show everything (a link destination in
    # angle brackets, "[x](<!-- access: ... -->)", loses its "<" and ">").
    if access_markers.looks_like_marker(_CODE_SPAN_RE.sub(" ", content)):
        return True
    return any(
        child.type != "code_inline" and any(access_markers.looks_like_marker(text) for text in _texts_of(child))
        for child in _inline_children(content)
    )


def _texts_of(child: Token) -> list[str]:
    """An inline token's text and its attributes' (a link's destination and title, an image's source):
    markdown-it keeps those out of ``content``, and percent-encodes a destination."""
    values = [str(value) for value in (child.attrs or {}).values()]
    return [child.content, *values, *(unquote(value) for value in values if "%" in value)]


class _MarkdownParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = LineIndex(text)
        self.builder = SectionTreeBuilder(text)
        self.title: str | None = None
        self.first_h1: str | None = None
        self.first_h1_key: str | None = None  # its section: the one bearing the title (ParsedDocument.title_key)
        self.h1s: list[tuple[str, str]] = []  # every H1's section and title (ParsedDocument.title_candidates)
        self.tags: tuple[str, ...] = ()
        self.tags_line: int | None = None
        self.default_policy: Policy | None = None
        self.default_policy_line: int | None = None
        self.front_matter: dict[str, Any] = {}
        self.hidden: MarkdownHidden | None = None

    # -- helpers -------------------------------------------------------------------

    def span(self, token_map: Sequence[int]) -> tuple[int, int]:
        first, last = token_map
        return self.lines.start(first), self.lines.end(max(first, last - 1))

    def marker_line(self, token_map: Sequence[int]) -> int:
        """1-based line of the first marker-like text within the token's lines."""
        start, end = self.span(token_map)
        found = access_markers.find_marker_comment(self.text, start, end)
        return self.lines.line_of(found) + 1 if found is not None else token_map[0] + 1

    def reject_markers(self, container: Token, tokens: Sequence[Token], where: str) -> None:
        """Fail on marker-like text inside a container (list, quote, table) outside code."""
        if container.map and any(token.level >= _MAX_NESTING - 1 for token in tokens):
            # Parsing stopped at the nesting limit: the tokens no longer show everything
            # in the span (a region marker may hide there), so look at the raw text.
            start, end = self.span(container.map)
            if access_markers.find_marker_comment(self.text, start, end) is not None:
                raise ParseError(
                    f"access marker inside {where} nested deeper than {_MAX_NESTING // 2} levels",
                    line=self.marker_line(container.map),
                )
        for token in tokens:
            if token.type == "html_block":
                self.reject_policy_attributes(token, inline=False)
                bad = access_markers.looks_like_marker(token.content)
            elif token.type == "inline":
                self.reject_policy_attributes(token, inline=True)
                bad = _markers_outside_code(token.content)
            else:
                bad = False
            if bad:
                raise ParseError(
                    f"access marker inside {where} (markers must stand alone on their line at the top level, "
                    "or end a heading)",
                    line=self.marker_line(token.map or [0, 1]),
                )

    def reject_policy_attributes(self, token: Token, *, inline: bool) -> None:
        if _policy_attribute_in_html(token.content, inline=inline):
            map_ = token.map or [0, 1]
            start, end = self.span(map_)
            found = access_markers.find_policy_attribute(self.text, start, end)
            raise ParseError(
                "data-access/data-groups attributes (or look-alikes) do nothing in Markdown: use "
                "<!-- access: LEVEL; groups: a, b --> ... <!-- /access --> markers",
                line=self.lines.line_of(found) + 1 if found is not None else map_[0] + 1,
            )

    # -- front matter --------------------------------------------------------------

    def front_matter_lines(self) -> int:
        """Parse front matter if present; return how many lines it takes (0 without)."""
        if self.lines.line(0).rstrip() != _FRONT_MATTER_OPEN:
            misplaced = access_markers.find_front_matter_marker(self.text)
            if misplaced is not None:
                raise ParseError(
                    "this looks like front matter with an access key, but it is not read as front matter: "
                    "front matter must be YAML between lines of exactly '---', the first on the very first line",
                    line=self.lines.line_of(misplaced) + 1,
                )
            return 0
        close = next(
            (n for n in range(1, self.lines.count) if self.lines.line(n).rstrip() in _FRONT_MATTER_CLOSE), None
        )
        if close is None:
            raise ParseError("unterminated front matter: no closing '---' line", line=1)
        source = self.text[self.lines.start(1) : self.lines.start(close)]
        if len(source.encode("utf-8", "surrogatepass")) > MAX_FRONT_MATTER_BYTES:
            raise ParseError(f"front matter is larger than {MAX_FRONT_MATTER_BYTES // 1024} KB", line=1)
        found = access_markers.find_marker_comment(source)
        if found is not None:  # a value or a YAML comment is never read as a marker (fuzzing the markers, 2026-12-03)
            raise ParseError(
                "front matter holds what looks like an access marker comment, which is never read there: set the "
                "document's access with the front matter's 'access' key, or move the marker below the front matter",
                line=self.lines.line_of(self.lines.start(1) + found) + 1)
        data, key_lines = _load_front_matter(source) if source.strip() else ({}, {})
        if not isinstance(data, dict):
            raise ParseError("invalid front matter: expected 'key: value' lines", line=2)
        self.apply_front_matter(data, key_lines)
        return close + 1

    def apply_front_matter(self, data: dict, key_lines: dict[str, int]) -> None:
        for key, line in key_lines.items():
            if access_markers.front_matter_key_kind(key) == "near":
                raise ParseError(
                    f"front matter key {key!r} looks like an access key but is not one: "
                    "the keys are exactly 'access' and 'groups' (lowercase)",
                    line=line,
                )
        # Through JSON so dates and other YAML types become storable (JSONField) values.
        self.front_matter = json.loads(json.dumps({str(key): value for key, value in data.items()}, default=str))
        title = data.get("title")
        if title is not None:
            self.title = str(title).strip() or None
        tags = data.get("tags")
        if tags is not None:
            items = tags if isinstance(tags, list) else str(tags).replace(",", " ").split()
            self.tags = tuple(str(tag).strip() for tag in items if str(tag).strip())
            self.tags_line = key_lines.get("tags")
        if "access" in data:
            line = key_lines.get("access", 1)
            if not isinstance(data["access"], str):
                raise ParseError(
                    f"front matter 'access' must be a level name (a string), not {data['access']!r}", line=line
                )
            access_markers.reject_invisible(data["access"], line=line, where="front matter 'access'")
            level = access_markers.parse_level(data["access"], line=line, where="access level in front matter")
            groups = (access_markers.parse_groups(data["groups"], line=key_lines.get("groups", line))
                      if "groups" in data else ())
            self.default_policy = Policy(level=level, groups=groups)
            self.default_policy_line = line
        elif "groups" in data:  # even "groups:" or "groups: []": a policy needs its level
            raise ParseError(
                "front matter sets 'groups' without 'access': give the level too", line=key_lines.get("groups", 1)
            )

    # -- main pass -----------------------------------------------------------------

    def run(self) -> ParsedDocument:
        skipped = self.front_matter_lines()
        # Blank the front matter out (same number of lines) so token maps stay file line numbers.
        source = "\n" * skipped + self.text[self.lines.start(skipped) :] if skipped else self.text
        env: dict = {}
        tokens = _BLOCK_MD.parse(source, env)
        # What a reader of the rendered page does not see (markdown_hidden): titles and cells are
        # taken without it, and it is cut out of the text once the structure is built.
        self.hidden = hidden_ranges(self.text, tokens, self.lines, [
            *env.get(REFERENCES_ENV_KEY, ()), *uncited_footnotes(self.text, tokens, self.lines, env.get(FOOTNOTES_ENV_KEY, ()))])
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if token.nesting == 1 and token.type != "heading_open":
                close = _matching_close(tokens, i)
                self.container(tokens, i, close)
                i = close + 1
                continue
            if token.type == "heading_open":
                self.heading(token, tokens[i + 1])
                i += 3
                continue
            self.leaf(token)
            i += 1
        sections = self.builder.finish()
        doc = ParsedDocument(
            text=self.text,
            sections=sections,
            title=self.title or self.first_h1,
            title_key=sections[0].key if self.title else self.first_h1_key,
            title_candidates=[*([(sections[0].key, self.title)] if self.title else []), *self.h1s],
            tags=self.tags,
            tags_line=self.tags_line,
            default_policy=self.default_policy,
            default_policy_line=self.default_policy_line,
            metadata={"front_matter": self.front_matter} if self.front_matter else {},
        )
        return remove_ranges(doc, self.hidden.ranges)

    def heading(self, token: Token, inline: Token) -> None:
        line = token.map[0] + 1
        content = inline.content
        policy = None
        if access_markers.looks_like_marker(content) and _markers_outside_code(content):
            content, policy = access_markers.split_trailing_marker(content, line=line)
            if _markers_outside_code(content):
                raise ParseError("more than one access marker in a heading", line=line)
        title = _plain_inline(self.hidden.visible(inline, content) if self.hidden else content)
        level = int(token.tag[1])
        start, end = self.span(token.map)
        section = self.builder.open_heading(level=level, title=title, start=start, heading_end=end, line=line,
                                            policy=policy)
        if level == 1 and self.first_h1 is None:
            self.first_h1, self.first_h1_key = title, section.key
        if level == 1 and title.strip():
            self.h1s.append((section.key, title))

    def leaf(self, token: Token) -> None:
        if token.map is None or token.type == "hr":
            return
        start, end = self.span(token.map)
        if token.type == "html_block":
            if access_markers.looks_like_marker(token.content):
                self.marker(token)
                return
            self.reject_policy_attributes(token, inline=False)
            self.builder.add_block(start, end, "prose")
        elif token.type in ("fence", "code_block"):
            info = token.info.strip().split(maxsplit=1)
            self.builder.add_block(start, end, "code", metadata={"language": info[0]} if info else None)
        else:
            self.builder.add_block(start, end, "prose")

    def marker(self, token: Token) -> None:
        line = token.map[0] + 1
        if token.map[1] - token.map[0] > 1:
            raise ParseError(
                "malformed access marker: a marker must be alone on one line (nothing after it on the line, "
                "no line breaks inside it)",
                line=self.marker_line(token.map),
            )
        marker = access_markers.parse_marker(token.content, line=line)
        start, end = self.span(token.map)
        if marker.closes:
            self.builder.close_scope(boundary=start, end=end, line=line)
        else:
            self.builder.open_scope(kind="region", start=start, line=line, policy=marker.policy, strict=True,
                                    min_end=end)

    def container(self, tokens: list[Token], open_index: int, close_index: int) -> None:
        token = tokens[open_index]
        inner = tokens[open_index + 1 : close_index]
        if token.type == "paragraph_open":
            self.reject_policy_attributes(inner[0], inline=True)
            if _markers_outside_code(inner[0].content):
                raise ParseError(
                    "access marker inside a paragraph (markers must stand alone on their line, "
                    "separated from text by a blank line, or end a heading)",
                    line=self.marker_line(token.map),
                )
            start, end = self.span(token.map)
            self.builder.add_block(start, end, "prose")
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            self.reject_markers(token, inner, "a list")
            for item in inner:
                if item.type == "list_item_open" and item.level == token.level + 1 and item.map:
                    self.builder.add_block(*self.span(item.map), "list_item")
        elif token.type == "table_open":
            self.reject_markers(token, inner, "a table")
            self.table(token, inner)
        else:  # blockquote and anything unforeseen: one prose block over its lines
            self.reject_markers(token, inner, "a block quote" if token.type == "blockquote_open" else "a block")
            if token.map:
                self.builder.add_block(*self.span(token.map), "prose")

    def table(self, token: Token, inner: list[Token]) -> None:
        header: list[str] = []
        rows: list[tuple[Sequence[int], list[str]]] = []
        in_head = False
        for item in inner:
            if item.type == "thead_open":
                in_head = True
            elif item.type == "thead_close":
                in_head = False
            elif item.type == "tr_open" and not in_head:
                rows.append((item.map or [0, 1], []))
            elif item.type == "inline":
                cell = _plain_inline(self.hidden.visible(item) if self.hidden else item.content)
                (header if in_head else rows[-1][1]).append(cell)
        columns = column_names(header, len(header))
        blocks = []
        for row_map, values in rows:
            start, end = self.span(row_map)
            block = _trimmed_block(self.text, start, end, kind="table_row", joinable=False,
                                   embed_text=serialize_row(columns, values))
            if block is not None:
                blocks.append(block)
        start, end = self.span(token.map)
        self.builder.add_leaf(
            kind="table", title="", start=start, end=end, blocks=blocks, line=token.map[0] + 1,
            metadata={"table": {"start": start, "end": end, "columns": columns, "caption": None}},
        )


def _load_front_matter(source: str) -> tuple[object, dict[str, int]]:
    """The front matter's data and the file line of each top-level key (see :class:`_FrontMatterLoader`)."""
    loader = _FrontMatterLoader(source)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}, {}
        key_lines: dict[str, int] = {}
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key_lines.setdefault(str(key_node.value), loader._line(key_node.start_mark))
        data = loader.construct_document(node)
        _reject_nested_access_keys(node, loader)
        return data, key_lines
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ParseError(
            f"invalid front matter: {getattr(exc, 'problem', None) or exc}",
            line=(mark.line + _FrontMatterLoader._FIRST_LINE) if mark is not None else 1,
        ) from None
    finally:
        loader.dispose()


def _reject_nested_access_keys(root: yaml.Node, loader: _FrontMatterLoader) -> None:
    """Fail on an ``access``/``groups``-like key in a mapping nested anywhere in the front matter (any
    depth, lists included): only top-level keys set a policy, so a nested one would be ignored."""
    stack: list[tuple[yaml.Node, bool]] = [(root, True)]
    while stack:
        node, top = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if (not top and isinstance(key_node, yaml.ScalarNode)
                        and access_markers.front_matter_key_kind(str(key_node.value)) is not None):
                    raise ParseError(
                        f"front matter key {str(key_node.value)!r} is nested: an access key only applies at the "
                        "top level of the front matter ('access: LEVEL' on its own line), so this one would be "
                        "ignored",
                        line=loader._line(key_node.start_mark),
                    )
                stack.append((key_node, False))
                stack.append((value_node, False))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, False) for item in node.value)


def _matching_close(tokens: list[Token], open_index: int) -> int:
    level = tokens[open_index].level
    for index in range(open_index + 1, len(tokens)):
        if tokens[index].level == level and tokens[index].nesting == -1:
            return index
    return len(tokens) - 1


def _trimmed_block(text: str, start: int, end: int, **fields: Any) -> Block | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Block(start=start, end=end, **fields) if start < end else None


def parse_markdown_text(text: str) -> ParsedDocument:
    """Parse already-decoded Markdown (offsets index ``text``)."""
    return _MarkdownParser(text).run()


@register(
    content_types=["text/markdown", "text/x-markdown", "text/md", "text/x-md", "text/x-gfm", "text/gfm",
                   "application/markdown", "application/x-markdown"],
    extensions=[".md", ".markdown", ".mdown", ".mkd", ".mkdn", ".mdwn"],
    reads_markers=True,
)
def parse_markdown(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a Markdown file (UTF-8): sections from headings, access markers, tables, lists, code."""
    return parse_markdown_text(decode_text(data))
