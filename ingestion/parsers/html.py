"""HTML: extracted text with structure and ``data-access`` policies, via lxml.

The document text is text *extracted* from the page (offsets point into it, not
into the HTML): headings on their own line, then blocks separated by blank lines.

* Parsed with lxml (libxml2): fast on multi-megabyte pages and it records each
  element's source line.  libxml2 refuses nesting deeper than ~2,000 elements and
  would then silently drop content, so that is a :class:`ParseError` here.  The
  walk over the tree is iterative.  BeautifulSoup only finds a declared charset.
* Dropped: ``script style nav aside noscript template head`` and friends, and
  ``header``/``footer`` unless inside ``article``/``section``/``main`` (there they
  usually hold the article's own title or notes, not site chrome).
* ``h1``-``h6`` open heading sections as in Markdown.  ``section`` and ``article``
  are scopes: headings inside them stay inside them.  When a container's first
  child element is a heading, the container *is* that heading's section.
* ``data-access="LEVEL"`` (and optional ``data-groups="a b"``) on any element give
  its subtree a policy: on a heading, the heading's section; on any other element,
  a section of kind ``region`` around exactly that subtree (a block boundary is
  forced at its edges).  ``data-groups`` without ``data-access``, an unknown level,
  a bad group name, or ``data-access`` inside a heading, table or ``pre`` (where it
  cannot be honoured) fail the document with the source line.  A Markdown-style
  ``<!-- access -->`` comment fails it too (anywhere, near misses included): in
  HTML the marker is the attribute.  Attribute names are case-insensitive in HTML,
  so ``data-Access`` *is* ``data-access``; a near miss (``data-acess``,
  ``data-group``, ``data-access-level``, a bare ``access=``, an invisible character
  in the name, see :func:`~ingestion.parsers.access_markers.attribute_marker_kind`)
  fails the document, as does ``data-access`` given twice on one element.
* The tree builder closes elements the source leaves open -- ``<p>`` before a
  block such as ``<ul>`` or ``<div>``, an ``<li>`` at the next ``<li>`` -- and so
  can move content the author wrote inside a ``data-access`` element out of it.
  Whenever the markup has ``data-access``/``data-groups``, it is read a second
  time as written (every start tag nesting until its own end tag, or the end tag
  of an element around it) and each such element must hold in the tree at least
  the text it holds in the source; otherwise the document fails with the line of
  its start tag.  Close such elements explicitly and put block content in a
  ``<div>`` or ``<section>``, not a ``<p>``/``<span>``.
* Whether a ``data-access`` only narrows what encloses it is checked by
  :func:`~ingestion.structure.resolve_policies`.
* Paragraph-like elements give ``prose`` blocks; each top-level ``li`` one
  ``list_item`` block holding its nested items; ``pre`` a ``code`` block.
* ``table`` gives a child section of kind ``table``: caption line, header line and
  one line per data row (cells joined by `` | ``); the data rows are its blocks
  (``table_row``, not joinable, ``embed_text`` = ``Column: value | ...``).
"""

from __future__ import annotations

import html as html_module
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import lxml.html
from bs4.dammit import EncodingDetector
from lxml import etree

from accounts.policy import Policy
from ingestion.parsers import access_markers
from ingestion.parsers.css_visibility import Visibility
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import SectionTreeBuilder
from ingestion.parsers.tables import SEPARATOR, clean_cell, column_names, serialize_row
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import counted
from ingestion.structure import Block, ParsedDocument, ParseError

_DROPPED = frozenset({
    "script", "style", "nav", "aside", "noscript", "template", "head", "svg", "math", "canvas", "iframe",
    "object", "embed", "map", "audio", "video", "picture",
})
_CHROME = frozenset({"header", "footer"})
_CONTENT_ROOTS = frozenset({"article", "section", "main"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_CONTAINERS = frozenset({"section", "article"})
_BLOCK_TAGS = frozenset({
    "address", "article", "blockquote", "body", "caption", "dd", "details", "dialog", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "footer", "form", "header", "hgroup", "hr", "html", "li", "main",
    "ol", "p", "section", "summary", "ul", "tr", "td", "th", "tbody", "thead", "tfoot",
})
_INLINE_TAGS = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "del", "dfn", "em", "i", "ins", "kbd", "mark", "q",
    "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var",
})
_NEWLINE = None  # a forced line break in the inline buffer
_MAX_DEPTH_HINT = 2000  # libxml2's limit (2048) minus html/body and some slack, for the message

Element = etree._Element
_MAX_INDENT = 8  # nested list items are indented, up to this depth (10,000 levels stay linear)


@dataclass
class _Event:
    kind: str
    args: dict[str, Any] = field(default_factory=dict)


