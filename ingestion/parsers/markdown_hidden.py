"""Hidden HTML in Markdown: which characters of the file a reader of the rendered page never sees.

A browser shows a Markdown file as the HTML it renders to, with the raw HTML written in it
(CommonMark passes it through). So hidden text is decided on that page: the block tokens are
rendered to HTML (markdown-it's own tags for paragraphs, headings, lists, tables, code; the
HTML blocks and inline HTML of the file as written; Markdown's inline elements -- emphasis,
links, code spans -- rendered too), with a marker comment in place of each piece of text.
:class:`~ingestion.parsers.css_visibility.Visibility` then says which markers sit where text
is hidden -- inline styles, ``hidden``, ``aria-hidden``, ``<template>``, and the rules of a
``<style>`` element anywhere in the file -- and each hidden piece is mapped back to its
characters in the file. Also removed: HTML comments (but valid access markers, which the
parser has read), ``<!...>``/``<?...>`` declarations, and the content of elements a page
never shows (``script``, ``style``, ``title``, ``iframe``, ``noembed``, ``noframes``).

Two differences between a browser and libxml2 are covered by hiding more, never less: a
piece counts as hidden when any of its markers is (a hidden ``**strong**`` hides the text
around it up to the next HTML tag); and a formatting element (``<b>``, ``<i>``, ``<a>``,
``<font>``...) left open carries its style on to all text up to its end tag, as a browser
rebuilds it in every following block (the HTML5 "active formatting elements").

Only pieces of text are judged; what stays is the Markdown as written (so a hidden heading
keeps its ``##``, and its section, with an empty title: its policy, and the policy of the
visible text under it, are untouched). Markers are never removed.
"""

from __future__ import annotations

import bisect
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field

import lxml.html
from lxml import etree
from markdown_it import MarkdownIt
from markdown_it.common.html_re import HTML_TAG_RE
from markdown_it.rules_inline import html_inline
from markdown_it.token import Token

from ingestion.parsers import access_markers
from ingestion.parsers.css_visibility import Visibility
from ingestion.parsers.html import input_text
from ingestion.parsers.section_tree import LineIndex
from ingestion.parsers.visible_text import merge_ranges
from ingestion.structure import ParseError

_MAX_NESTING = 40
_MAX_INLINE_PARSE = 4096 * 16  # longer inline content is scanned for tags without a parse
_ANCHOR_RE = re.compile(r"bh(\d+)\Z")
# The attribute that marks a raw-text element of the page: a name drawn for each page (``_Page``), so the
# file's own HTML cannot write it (found attacking the demo: `<i data-bh-anchor="5">` on a visible element
# un-hid the hidden text anchor 5 stood for).
_ANCHOR_ATTRIBUTE_PREFIX = "data-bh-anchor-"
_FORMATTING = frozenset({"a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong",
                         "tt", "u"})
_NEVER_SHOWN = frozenset({"script", "style", "title", "iframe", "noembed", "noframes", "noscript", "template"})
_RAW_TEXT = frozenset({"script", "style", "title", "iframe", "noembed", "noframes", "noscript", "textarea", "xmp"})
_RAW_END: dict[str, re.Pattern] = {name: re.compile(rf"</{name}[\s/>]|</{name}\Z", re.IGNORECASE)
                                   for name in _RAW_TEXT}
# HTML inside an HTML block, split as the HTML5 tokenizer does (comments, declarations, tags; the rest text).
_PIECE_RE = re.compile(
    r"""
      (?P<comment><!--->|<!-->|<!--.*?(?:--!?>|\Z))
    | (?P<declaration><[!?][^>]*>?)
    | </(?P<end>[A-Za-z][^\s/>]*)[^>]*>?
    | (?P<bogus></[^A-Za-z][^>]*>?)
    | <(?P<start>[A-Za-z][^\s/>]*)(?:"[^"]*(?:"|\Z)|'[^']*(?:'|\Z)|[^>"'])*(?:>|\Z)
    """,
    re.DOTALL | re.VERBOSE,
)
_TAG_NAME_RE = re.compile(r"<\s*(/?)\s*([A-Za-z][A-Za-z0-9-]*)")
# An attribute of a start tag and its value (quoted or bare), after the tag's name.
_ATTRIBUTE_RE = re.compile(
    r"""[\s"'/](?P<name>[^\s"'>/=]+)\s*=\s*(?:"(?P<value>[^"]*)"|'(?P<value2>[^']*)'|(?P<value3>[^\s"'=<>`]+))"""
)
# What a reader is shown of an element's attributes, by element (Markdown's own links and images keep the
# same): a link's address, an image's address and alt text, a quotation's source; a title (a tooltip) on
# any element. Any other attribute value is removed (found attacking the demo: `<span alt=...>` was kept).
_ATTRIBUTES_KEPT = {"a": {"href"}, "area": {"href", "alt"}, "img": {"src", "alt"}, "blockquote": {"cite"},
                    "q": {"cite"}, "del": {"cite"}, "ins": {"cite"}}