class _Extractor:
    """One iterative pass over the tree: extracted text plus structure events.

    Text a reader does not see (``visibility``, :mod:`~ingestion.parsers.css_visibility`) is
    left out and counted: a ``hidden`` event adds its characters to the section open there.
    """

    def __init__(self, visibility: Visibility | None = None) -> None:
        self.visibility = visibility
        self.parts: list[str] = []
        self.pos = 0
        self.events: list[_Event] = []
        self.buffer: list[str | None] = []
        self.list_item_depth = 0  # > 0 while inside a top-level <li>
        self.list_counters: list[int | None] = []  # per open ul/ol inside the item: None (ul) or next number
        self.first_h1: str | None = None
        self.scopes: dict[Element, dict[str, Any]] = {}  # a folded heading's container scope (its section's event)
        self.li_nesting = 0  # open <li> elements
        self.content_roots = 0  # open article/section/main elements
        # Held in sets, lxml keeps handing out the same proxy objects for these elements.
        self.scoped: set[Element] = set()
        self.folded: set[Element] = set()

    # -- output ------------------------------------------------------------------

    def emit(self, text: str) -> tuple[int, int]:
        """Append ``text`` as its own paragraph; return its span."""
        start = self.pos
        self.parts.append(text)
        self.parts.append("\n\n")
        self.pos += len(text) + 2
        return start, start + len(text)

    def flush(self) -> None:
        """Turn the inline buffer into a block (prose, or list_item inside an item)."""
        if not self.buffer:
            return
        lines, current = [], []
        for piece in self.buffer:
            if piece is _NEWLINE:
                lines.append("".join(current))
                current = []
            else:
                current.append(piece)
        lines.append("".join(current))
        self.buffer = []
        if self.list_item_depth:
            # Keep the leading indent of nested items, collapse the rest.
            cleaned = []
            for line in lines:
                body = " ".join(line.split())
                if body:
                    indent = len(line) - len(line.lstrip(" "))
                    cleaned.append(" " * indent + body)
            text, kind = "\n".join(cleaned), "list_item"
        else:
            text, kind = "\n".join(body for line in lines if (body := " ".join(line.split()))), "prose"
        if text:
            start, end = self.emit(text)
            self.events.append(_Event("block", {"start": start, "end": end, "kind": kind}))

    # -- the walk ----------------------------------------------------------------

    def walk(self, root: Element) -> None:
        # Text order: an element's .text, its children, then its .tail (which belongs to the parent).
        stack: list[tuple[Element, bool]] = [(root, True)]
        while stack:
            node, entering = stack.pop()
            if not entering:
                self.exit(node)
                self.text(node.tail, node.getparent())
            elif not isinstance(node.tag, str):  # comment, processing instruction, entity
                _check_comment(node)
                self.hide(node.text if isinstance(node, etree._Comment) else None)
                self.text(node.tail, node.getparent())
            elif self.enter(node):
                self.text(node.text, node)
                children = list(node)
                if all(_is_plain_leaf(child) for child in children):
                    # Fast path for the common paragraph of text and inline markup.
                    for child in children:
                        self.text(child.text, child)
                        self.text(child.tail, node)
                    self.exit(node)
                    self.text(node.tail, node.getparent())
                    continue
                stack.append((node, False))
                stack.extend([(child, True) for child in reversed(children)])
            else:
                if node.tag == "template":
                    self.hide(node.text_content())
                self.text(node.tail, node.getparent())

    def text(self, value: str | None, owner: Element | None) -> None:
        """Text directly inside ``owner``: into the buffer when a reader sees it, else counted."""
        if not value:
            return
        if self.visibility is not None and owner is not None and self.visibility.text_hidden(owner):
            self.hide(value)
        else:
            self.buffer.append(value)

    def hide(self, value: str | None) -> None:
        count = counted(value) if value else 0
        if count:
            self.events.append(_Event("hidden", {"count": count}))

    def element_text(self, tag: Element, *, where: str, collapse: bool = True, count: bool = True) -> str:
        """The visible text of ``tag``'s subtree (:func:`_element_text`); the rest counted when ``count``."""
        hidden: list[str] = []
        text = _element_text(tag, where=where, collapse=collapse, visibility=self.visibility, hidden=hidden)
        if count:
            for value in hidden:
                self.hide(value)
        return text

    def enter(self, tag: Element) -> bool:
        """Handle a start tag; False when its subtree was consumed (or dropped) here."""
        name = tag.tag
        if name in _DROPPED or (name in _CHROME and not self.content_roots):
            return False
        if name == "input":  # a void element: what its box shows, judged as the input's own text
            shown, unseen = input_text(tag)
            self.text(shown, tag)
            self.hide(unseen)
            return False
        if name == "option":  # options are listed apart (a closed select shows one, its list the rest)
            self.buffer.append(" ")
        policy = _policy(tag)
        if name in _HEADINGS:
            self.heading(tag, policy)
            return False
        scoped = policy is not None or name in _CONTAINERS
        if scoped:
            self.open_scope(tag, policy)
        if name in ("pre", "table"):
            self.pre(tag) if name == "pre" else self.table(tag)
            if scoped:
                self.close_scope()
            return False
        if scoped:
            self.scoped.add(tag)
        if name in _CONTENT_ROOTS:
            self.content_roots += 1
        if name == "li":
            self.li_nesting += 1
            if self.list_item_depth:
                self.buffer.append(_NEWLINE)
                depth = min(len(self.list_counters), _MAX_INDENT)
                marker = "  " * max(depth - 1, 0) + self.list_marker()
                if self.visibility is None or not self.visibility.text_hidden(tag):
                    self.buffer.append(marker)
            else:
                self.flush()
                self.list_item_depth = 1
                marker = self.list_marker()
                if self.visibility is None or not self.visibility.text_hidden(tag):
                    self.buffer.append(marker)
        elif name in ("ul", "ol") and self.list_item_depth:
            self.list_counters.append(1 if name == "ol" else None)
        elif name in ("ul", "ol"):
            self.list_counters = [1 if name == "ol" else None]
        elif name == "br":
            self.buffer.append(_NEWLINE)
        elif name in _BLOCK_TAGS:
            if self.list_item_depth:
                self.buffer.append(_NEWLINE)
            else:
                self.flush()
        return True

    def exit(self, tag: Element) -> None:
        name = tag.tag
        if name == "option":
            self.buffer.append(" ")
        if name in _CONTENT_ROOTS:
            self.content_roots -= 1
        if name == "li":
            self.li_nesting -= 1
            if self.list_item_depth and not self.li_nesting:
                self.flush()
                self.list_item_depth = 0
        elif name in ("ul", "ol"):
            if self.list_counters:
                self.list_counters.pop()
            if self.list_item_depth:
                self.buffer.append(_NEWLINE)
        elif name in _BLOCK_TAGS:
            if self.list_item_depth:
                self.buffer.append(_NEWLINE)
            else:
                self.flush()
        if tag in self.scoped:
            self.close_scope()

    def list_marker(self) -> str:
        if self.list_counters and self.list_counters[-1] is not None:
            number = self.list_counters[-1]
            self.list_counters[-1] = number + 1
            return f"{number}. "
        return "- "

    # -- structure ---------------------------------------------------------------

    def open_scope(self, tag: Element, policy: Policy | None) -> None:
        # A scope's edges are block boundaries, even inside a paragraph or list item.
        self.flush()
        args: dict[str, Any] = {"start": self.pos, "line": _line(tag), "policy": policy,
                                "kind": "region" if policy is not None else "prose", "title": "", "level": None}
        first = _first_child_element(tag) if tag.tag in _CONTAINERS else None
        if first is not None and first.tag in _HEADINGS and _policy(first) is None:
            title = self.element_text(first, where="a heading", count=False)  # counted by heading()
            args.update(kind="heading", title=title, level=_HEADINGS[first.tag])
            self.folded.add(first)
            self.scopes[first] = args
        self.events.append(_Event("open_scope", args))

    def close_scope(self) -> None:
        self.flush()
        self.events.append(_Event("close_scope", {"pos": self.pos}))

    def heading(self, tag: Element, policy: Policy | None) -> None:
        self.flush()
        hidden: list[str] = []
        title = _element_text(tag, where="a heading", visibility=self.visibility, hidden=hidden)
        first_h1 = tag.tag == "h1" and self.first_h1 is None and bool(title)
        if first_h1:
            self.first_h1 = title
        h1 = title if tag.tag == "h1" and title.strip() else ""  # a title candidate (ParsedDocument.title_candidates)
        start, end = self.emit(title) if title else (self.pos, self.pos)
        if tag not in self.folded:  # else its container already is its section
            self.events.append(_Event("heading", {"level": _HEADINGS[tag.tag], "title": title, "start": start,
                                                  "heading_end": end, "line": _line(tag), "policy": policy,
                                                  "first_h1": first_h1, "h1": h1}))
        else:
            if first_h1:
                self.scopes[tag]["first_h1"] = True  # its container's section bears the title
            if h1:
                self.scopes[tag]["h1"] = h1
        for value in hidden:  # a hidden heading (or part of one) is the heading section's hidden text
            self.hide(value)

    def pre(self, tag: Element) -> None:
        self.flush()
        text = self.element_text(tag, where="a pre block", collapse=False).strip("\n")
        if text.strip():
            start, end = self.emit(text)
            stripped_start = start + (len(text) - len(text.lstrip()))
            stripped_end = end - (len(text) - len(text.rstrip()))
            self.events.append(_Event("block", {"start": stripped_start, "end": stripped_end, "kind": "code"}))

    def table(self, tag: Element) -> None:
        self.flush()
        for element in tag.iterdescendants():
            _reject_policy_inside(element, "a table")
        rows = [row for row in tag.iter("tr") if next(row.iterancestors("table"), None) is tag]
        row_cells = [[cell for cell in row if cell.tag in ("td", "th")] for row in rows]
        hidden: list[str] = []

        def cell_text(cell: Element) -> str:
            return _element_text(cell, where="a table", visibility=self.visibility, hidden=hidden)

        cells = [[cell_text(cell) for cell in row] for row in row_cells]
        caption_tag = next((child for child in tag if child.tag == "caption"), None)
        caption = cell_text(caption_tag) if caption_tag is not None else ""
        header: list[str] = []
        if rows and (rows[0].getparent().tag == "thead" or all(cell.tag == "th" for cell in row_cells[0])):
            header = cells.pop(0)
        width = max([len(header)] + [len(row) for row in cells]) if (header or cells) else 0
        columns = column_names(header, width)
        start = self.pos
        if caption:
            self.emit(caption)
        if header:
            self.emit(SEPARATOR.join(clean_cell(cell) for cell in header))
        blocks = []
        for values in cells:
            line = SEPARATOR.join(clean_cell(cell) for cell in values).strip()
            if not line.replace("|", "").strip():
                continue
            row_start, row_end = self.emit(line)
            blocks.append(Block(start=row_start, end=row_end, kind="table_row", joinable=False,
                                embed_text=serialize_row(columns, values)))
        end = max(start, self.pos - 2)
        if end > start:
            self.events.append(_Event("leaf", {
                "kind": "table", "title": caption, "start": start, "end": end, "blocks": blocks,
                "line": _line(tag), "hidden": sum(counted(value) for value in hidden),
                "metadata": {"table": {"start": start, "end": end, "columns": columns, "caption": caption or None}},
            }))
        else:
            for value in hidden:  # a table with nothing visible: its hidden text is the enclosing section's
                self.hide(value)


def _is_plain_leaf(node: Element) -> bool:
    """An inline element with only text inside and no policy: its text can be taken as is."""
    return (
        node.tag in _INLINE_TAGS
        and len(node) == 0
        and node.get("data-access") is None
        and node.get("data-groups") is None
    )


def _tag(name: object) -> str:
    """A tag name for an error message, quoted: it is the document's text, which the API redacts in quotes."""
    return repr(f"<{name}>")


def _line(tag: Element | None) -> int | None:
    return tag.sourceline if tag is not None else None


def _check_comment(node: Element) -> None:
    if isinstance(node, etree._Comment) and access_markers.looks_like_marker_comment(node.text or ""):
        raise ParseError("access marker comment in HTML: use the data-access attribute", line=node.sourceline)


def _policy(tag: Element) -> Policy | None:
    level = tag.get("data-access")
    groups = tag.get("data-groups")
    if level is None:
        if groups is not None:
            raise ParseError(f"{_tag(tag.tag)} has data-groups without data-access: give the level too", line=_line(tag))
        return None
    line = _line(tag)
    return Policy(
        level=access_markers.parse_level(level, line=line, where="data-access level"),
        groups=access_markers.parse_groups(groups, line=line, key="data-groups") if groups is not None else (),
    )


def _reject_policy_inside(tag: Element, where: str) -> None:
    if isinstance(tag.tag, str) and (tag.get("data-access") is not None or tag.get("data-groups") is not None):
        raise ParseError(f"data-access inside {where} cannot be honoured; put it on an enclosing element",
                         line=_line(tag))
    _check_comment(tag)