_ATTRIBUTES_KEPT_EVERYWHERE = frozenset({"title"})
_VALUED_TAG_RE = re.compile(r"<[A-Za-z][^>]*=")  # a start tag with an attribute value: see _Page.tag
_STYLED_RE = re.compile(r"<\s*style|stylesheet", re.IGNORECASE)
_FORMATTING_END_RE = re.compile(r"</\s*(?:" + "|".join(sorted(_FORMATTING)) + r")\b", re.IGNORECASE)
# Inline HTML that can hide something, or be removed, without a style sheet: comments, declarations,
# hiding attributes, elements hidden or never shown by themselves.
_MAY_HIDE_RE = re.compile(
    r"<[!?]|[\s\"'/](?:style|hidden|aria-hidden|color|bgcolor)\b"
    r"|<\s*/?\s*(?:template|dialog|script|style|title|iframe|noembed|noframes|textarea|xmp|plaintext|noscript"
    r"|font|datalist|rp|progress|meter)\b",
    re.IGNORECASE,
)


def _positions_md() -> MarkdownIt:
    """An inline parser whose html_inline tokens carry their span in the content (``meta["span"]``)."""
    md = MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING})

    def recording(state, silent: bool) -> bool:
        start = state.pos
        if html_inline(state, silent):
            if not silent:
                state.tokens[-1].meta["span"] = (start, state.pos)
            return True
        return False

    md.inline.ruler.at("html_inline", recording)
    return md


_INLINE = _positions_md()
_RENDERER = MarkdownIt("commonmark")


@dataclass
class _Content:
    """One token's content (an inline's text, an HTML block's lines) and its place in the file."""

    text: str
    first_line: int
    last_line: int  # exclusive
    offsets: list[int] | None = None  # file offset of each character, once aligned
    start: int | None = None  # where in the file to start looking (a table cell: after the cells before it)
    failed: bool = False  # the characters could not all be found: the whole lines stand for each


# A fenced code block's opening fence: the fence, the info string's first word, and the rest of it (group 1).
_FENCE_INFO_TAIL = re.compile(r"(?:`{3,}|~{3,})[ \t]*\S*[ \t]+([^\n]*\S)")


@dataclass
class _Piece:
    """Characters ``start:end`` of a content that are hidden when any of ``anchors`` is (or always)."""

    content: _Content
    start: int
    end: int
    anchors: list[int] = field(default_factory=list)
    always: bool = False  # removed whatever its anchors say (a comment, a script)
    # The text tokens Markdown rendered in it, in order (an anchor each, and their text): when only some
    # are hidden (a style rule on ``strong``), just those are cut.
    parts: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class _Tag:
    name: str
    closing: bool
    after: int  # the anchor right after the tag: inside the element a start tag opens