def _element_text(tag: Element, *, where: str, collapse: bool = True, visibility: Visibility | None = None,
                  hidden: list[str] | None = None) -> str:
    """Text of ``tag``'s subtree without dropped elements; fails on a policy inside it.

    With ``visibility``, text a reader does not see is left out (and appended to ``hidden``),
    comments and templates too.
    """
    parts: list[str] = []
    # Items are elements to expand or (text, element it is directly inside) to emit, popped in document order.
    stack: list[Element | tuple[str, Element | None]] = [tag]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            value, owner = node
            if visibility is not None and owner is not None and visibility.text_hidden(owner):
                if hidden is not None:
                    hidden.append(value)
            else:
                parts.append(value)
            continue
        if node is not tag:
            _reject_policy_inside(node, where)
            if node.tail:
                stack.append((node.tail, node.getparent()))
        if not isinstance(node.tag, str) or node.tag in _DROPPED:
            if hidden is not None and (isinstance(node, etree._Comment) or node.tag == "template"):
                hidden.append(node.text if isinstance(node, etree._Comment) else node.text_content())
            continue
        stack.extend(reversed(node))
        if node.tag == "br":
            stack.append(("\n", None))
        if node.text:
            stack.append((node.text, node))
    text = "".join(parts)
    return " ".join(text.split()) if collapse else text


def _first_child_element(tag: Element) -> Element | None:
    """The first child element, looking through ``header``/``hgroup`` wrappers; None if text comes first."""
    for _ in range(3):
        if tag.text and tag.text.strip():
            return None
        first = None
        for child in tag:
            if isinstance(child.tag, str):
                first = child
                break
            if child.tail and child.tail.strip():
                return None
        if first is None or first.tag not in ("header", "hgroup"):
            return first
        tag = first
    return None


def _check_marker_names(root: Element) -> None:
    """Fail on a marker comment or a near-miss policy attribute anywhere in the tree (dropped parts included)."""
    for node in [*root.itersiblings(preceding=True), *root.itersiblings(), *root.iter(etree.Comment)]:
        if isinstance(node, etree._Comment):
            _check_comment(node)
    checked: set[str] = set()
    for node in root.iter(etree.Element):
        names = node.keys()
        if node.tag in _MARKUP_AS_DATA and access_markers.find_marker_comment(node.text or "") is not None:
            raise ParseError(
                f"{_tag(node.tag)} holds what looks like an access marker comment, which is never read there (its "
                "content is a script, a style sheet or a title, not markup): move the marker to the page itself, "
                "or remove it", line=_line(node))
        if not names:
            continue
        for value in node.values():
            if "<" in value and access_markers.find_marker_comment(value) is not None:
                raise ParseError(
                    f"an attribute of {_tag(node.tag)} holds what looks like an access marker comment, which is never "
                    "read in an attribute: move the marker to the page itself, or remove it", line=_line(node))
        if node.get("data-access") is not None or node.get("data-groups") is not None:
            unread = _never_indexed(node)
            if unread is not None:
                where = "is" if unread is node else f"is inside {_tag(unread.tag)}, which is"
                raise ParseError(
                    f"{_tag(node.tag)} with data-access/data-groups {where} never indexed (not shown as page "
                    "content), so the policy would be ignored: put it on an element around the content it protects, "
                    "or remove it", line=_line(node))
        if node.tag == "meta" and any(access_markers.metadata_name_is_marker(node.get(name) or "")
                                      for name in _META_NAMES):
            raise ParseError(
                f"a {_tag('meta')} names what looks like an access marker (name=\"access\", \"groups\", "
                "\"DC.accessRights\"...), which is never read: access is set with data-access on the page's elements, "
                "or remove it", line=_line(node))
        for name in names:
            if name in checked:
                continue
            if access_markers.attribute_marker_kind(name) == "near":
                raise ParseError(
                    f"{_tag(node.tag)} has attribute {name!r}, which looks like an access attribute but is not one: "
                    "the attributes are exactly data-access=\"LEVEL\" and data-groups=\"a b\"",
                    line=_line(node),
                )
            checked.add(name)
    for node in root.iter(*_LITERAL_MARKUP):
        text = node.text_content()
        if access_markers.looks_like_marker(text) or access_markers.find_policy_attribute(text) is not None:
            raise ParseError(
                f"{_tag(node.tag)} shows markup as text, and it holds what looks like an access marker or attribute, "
                "which would be shown and not applied: put the content in ordinary elements with data-access, "
                "or remove it", line=_line(node))


# The attributes of <meta> that name its value (HTML, RDFa, microdata).
_META_NAMES = ("name", "property", "http-equiv", "itemprop")