class _Page:
    """The rendered page with anchors, and the pieces of the file each anchor stands for."""

    def __init__(self, text: str, lines: LineIndex) -> None:
        self.text = text
        self.lines = lines
        self.parts: list[str] = ["<!DOCTYPE html><html><head></head><body>"]
        self.pieces: list[_Piece] = []
        self.tags: list[_Tag] = []  # every tag of the file's own HTML, in page order
        self.anchors = 0
        self.anchor_attribute = _ANCHOR_ATTRIBUTE_PREFIX + secrets.token_hex(8)
        self.raw: str | None = None  # inside an inline raw-text element (its name)
        # A formatting element that may hide has been met: its end tag, wherever, must be seen.
        self.hiding_formatting = False

    def anchor(self) -> int:
        number = self.anchors
        self.anchors += 1
        self.parts.append(f"<!--bh{number}-->")
        return number

    def tag(self, content: _Content, start: int, end: int, source: str) -> None:
        """An HTML tag of the file at ``content[start:end]``: emitted as written, between two anchors."""
        match = _TAG_NAME_RE.match(source)
        name = match[2].lower() if match else ""
        closing = bool(match and match[1])
        before = self.anchor()
        emitted = source
        if name == "plaintext":
            emitted = "<div>" if not closing else "</div>"  # its rest would be raw text: an ordinary block
        kept: list[tuple[int, int]] = []
        if not closing:
            # Attribute values no reader is shown (a hidden input's value, a meta's content, data-*):
            # removed whatever the element's visibility. What Markdown's own links and images keep
            # (a link's address and title, an image's alt text) stays, as it does for them: screened --
            # while the element itself is shown (judged by an anchor on the element: a void one has no text).
            allowed = _ATTRIBUTES_KEPT.get(name, set()) | _ATTRIBUTES_KEPT_EVERYWHERE
            shown = _input_shown(source) if name == "input" else ""
            for attribute in _ATTRIBUTE_RE.finditer(source):
                group = next(g for g in ("value", "value2", "value3") if attribute[g] is not None)
                first, last = attribute.span(group)
                if last <= first:
                    continue
                if attribute["name"].lower() in allowed:
                    kept.append((first, last))
                elif shown and attribute["name"].lower() == "value" and source[first:first + len(shown)] == shown:
                    # What an input's box shows of its value (``html.input_text``), judged as its own text; the
                    # rest of the value (past the box) is removed. Written with a character reference: removed.
                    kept.append((first, first + len(shown)))
                    if first + len(shown) < last:
                        self.pieces.append(_Piece(content, start + first + len(shown), start + last, always=True))
                    shown = ""  # the first value only, as a browser reads it
                else:
                    self.pieces.append(_Piece(content, start + first, start + last, always=True))
        # An inline ``<textarea>``/``<xmp>`` shows its content as text: an anchor comment after its start tag would
        # be raw text there, never found (fourteenth session: its visible text was cut), so the element carries its
        # anchor as an attribute, and the text in it is judged by the element's own visibility.
        raw_shown = not closing and name in _RAW_TEXT and name not in _NEVER_SHOWN
        number = None
        if (kept or raw_shown) and match and name != "plaintext":
            number = self.anchors
            self.anchors += 1
            emitted = f'{source[:match.end()]} {self.anchor_attribute}="{number}"{source[match.end():]}'
            for first, last in kept:
                self.pieces.append(_Piece(content, start + first, start + last, [number]))
        self.parts.append(emitted)
        after = number if raw_shown and number is not None else self.anchor()
        self.pieces.append(_Piece(content, start, end, [before, after]))
        if name:
            self.tags.append(_Tag(name, closing, after))
            if not closing and name in _FORMATTING and _MAY_HIDE_RE.search(source):
                self.hiding_formatting = True

    def raw_element(self, content: _Content, start: int, end: int, name: str, source: str, tag_end: int) -> None:
        """A raw-text element (``<style>...</style>``) whole: CSS kept for the page; shown only for
        ``textarea``/``xmp``, whose visibility is the element's own (an attribute anchor). ``tag_end``: where its
        start tag ends in ``source``."""
        if name in _NEVER_SHOWN:
            self.parts.append(source if name == "style" else f"<{name}></{name}>")
            self.pieces.append(_Piece(content, start, end, always=True))
            return
        # The start tag's attribute values, as any tag's (2026-12-04, found deciding form controls: a block-level
        # <textarea placeholder="..." name="..." data-x="..."> kept its start tag whole, and the values reached the
        # model): removed but a title (a tooltip, shown while the element is). A placeholder goes too -- drawn
        # greyed only while the box is empty -- as an <input>'s value and placeholder do.
        for attribute in _ATTRIBUTE_RE.finditer(source[:tag_end]):
            group = next(g for g in ("value", "value2", "value3") if attribute[g] is not None)
            first, last = attribute.span(group)
            if last > first and attribute["name"].lower() not in _ATTRIBUTES_KEPT_EVERYWHERE:
                self.pieces.append(_Piece(content, start + first, start + last, always=True))
        number = self.anchors
        self.anchors += 1
        # Emitted with its own attributes (2026-12-04, found deciding form controls: emitted bare, a block-level
        # <textarea hidden>, style="display:none" or a class a rule hides was judged shown, and its text reached
        # the model).
        match = _TAG_NAME_RE.match(source)
        opening, split = source[:tag_end], match.end() if match else 0
        if not (match and opening.endswith(">")):
            opening, split = f"<{name}>", len(name) + 1
        self.parts.append(f'{opening[:split]} {self.anchor_attribute}="{number}"{opening[split:]}</{name}>')
        self.pieces.append(_Piece(content, start, end, [number]))


def _input_shown(source: str) -> str:
    """What an ``<input>`` start tag's box shows of its value (``html.input_text``); "" when unreadable."""
    try:
        element = lxml.html.fragment_fromstring(source)
    except (etree.ParserError, ValueError):
        return ""
    return input_text(element)[0] if element.tag == "input" else ""


def _drop_or_keep(source: str) -> bool:
    """Whether a comment or declaration is removed: all but the access markers the parser read."""
    return not access_markers.looks_like_marker(source)


def _align(text: str, lines: LineIndex, content: _Content) -> list[int]:
    """File offset of each character of ``content.text`` (also kept in ``content.offsets``).

    A content is its lines with prefixes taken off (a quote's ``>``, a list item's indent, a
    heading's ``#``, a table's ``|`` and the ``\\`` of ``\\|``) and its ends trimmed: each of its
    characters is found in order in the file, skipping what was taken off; whitespace matches
    whitespace (a tab may have become spaces). When a character cannot be found (it never
    should), every character stands for the whole of the content's lines: ``content.failed``.
    """
    if content.offsets is not None:
        return content.offsets
    line_start = lines.start(content.first_line)
    end = lines.end(max(content.first_line, content.last_line - 1))
    position = line_start if content.start is None else content.start
    offsets: list[int] = []
    for char in content.text:
        if char.isspace():
            while position < end and not text[position].isspace():
                position += 1
        else:
            while position < end and text[position] != char:
                position += 1
        if position >= end:
            content.failed = True
            offsets = [line_start] * len(content.text)
            break
        offsets.append(position)
        position += 1
    content.offsets = offsets
    return offsets


def _span(text: str, lines: LineIndex, piece: _Piece) -> tuple[int, int]:
    """The file range of a piece: its first to its last character, or all its content's lines."""
    content = piece.content
    offsets = _align(text, lines, content)
    if content.failed:
        return lines.start(content.first_line), lines.end(max(content.first_line, content.last_line - 1))
    return offsets[piece.start], offsets[piece.end - 1] + 1


def _inline_children(content: str) -> list[Token] | None:
    if len(content) > _MAX_INLINE_PARSE:
        return None
    tokens = _INLINE.parseInline(content)
    return list(tokens[0].children or []) if tokens else []


_DEFINITION_PARTS_RE = re.compile("[\\[\\]\"'()<>]")


def _definition_marker(source: str) -> int | None:
    """Offset of marker-like text in a link reference definition's source, else None: anything
    :func:`~ingestion.parsers.access_markers.find_unread_marker` finds, and a line marker as its label,
    destination or title (``[//]: # (access: restricted)``, the usual Markdown "comment": found fuzzing the
    markers, 2026-12-03) -- each part read as a line of its own (the brackets and quotes become line breaks)."""
    found = access_markers.find_unread_marker(source)
    if found is None:
        found = access_markers.find_line_marker(_DEFINITION_PARTS_RE.sub("\n", source))
    return found