def _never_indexed(node: Element) -> Element | None:
    """``node`` or the ancestor of it that the walk drops whole (``<template>``, ``<noscript>``, ``<head>``, page
    chrome outside a content root...), else None. Found closing the markers' open gaps (2026-12-03): a policy
    there was ignored without a word."""
    for element in (node, *node.iterancestors()):
        if element.tag in _DROPPED:
            return element
        if element.tag in _CHROME and not any(a.tag in _CONTENT_ROOTS for a in element.iterancestors()):
            return element
    return None


# Elements whose content is text that is not markup, where a marker comment is never read (found attacking the
# markers, 2026-12-03: "<script>// <!-- access: restricted --></script>" passed silently).
_MARKUP_AS_DATA = frozenset({"script", "style", "title"})

# Elements whose content is shown as text even when it is markup ("<xmp><div data-access=...>").
_LITERAL_MARKUP = ("xmp", "plaintext", "textarea", "noembed", "noframes", "iframe")

# Elements that never have content or an end tag.
_VOID_ELEMENTS = frozenset({
    "area", "base", "basefont", "bgsound", "br", "col", "command", "embed", "frame", "hr", "image", "img",
    "input", "isindex", "keygen", "link", "meta", "param", "source", "track", "wbr",
})
_POLICY_ATTRIBUTES = ("data-access", "data-groups")
_POLICY_ATTRIBUTE_RE = re.compile(r"data-(?:access|groups)", re.IGNORECASE)


def _visible_length(text: str | None) -> int:
    return len("".join(text.split())) if text else 0


# Policy elements nested deeper than this are refused: checking each one costs its subtree.
_MAX_POLICY_NESTING = 64


@dataclass
class _Extent:
    """An element with a policy attribute and how much text (non-whitespace characters) it holds."""

    tag: str
    line: int | None
    length: int = 0


# One token of HTML as the HTML5 tokenizer (libxml2 >= 2.14) splits it; text is what lies between tokens.
_TOKEN_RE = re.compile(
    r"""
      <!--->|<!-->|<!--.*?(?:--!?>|\Z)                              # comments
    | <[!?][^>]*>?                                                  # doctype, CDATA, processing instruction
    | </(?:(?P<end>[A-Za-z][^\s/>]*)[^>]*>?|[^A-Za-z][^>]*>?)        # end tag, or a bogus comment
    | <(?P<start>[A-Za-z][^\s/>]*)
       (?P<attributes>(?:[\s/]+|[^\s/>][^\s/>=]*(?:\s*=\s*(?:"[^"]*(?:"|\Z)|'[^']*(?:'|\Z)|[^\s>]*))?)*)
       (?:>|\Z)                                                     # start tag
    """,
    re.DOTALL | re.VERBOSE,
)
_ATTRIBUTE_RE = re.compile(r"""([^\s/>][^\s/>=]*)(?:\s*=\s*(?:"[^"]*"?|'[^']*'?|[^\s>]*))?""")
# Elements whose content is text up to their end tag (HTML5 raw text and RCDATA elements).
_RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"})
_RAW_TEXT_END: dict[str, re.Pattern] = {name: re.compile(rf"</{name}[\s/>]", re.IGNORECASE) for name in _RAW_TEXT}


class _AsWritten:
    """The markup read as written: a start tag nests until its own end tag (or the end tag of an element
    around it, or the end of the file).  Measures the text inside each element with a policy attribute.

    A small tokenizer after the HTML5 rules libxml2 follows (comments, raw text elements
    such as ``script``, attribute quoting, character references); only the nesting differs:
    nothing is closed implicitly.
    """

    def __init__(self, markup: str) -> None:
        self.markup = markup
        self.stack: list[tuple[str, _Extent | None]] = []
        self.open_names: Counter[str] = Counter()  # how many of each element are on the stack
        self.open: list[tuple[_Extent, int]] = []  # open elements with a policy (and first piece), innermost last
        self.extents: list[_Extent] = []
        self.pieces: list[str] = []  # text met while a policy element is open
        self._line_pos = 0
        self._line = 1

    def line_at(self, pos: int) -> int:
        """1-based line of offset ``pos`` (calls come in increasing order)."""
        self._line += self.markup.count("\n", self._line_pos, pos)
        self._line_pos = pos
        return self._line

    def data(self, start: int, end: int) -> None:
        if self.open and end > start:
            self.pieces.append(self.markup[start:end])

    def close_extent(self) -> None:
        extent, first = self.open.pop()
        text = "".join(self.pieces[first:])
        extent.length = _visible_length(html_module.unescape(text) if "&" in text else text)
        if not self.open:
            self.pieces.clear()

    def read(self) -> list[_Extent]:
        markup = self.markup
        pos = 0
        while pos < len(markup):
            match = _TOKEN_RE.search(markup, pos)
            if match is None:
                break
            self.data(pos, match.start())
            pos = match.end()
            if match["end"]:
                self.end_tag(match["end"].lower())
            elif match["start"]:
                name = match["start"].lower()
                attributes = match["attributes"]
                self.start_tag(name, attributes, match.start())
                if name == "plaintext":
                    break
                if name in _RAW_TEXT:
                    close = _RAW_TEXT_END[name].search(markup, pos)
                    text_end = close.start() if close else len(markup)
                    self.data(pos, text_end)
                    pos = text_end
        self.data(pos, len(markup))
        while self.open:
            self.close_extent()
        return self.extents

    def start_tag(self, name: str, attributes: str, offset: int) -> None:
        extent = None
        if "-" in attributes and _POLICY_ATTRIBUTE_RE.search(attributes):
            names = [attribute.lower() for attribute in _ATTRIBUTE_RE.findall(attributes)]
            if any(attribute in _POLICY_ATTRIBUTES for attribute in names):
                line = self.line_at(offset)
                for attribute in _POLICY_ATTRIBUTES:
                    if names.count(attribute) > 1:
                        raise ParseError(f"{_tag(name)} has {attribute} more than once (HTML keeps only the first): "
                                         "give it once", line=line)
                if name in _VOID_ELEMENTS:
                    raise ParseError(f"data-access/data-groups on the void element {_tag(name)}: it holds no text, "
                                     "so the policy would protect nothing; put it on an element around the content",
                                     line=line)
                if attributes.rstrip().endswith("/"):
                    raise ParseError(f"data-access on a self-closing {_tag(name + '/')}: HTML ignores '/>' here, so "
                                     "what follows would be inside it; close the element explicitly", line=line)
                extent = _Extent(tag=name, line=line)
                self.extents.append(extent)
        if name in _VOID_ELEMENTS:
            return  # no content
        self.stack.append((name, extent))
        self.open_names[name] += 1
        if extent is not None:
            if len(self.open) >= _MAX_POLICY_NESTING:
                raise ParseError(f"data-access elements nested more than {_MAX_POLICY_NESTING} deep",
                                 line=extent.line)
            self.open.append((extent, len(self.pieces)))

    def end_tag(self, name: str) -> None:
        if not self.open_names[name]:
            return  # a stray end tag closes nothing (known without a walk down the stack: linear overall)
        while True:
            popped, extent = self.stack.pop()
            self.open_names[popped] -= 1
            if extent is not None:
                self.close_extent()
            if popped == name:
                return