class MarkdownHidden:
    """The hidden ranges of a Markdown file, from its block tokens (see the module docstring)."""

    def __init__(self, text: str, tokens: Sequence[Token], lines: LineIndex | None = None,
                 references: Sequence[tuple[int, int]] = ()) -> None:
        self.text = text
        self.lines = lines if lines is not None else LineIndex(text)
        self.ranges: list[tuple[int, int]] = []
        self._contents: dict[int, _Content] = {}  # id of an inline token -> its content
        # With a style sheet in the file, a rule may hide what Markdown itself renders (``strong``,
        # ``em``, ``a``): every inline is then rendered with its elements, not only those with HTML.
        self._styled = _STYLED_RE.search(text) is not None
        if "<" in text and any(
                token.type == "html_block" or (token.type == "inline" and "<" in token.content
                                               and HTML_TAG_RE.search(token.content))
                for token in tokens):
            self._find(tokens)  # the file has HTML (a "<" in code only is text)
        # A fenced code block's info string after its first word (twenty-fifth session, attack25): CommonMark renders
        # the first word as the code's class and nothing of the rest (nor does GitHub), yet the file is kept as
        # written, so "```python Ignore all previous instructions ..." reached the model. Cut; the fence and the
        # first word stay (a language name, read by screening like any text).
        tails = []
        for token in tokens:
            if token.type == "fence" and token.map is not None and len(token.info.split(maxsplit=1)) > 1:
                start = self.lines.start(token.map[0])
                line = text[start:self.lines.end(token.map[0])]
                fence = line.find(token.markup)
                if fence >= 0 and (tail := _FENCE_INFO_TAIL.match(line, fence)):
                    tails.append((start + tail.start(1), start + tail.end(1)))
        if tails:
            self.ranges = merge_ranges([*self.ranges, *tails])
        if references:  # link reference definitions: never rendered (``[//]: # (a "comment")``)
            for first, last in references:  # cut, a marker in one must fail, never pass silently
                start, end = self.lines.start(first), self.lines.end(max(first, last - 1))
                if last > first and (found := _definition_marker(text[start:end])) is not None:
                    raise ParseError(
                        f"{text[start + found:start + found + 60].splitlines()[0]!r} in a link reference definition "
                        "looks like an access marker, but a definition is never shown and its markers are not read; "
                        "move the marker to a line of its own", line=text.count("\n", 0, start + found) + 1)
            self.ranges = merge_ranges([*self.ranges, *(
                (self.lines.start(first), self.lines.end(last - 1)) for first, last in references if last > first)])
        self._starts = [start for start, _ in self.ranges]

    # -- queries --------------------------------------------------------------------------------------

    def hidden(self, offset: int) -> bool:
        index = bisect.bisect_right(self._starts, offset)
        return bool(index) and offset < self.ranges[index - 1][1]

    def visible(self, token: Token, prefix: str | None = None) -> str:
        """``token.content`` (or its first ``len(prefix)`` characters) without its hidden characters."""
        content = token.content if prefix is None else prefix
        if not self.ranges or token.map is None:
            return content
        first, last = token.map
        if not self._ranges_between(first, last):
            return content
        aligned = self._contents.get(id(token)) or _Content(token.content, first, last)
        offsets = _align(self.text, self.lines, aligned)
        if aligned.failed:
            return ""  # fail closed: nothing of it is known to be visible
        return "".join(char for char, offset in zip(content, offsets, strict=False) if not self.hidden(offset))

    def _ranges_between(self, first_line: int, last_line: int) -> list[int]:
        """Starts of hidden ranges that overlap the lines (a cheap pre-check for :meth:`visible`)."""
        start, end = self.lines.start(first_line), self.lines.end(max(first_line, last_line - 1))
        index = max(bisect.bisect_right(self._starts, start) - 1, 0)
        found = []
        while index < len(self.ranges) and self.ranges[index][0] < end:
            if self.ranges[index][1] > start:
                found.append(max(self.ranges[index][0], start))
            index += 1
        return found

    # -- building the page ----------------------------------------------------------------------------

    def _find(self, tokens: Sequence[Token]) -> None:
        page = _Page(self.text, self.lines)
        row_cursor: int | None = None
        for index, token in enumerate(tokens):
            if token.type == "tr_open" and token.map is not None:
                row_cursor = self.lines.start(token.map[0])
            elif token.type == "tr_close":
                row_cursor = None
            if token.type == "inline" and token.map is not None:
                content = self._inline(page, token)
                self._contents[id(token)] = content
                if row_cursor is not None:
                    # A cell is looked for after the cells before it in its row.
                    content.start = row_cursor
                    offsets = _align(self.text, self.lines, content)
                    if offsets and not content.failed:
                        row_cursor = offsets[-1] + 1
            elif token.type == "html_block" and token.map is not None:
                self._html_block(page, token)
            elif token.type in ("fence", "code_block") and token.map is not None:
                page.parts.append("<pre><code>")
                content = _Content(self.text[self.lines.start(token.map[0]):self.lines.end(token.map[1] - 1)],
                                   token.map[0], token.map[1])
                content.offsets = list(range(self.lines.start(token.map[0]),
                                             self.lines.start(token.map[0]) + len(content.text)))
                page.pieces.append(_Piece(content, 0, len(content.text), [page.anchor()]))
                page.parts.append("</code></pre>")
            elif token.type != "inline":
                page.parts.append(_RENDERER.renderer.renderToken(tokens, index, _RENDERER.options, {}))
        page.parts.append("</body></html>")
        if not page.pieces:
            return
        hidden_anchors = self._hidden_anchors(page)
        ranges = []
        for piece in page.pieces:
            if piece.start >= piece.end:
                continue
            hidden = [anchor in hidden_anchors for anchor in piece.anchors]
            if piece.always or (hidden and all(hidden)):
                ranges.append(_span(self.text, self.lines, piece))
            elif any(hidden):
                parts = self._hidden_parts(piece, hidden_anchors) if piece.parts else None
                ranges.extend(parts if parts is not None else [_span(self.text, self.lines, piece)])
        self.ranges = merge_ranges(ranges)

    def _hidden_parts(self, piece: _Piece, hidden_anchors: set[int]) -> list[tuple[int, int]] | None:
        """File ranges of the hidden text tokens of a piece, found in order in its content; None when one
        cannot be found (the whole piece is cut then)."""
        content = piece.content
        offsets = _align(self.text, self.lines, content)
        if content.failed:
            return None
        text = content.text
        cursor = piece.start
        ranges = []
        for anchor, value in piece.parts:
            first = last = None
            for char in value:
                while cursor < piece.end and not (text[cursor] == char or (char.isspace() and text[cursor].isspace())):
                    cursor += 1
                if cursor >= piece.end:
                    return None
                first = cursor if first is None else first
                last = cursor
                cursor += 1
            if first is not None and anchor in hidden_anchors:
                ranges.append((offsets[first], offsets[last] + 1))
        return ranges

    def _hidden_anchors(self, page: _Page) -> set[int]:
        markup = "".join(page.parts)
        root = lxml.html.document_fromstring(markup, parser=lxml.html.HTMLParser(huge_tree=True))
        visibility = Visibility(root, either_scheme=True)  # a Markdown viewer keeps its own colour scheme
        seen: set[int] = set()
        state: dict[int, bool] = {}
        parents: dict[int, etree._Element] = {}
        for comment in root.iter(etree.Comment):
            match = _ANCHOR_RE.match(comment.text or "")
            if match is None:
                continue
            number = int(match[1])
            parent = comment.getparent()
            # Each anchor is written once: one met twice was written by the file too -- hidden (fail closed).
            state[number] = number in seen or parent is None or visibility.text_hidden(parent) is not None
            seen.add(number)
            if parent is not None:
                parents[number] = parent
        for element in root.iter(etree.Element):
            value = element.get(page.anchor_attribute)
            if value is not None and value.isdigit():
                state[int(value)] = int(value) in seen or visibility.text_hidden(element) is not None
                seen.add(int(value))
        hidden = {number for number, is_hidden in state.items() if is_hidden}
        hidden |= set(range(page.anchors)) - seen  # an anchor the HTML parser dropped: fail closed
        # A formatting element left open: a browser rebuilds it, with its style, in every block that
        # follows up to its end tag; libxml2 closes it with its block. Its hiding goes that far.
        for index, tag in enumerate(page.tags):
            element = parents.get(tag.after)
            if tag.closing or tag.name not in _FORMATTING or element is None or element.tag != tag.name:
                continue
            outer = element.getparent()
            if visibility.text_hidden(element) is None or (outer is not None and visibility.text_hidden(outer)):
                continue  # only a formatting element that hides by itself carries the hiding on
            depth = 0
            for later in page.tags[index + 1 :]:
                if later.name == tag.name:
                    depth += -1 if later.closing else 1
                    if depth < 0:
                        last = later.after
                        break
            else:
                last = page.anchors
            hidden |= set(range(tag.after, last))
        return hidden

    def _inline(self, page: _Page, token: Token) -> _Content:
        content = _Content(token.content, token.map[0], token.map[1])
        if not self._styled and ("<" not in content.text or (
                _MAY_HIDE_RE.search(content.text) is None and _VALUED_TAG_RE.search(content.text) is None
                and not (page.hiding_formatting and _FORMATTING_END_RE.search(content.text)))):
            # No style sheet, and no tag here that can hide (or be removed) by itself or carries an
            # attribute value: its tags, if any, change nothing (at worst a closing tag would end a hidden element early: hiding more).
            page.pieces.append(_Piece(content, 0, len(content.text), [page.anchor()]))
            return content
        children = _inline_children(content.text)
        if children is None:  # too long to parse: its tags found by the tag pattern alone
            self._inline_scanned(page, content)
            return content
        piece = _Piece(content, 0, len(content.text), [page.anchor()])
        page.pieces.append(piece)
        for index, child in enumerate(children):
            if child.type == "html_inline" and "span" in child.meta:
                start, end = child.meta["span"]
                piece.end = start
                source = child.content
                if page.raw is not None:
                    # Inside a raw-text element a tag or a comment is its text (fourteenth session: its characters
                    # were in no piece, so what an inner tag's attributes or a comment held stayed even where the
                    # element was hidden, or never shown -- a script): judged as the element's text.
                    name = _TAG_NAME_RE.match(source)
                    inside = page.anchors - 1  # the element's anchor (its start tag's attribute, or after it)
                    never = page.raw in _NEVER_SHOWN
                    if name and name[1] and name[2].lower() == page.raw:
                        page.parts.append(source)
                        page.raw = None
                        page.pieces.append(_Piece(content, start, end, [inside, page.anchor()], always=never))
                    else:
                        page.parts.append(source.replace("<", "&lt;") if page.raw != "style" else source)
                        page.pieces.append(_Piece(content, start, end, [inside], always=never))
                elif source.startswith(("<!", "<?")):
                    if _drop_or_keep(source):
                        page.pieces.append(_Piece(content, start, end, always=True))
                else:
                    page.tag(content, start, end, source)
                    match = _TAG_NAME_RE.match(source)
                    if match and not match[1] and match[2].lower() in _RAW_TEXT:
                        page.raw = match[2].lower()
                # The text after a tag has the tag's after-anchor (inside the element a start tag opens).
                piece = _Piece(content, end, len(content.text), [page.anchors - 1],
                               always=page.raw in _NEVER_SHOWN)
                page.pieces.append(piece)
            elif page.raw is not None:
                page.parts.append(child.content if page.raw == "style" else "")
            elif child.type in ("text", "softbreak", "code_inline"):
                if child.type == "code_inline":
                    page.parts.append("<code>")
                anchor = page.anchor()
                piece.anchors.append(anchor)
                piece.parts.append((anchor, child.content))
                if child.type == "code_inline":
                    page.parts.append("</code>")
            elif child.type == "hardbreak":
                page.parts.append("<br>")
            elif child.type == "image":
                page.parts.append("<img>")
                anchor = page.anchor()
                piece.anchors.append(anchor)
                piece.parts.append((anchor, child.content))
            else:
                page.parts.append(_RENDERER.renderer.renderToken(children, index, _RENDERER.options, {}))
        if page.raw is not None:
            page.parts.append(f"</{page.raw}>")
            page.raw = None
        return content

    def _inline_scanned(self, page: _Page, content: _Content) -> None:
        piece = _Piece(content, 0, len(content.text), [page.anchor()])
        page.pieces.append(piece)
        for match in HTML_TAG_RE.finditer(content.text):
            start, end = match.span()
            piece.end = start
            source = match[0]
            if source.startswith(("<!", "<?")):
                if _drop_or_keep(source):
                    page.pieces.append(_Piece(content, start, end, always=True))
            else:
                page.tag(content, start, end, source)
            piece = _Piece(content, end, len(content.text), [page.anchors - 1])
            page.pieces.append(piece)

    def _html_block(self, page: _Page, token: Token) -> None:
        source = token.content
        if access_markers.looks_like_marker(source):
            return  # a region marker alone on its line (the parser refuses any other): never text
        content = _Content(source.rstrip("\n"), token.map[0], token.map[1])
        text = content.text
        position = 0
        while position < len(text):
            match = _PIECE_RE.search(text, position)
            start = match.start() if match else len(text)
            if start > position:
                page.pieces.append(_Piece(content, position, start, [page.anchor()]))
            if match is None:
                break
            end = match.end()
            if match["comment"] or match["declaration"] or match["bogus"]:
                if _drop_or_keep(match[0]):
                    page.pieces.append(_Piece(content, start, end, always=True))
                position = end
                continue
            name = (match["start"] or match["end"]).lower()
            if match["start"] and name in _RAW_TEXT:
                close = _RAW_END[name].search(text, end)
                element_end = text.find(">", close.end() - 1) + 1 if close else len(text)
                element_end = element_end if element_end > 0 else len(text)
                page.raw_element(content, start, element_end, name, text[start:element_end], end - start)
                position = element_end
                continue
            page.tag(content, start, end, match[0])
            position = end