# Formatting elements: HTML5 keeps them "active" past the end of their block and rebuilds them in every
# block that follows, up to their own end tag; libxml2 closes them with their block.
_FORMATTING = ("a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u")


def _check_carried_formatting(markup: str, root: Element, visibility: Visibility) -> None:
    """Fail when a formatting element that hides its text is left open past its block.

    A browser carries ``<b style="display:none">`` (any formatting element, see
    :data:`_FORMATTING`) left open at the end of a paragraph on to the text of the paragraphs
    after it, up to ``</b>``, and hides that text too; libxml2's tree ends it with its
    paragraph, so the text after it would be taken as seen. Such an element is found by
    comparing the text it holds in the tree with the text between its start tag and its own
    end tag as written (the end of the page when there is none).
    """
    hiding = [node for node in root.iter(*_FORMATTING)
              if visibility.text_hidden(node) and not (node.getparent() is not None
                                                       and visibility.text_hidden(node.getparent()))]
    if not hiding:
        return
    wanted = {(node.sourceline, node.tag) for node in hiding}
    # One pass over the markup: the text before each token (prefix sums), start tags of the wanted
    # (line, name) in order, and each one's own end tag.
    text_before = 0
    line = 1
    line_pos = 0
    open_tags: dict[str, list[tuple[tuple[int, str], int]]] = {}  # name -> (key, index into extents[key])
    # Per (line, name): each start tag's index into ``starts`` until its end tag, then the text it holds.
    extents: dict[tuple[int, str], list[int]] = {}
    starts: list[int] = []
    pos = 0
    while pos < len(markup):
        match = _TOKEN_RE.search(markup, pos)
        end_of_text = match.start() if match else len(markup)
        piece = markup[pos:end_of_text]
        text_before += _visible_length(html_module.unescape(piece) if "&" in piece else piece)
        if match is None:
            break
        pos = match.end()
        if match["end"]:
            name = match["end"].lower()
            if open_tags.get(name):
                key, index = open_tags[name].pop()
                extents[key][index] = text_before - starts[extents[key][index]]
        elif match["start"]:
            name = match["start"].lower()
            line += markup.count("\n", line_pos, match.start())
            line_pos = match.start()
            if name in _FORMATTING and (line, name) in wanted:
                key = (line, name)
                starts.append(text_before)
                extents.setdefault(key, []).append(len(starts) - 1)
                open_tags.setdefault(name, []).append((key, len(extents[key]) - 1))
            if name in _RAW_TEXT:
                close = _RAW_TEXT_END[name].search(markup, pos)
                text_end = close.start() if close else len(markup)
                text_before += _visible_length(markup[pos:text_end])
                pos = text_end
    for entries in open_tags.values():  # never closed: to the end of the page
        for key, index in entries:
            extents[key][index] = text_before - starts[extents[key][index]]
    seen: dict[tuple[int, str], int] = {}
    for node in root.iter(*_FORMATTING):
        key = (node.sourceline, node.tag)
        if key not in wanted:
            continue
        index = seen.get(key, 0)
        seen[key] = index + 1
        written = extents.get(key, [])
        held = _visible_length(etree.tostring(node, method="text", encoding="unicode", with_tail=False))
        if index >= len(written) or (node in hiding and held < written[index]):
            raise ParseError(
                f"{_tag(node.tag)} hides its text and is left open past the end of its block: a browser "
                f"carries it on to the text that follows, up to its end tag, and hides that too; close it "
                "where its hidden text ends", line=node.sourceline)


def _check_policy_extents(markup: str, root: Element) -> None:
    """Fail when the tree builder moved text the source puts inside a ``data-access`` element out of it.

    Both readings see the same text in the same order, so an element that holds fewer
    (non-whitespace) characters in the tree than in the source lost some of them to
    what follows it.
    """
    in_tree = [node for node in root.iter(tag=etree.Element)
               if any(node.get(name) is not None for name in _POLICY_ATTRIBUTES)]
    if not in_tree and not _POLICY_ATTRIBUTE_RE.search(markup):
        return
    written = _AsWritten(markup).read()
    for index, source in enumerate(written):
        if index >= len(in_tree) or in_tree[index].tag != source.tag:
            raise ParseError(
                f"{_tag(source.tag)} with data-access/data-groups is not kept as written by the HTML parser "
                "(misplaced, or inside an element whose content is not markup): move it",
                line=source.line,
            )
        node = in_tree[index]
        held = _visible_length(etree.tostring(node, method="text", encoding="unicode", with_tail=False))
        if held < source.length:
            raise ParseError(
                f"{_tag(source.tag)} with data-access/data-groups does not hold all of its content once parsed: "
                f"HTML closes {_tag(source.tag)} early (block content such as a list, table or <div> cannot be "
                f"inside <p> or <span>; an unclosed <li> or <p> ends at the next one), so part of it would "
                "lose the policy.  Close the element explicitly, or put the policy on a <div> or <section>",
                line=source.line,
            )
    if len(in_tree) > len(written):
        node = in_tree[len(written)]
        raise ParseError(f"{_tag(node.tag)} with data-access/data-groups could not be found in the source as written",
                         line=_line(node))


def decode_html(data: bytes) -> str:
    """UTF-8 (BOM stripped), else the charset the page declares; :class:`ParseError` otherwise."""
    try:
        return decode_text(data)
    except ParseError as utf8_error:
        if "invalid UTF-8" not in utf8_error.message:
            raise
        declared = EncodingDetector.find_declared_encoding(data, is_html=True)
        if not declared or declared.lower().replace("_", "-") in ("utf-8", "utf8"):
            raise
        try:
            return data.decode(declared)
        except (LookupError, UnicodeDecodeError):
            raise utf8_error from None


def refuse_deep_nesting(markup: str) -> None:
    """ParseError when ``markup`` nests deeper than libxml2 reads (for HTML read another way: an
    e-mail's body, whose tree walks cost quadratic time in the depth)."""
    parser = lxml.html.HTMLParser(huge_tree=True, remove_blank_text=False)
    try:
        lxml.html.document_fromstring(markup, parser=parser)
    except etree.ParserError:
        return  # nothing to read (e.g. only a comment)
    _refuse_if_too_deep(parser)


# Void elements (HTML5: never any content) that libxml2's HTML parser does not close: it nests the text and elements
# after them inside them, where a browser shows them after them.
_NESTED_VOIDS = ("embed", "source", "track", "wbr", "keygen", "bgsound", "image")


def _unnest_voids(root) -> None:
    """Move what libxml2 nested inside a void element (:data:`_NESTED_VOIDS`) out after it, as a browser builds the
    tree. Found in the twentieth session (attack20): ``<p>Body <embed src=x> words after</p>`` lost "words after",
    nested in the ``embed`` that the extractor drops, in a heading's title too."""
    for element in [e for e in root.iter(*_NESTED_VOIDS) if e.text or len(e)]:
        parent = element.getparent()
        if parent is None:
            continue
        children, tail = list(element), element.tail
        element.tail, element.text = element.text, None
        at = parent.index(element)
        for offset, child in enumerate(children, start=1):
            parent.insert(at + offset, child)  # moves it, with its own tail
        last = children[-1] if children else element
        last.tail = (last.tail or "") + (tail or "") or None


def _refuse_if_too_deep(parser) -> None:
    for error in parser.error_log:
        if error.type_name == "ERR_RESOURCE_LIMIT":
            raise ParseError(f"HTML nested too deeply (more than about {_MAX_DEPTH_HINT} levels): {error.message}",
                             line=error.line)


# Form controls (2026-12-04, checked in chromium 156): an <input> shows its value in its box when the value is text --
# a text field (no type, an unknown type, text, search, url, tel, email; a number only when it is a number, else the
# browser empties it) or a button (submit, reset, button: its label). A single-line field shows about ``size``
# characters (default 20; chromium drew 26 of a longer value at 20, 7 at 5): the rest is scrolled out of sight, and
# cut (fail closed). A password shows dots, a hidden input nothing, a checkbox, radio, file, colour, range or date
# input no text of the page. A placeholder is not read: drawn greyed only while the field is empty, and styled by
# ``::placeholder``, which this reader does not evaluate. A textarea's text, a button's content and the options'
# text are the elements' own text (an option with a label shows the label instead: its text is hidden,
# ``css_visibility``). The options a closed select does not show are kept, as a closed <details> is: the browser
# itself lists them on a click.
_TEXT_INPUTS = frozenset({"text", "search", "url", "tel", "email"})
_INPUT_TYPES = _TEXT_INPUTS | {"hidden", "password", "checkbox", "radio", "file", "image", "color", "range", "date",
                               "datetime-local", "month", "week", "time", "number", "submit", "reset", "button"}
_NUMBER_RE = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_DEFAULT_FIELD_SIZE = 20


def input_text(tag: Element) -> tuple[str, str]:
    """What an ``<input>`` shows of its value, and the rest of the value (which no reader sees)."""
    value = tag.get("value") or ""
    kind = (tag.get("type") or "").strip().lower()
    if kind in ("submit", "reset", "button"):
        return value, ""
    if kind not in _INPUT_TYPES:
        kind = "text"  # an unknown type is a text field
    if kind == "number":
        shown = value if _NUMBER_RE.fullmatch(value.strip()) else ""
        return shown, value if not shown else ""
    if kind not in _TEXT_INPUTS:
        return "", value
    value = value.replace("\r", "").replace("\n", "")  # a single-line field drops line breaks
    size = (tag.get("size") or "").strip()
    width = int(size) if size.isdigit() and 0 < int(size) < 10_000 else _DEFAULT_FIELD_SIZE
    return value[:width], value[width:]