def hidden_ranges(text: str, tokens: Sequence[Token], lines: LineIndex | None = None,
                  references: Sequence[tuple[int, int]] = ()) -> MarkdownHidden:
    """The hidden characters of Markdown ``text`` parsed into block ``tokens`` (see :class:`MarkdownHidden`);
    ``references``: the line spans of its link reference definitions (:func:`recording_references`)."""
    return MarkdownHidden(text, tokens, lines, references)


REFERENCES_ENV_KEY = "bulkhead_reference_lines"
FOOTNOTES_ENV_KEY = "bulkhead_footnote_lines"
_CITATION_RE = re.compile(r"\[\^([^\]\s]+)\]")
_DEFINITION_RE = re.compile(r"^ {0,3}\[\^([^\]\s]+)\]:", re.MULTILINE)


def uncited_footnotes(text: str, tokens: Sequence[Token], lines: LineIndex,
                      recorded: Sequence[tuple[int, int, str]] = ()) -> list[tuple[int, int]]:
    """The line spans ``(first, last)`` (last exclusive) of the footnote definitions that nothing in ``text``
    cites: GitHub renders a footnote only where the text cites it (``[^label]``, any case), so an uncited one is
    shown to no reader (found attacking the demo: its text reached the model). A definition is one this
    CommonMark reader took for a link reference (``recorded``, :func:`recording_references`) or a top-level
    paragraph that starts ``[^label]:``, with the indented blocks that continue it. A definition's own label does
    not cite it; a citation hidden in a comment still does (kept: the safe side is to show)."""
    blocks = [t for t in tokens if t.level == 0 and t.map and t.nesting >= 0]
    starts = [(first, last, label) for first, last, label in recorded]
    for token in blocks:
        match = _DEFINITION_RE.match(lines.line(token.map[0])) if token.type == "paragraph_open" else None
        if match is not None:
            starts.append((token.map[0], token.map[1], match.group(1)))
    if not starts:
        return []
    definitions = []
    for first, last, label in starts:
        for after in blocks:  # its indented continuations, after blank lines: code blocks to CommonMark
            if after.map[0] < last:
                continue
            if after.type != "code_block" or any(lines.line(n).strip() for n in range(last, after.map[0])):
                break
            last = after.map[1]
        definitions.append((first, last, label))
    own = {m.start(0) + m.group(0).index("[") for m in _DEFINITION_RE.finditer(text)}
    cited = {m.group(1).casefold() for m in _CITATION_RE.finditer(text) if m.start() not in own}
    return [(first, last) for first, last, label in definitions if label.casefold() not in cited]