def strip_hidden_html(markup: str, hidden: list[str]) -> str:
    """``markup`` re-serialised without the text a reader does not see (appended to ``hidden``), comments
    and templates: for HTML read another way (an e-mail's body), with the same rules as this parser."""
    if not markup.strip():
        return markup
    parser = lxml.html.HTMLParser(huge_tree=True, remove_blank_text=False)
    try:
        root = lxml.html.document_fromstring(markup, parser=parser)
    except etree.ParserError:
        return ""  # nothing to read (e.g. only a comment)
    _refuse_if_too_deep(parser)
    _unnest_voids(root)
    visibility = Visibility(root, either_scheme=True)  # a mail client may follow the message's colour scheme or not
    _check_carried_formatting(markup, root, visibility)
    removed = []
    for node in root.iter():
        if not isinstance(node.tag, str) or node.tag == "template":
            removed.append(node)
            hidden.append(node.text if isinstance(node, etree._Comment) else
                          node.text_content() if node.tag == "template" else "")
            continue
        if node.text and visibility.text_hidden(node):
            hidden.append(node.text)
            node.text = None
        parent = node.getparent()
        if node.tail and parent is not None and visibility.text_hidden(parent):
            hidden.append(node.tail)
            node.tail = None
    for node in removed:
        if node.getparent() is not None:
            node.drop_tree() if hasattr(node, "drop_tree") else node.getparent().remove(node)
    _controls_as_text(root, visibility, hidden)
    return lxml.html.tostring(root, encoding="unicode")


def _controls_as_text(root: Element, visibility: Visibility, hidden: list[str]) -> None:
    """An input as the text its box shows (a span), options apart: for HTML read another way (an e-mail)."""
    for node in list(root.iter("input", "option")):
        parent = node.getparent()
        if parent is None:
            continue
        if node.tag == "option":
            node.tail = " " + (node.tail or "")
            continue
        shown, unseen = input_text(node)
        if shown and visibility.text_hidden(node):
            shown, unseen = "", shown + unseen
        if unseen:
            hidden.append(unseen)
        span = node.makeelement("span", {})
        span.text, span.tail = (f" {shown} " if shown else None), node.tail
        parent.replace(node, span)


def parse_html_text(markup: str) -> ParsedDocument:
    """Parse already-decoded HTML; offsets index the returned document's extracted text."""
    if not markup.strip():
        return ParsedDocument(text="", sections=SectionTreeBuilder("").finish())
    parser = lxml.html.HTMLParser(huge_tree=True, remove_blank_text=False)
    try:
        root = lxml.html.document_fromstring(markup, parser=parser)
    except etree.ParserError as exc:  # e.g. a document of only a comment
        if "empty" in str(exc).lower():
            return ParsedDocument(text="", sections=SectionTreeBuilder("").finish())
        raise ParseError(f"invalid HTML: {exc}") from None
    _refuse_if_too_deep(parser)
    _unnest_voids(root)
    title_tag = root.find("head/title")
    _check_marker_names(root)
    visibility = Visibility(root)
    if visibility.hides_anything:
        _check_carried_formatting(markup, root, visibility)
    extractor = _Extractor(visibility if visibility.hides_anything else None)
    extractor.walk(root)
    extractor.flush()
    _check_policy_extents(markup, root)
    text = "".join(extractor.parts)[: max(extractor.pos - 2, 0)]  # drop the last separator
    builder = SectionTreeBuilder(text)
    limit = len(text)
    h1_key: str | None = None  # the first H1's own section: the one bearing the title (ParsedDocument.title_key)
    h1s: list[tuple[str, str]] = []  # every H1's section and title (ParsedDocument.title_candidates)
    for event in extractor.events:
        args = event.args
        if event.kind == "hidden":
            builder.current.hidden_chars_removed += args["count"]
        elif event.kind == "block":
            builder.add_block(args["start"], args["end"], args["kind"])
        elif event.kind == "heading":
            section = builder.open_heading(level=args["level"], title=args["title"], start=min(args["start"], limit),
                                           heading_end=min(args["heading_end"], limit), line=args["line"],
                                           policy=args["policy"])
            h1_key = section.key if args["first_h1"] else h1_key
            h1s += [(section.key, args["h1"])] if args.get("h1") else []
        elif event.kind == "open_scope":
            start = min(args["start"], limit)
            section = builder.open_scope(kind=args["kind"], start=start, line=args["line"], policy=args["policy"],
                                         strict=False, title=args["title"], level=args["level"])
            h1_key = section.key if args.get("first_h1") else h1_key
            h1s += [(section.key, args["h1"])] if args.get("h1") else []
        elif event.kind == "close_scope":
            pos = min(args["pos"], limit)
            builder.close_scope(boundary=pos, end=None, line=None)
        elif event.kind == "leaf":
            leaf = builder.add_leaf(kind=args["kind"], title=args["title"], start=args["start"], end=args["end"],
                                    blocks=args["blocks"], line=args["line"], metadata=args["metadata"])
            leaf.hidden_chars_removed += args["hidden"]
    title = " ".join(title_tag.text_content().split()) if title_tag is not None else ""
    if title_tag is not None and any(node.get(name) is not None for node in (title_tag, *title_tag.iterancestors())
                                     for name in _POLICY_ATTRIBUTES):
        # <title> inside an element with a policy (<html data-access=...>): it belongs to that policy,
        # while a document's title is shown to every reader of any of its sections. Not used.
        title = ""
    sections = builder.finish()
    # The section bearing the title: the root for the <title> (the head's), else the first H1's own.
    return ParsedDocument(text=text, sections=sections, title=title or extractor.first_h1,
                          title_key=sections[0].key if title else h1_key,
                          title_candidates=[*([(sections[0].key, title)] if title else []), *h1s])


@register(content_types=["text/html", "application/xhtml+xml"], extensions=[".html", ".htm", ".xhtml"],
          reads_markers=True)
def parse_html(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse an HTML page into extracted text with sections, blocks and data-access policies."""
    return parse_html_text(decode_html(data))