def recording_references(md: MarkdownIt) -> MarkdownIt:
    """``md`` whose block parser records the line span ``(first, last)`` (last exclusive) of every link
    reference definition in ``env[REFERENCES_ENV_KEY]``. A definition renders to nothing -- ``[//]: # (...)``
    is the usual way to write a comment in Markdown, and an unused ``[x]: url "title"`` shows not even a
    tooltip -- yet the file is kept as written, so its text reached the model (found attacking the demo).
    Footnote definitions (``[^1]: ...``), which GitHub renders where they are cited, are recorded apart with
    their label in ``env[FOOTNOTES_ENV_KEY]`` (:func:`uncited_footnotes`)."""
    from markdown_it.rules_block import reference

    def recording(state, start_line: int, end_line: int, silent: bool) -> bool:
        if not reference(state, start_line, end_line, silent):
            return False
        # ``[^label]: text`` is a footnote where footnotes are rendered (GitHub): shown where the text cites it
        # (:func:`uncited_footnotes`).
        begin = state.bMarks[start_line] + state.tShift[start_line]
        footnote = state.src.startswith("[^", begin)
        if not silent and not footnote:
            state.env.setdefault(REFERENCES_ENV_KEY, []).append((start_line, state.line))
        elif not silent:
            label = state.src[begin + 2:state.src.find("]", begin)]
            state.env.setdefault(FOOTNOTES_ENV_KEY, []).append((start_line, state.line, label))
        return True

    md.block.ruler.at("reference", recording)
    return md
