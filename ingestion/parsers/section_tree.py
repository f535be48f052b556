"""Building the section tree in one document-order pass, shared by the text parsers.

A parser walks its source once and tells the builder what it meets: a heading of
some level, the start or end of a scope (an access region, an HTML ``<section>``),
a body block, a leaf section such as a table.  The builder keeps the stack of open
sections, assigns sequential keys ("0", "1", ... in document order, so parents come
before children), computes heading paths and depths, and closes sections with an
end offset trimmed of trailing whitespace.

Everything is iterative: a document with 10,000 headings or nested scopes costs a
deep stack list, never Python recursion.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from accounts.policy import Policy
from ingestion.structure import Block, ParseError, Section


@dataclass
class _Open:
    section: Section
    # Headings: their level (1 = top).  Scopes: the level of the heading they sit
    # in (0 at the root); a heading inside the scope must be deeper than that.
    level: int
    scope: bool
    # Strict scopes (Markdown access regions) reject a heading that would close
    # their enclosing section; lax scopes (HTML containers) just nest it.
    strict: bool = False
    min_end: int = 0  # the end may not be trimmed before this (heading, blocks, children)


class SectionTreeBuilder:
    """Incremental builder of a document's section list (see the module docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        root = Section(
            key="0", parent=None, title="", heading_path=(), kind="document", depth=0, start=0, end=len(text)
        )
        self.sections: list[Section] = [root]
        self._stack: list[_Open] = [_Open(root, level=0, scope=True)]

    @property
    def current(self) -> Section:
        """The innermost open section: where the next block goes."""
        return self._stack[-1].section

    @property
    def heading_level(self) -> int:
        """Level of the innermost open heading (0 when none)."""
        return self._stack[-1].level

    def _new_section(self, *, title: str, kind: str, start: int, end: int, line: int | None,
                     policy: Policy | None, own_title: bool, metadata: dict | None = None) -> Section:
        parent = self.current
        section = Section(
            key=str(len(self.sections)),
            parent=parent.key,
            title=title,
            heading_path=parent.heading_path + ((title,) if own_title else ()),
            kind=kind,
            depth=parent.depth + 1,
            start=start,
            end=end,
            policy=policy,
            line=line,
            metadata=metadata or {},
        )
        self.sections.append(section)
        return section

    def _close_top(self, boundary: int) -> None:
        entry = self._stack.pop()
        section = entry.section
        end = boundary
        while end > entry.min_end and self.text[end - 1].isspace():
            end -= 1
        section.end = max(end, entry.min_end)
        self._bump(section.end)

    def _bump(self, end: int) -> None:
        top = self._stack[-1]
        top.min_end = max(top.min_end, end)

    def open_heading(self, *, level: int, title: str, start: int, heading_end: int, line: int | None,
                     policy: Policy | None = None) -> Section:
        """Open a heading section at ``start``; closes open headings of the same or a deeper level.

        ``heading_end`` is where the heading line ends (the section never ends before it).
        """
        while not self._stack[-1].scope and self._stack[-1].level >= level:
            self._close_top(start)
        top = self._stack[-1]
        if top.scope and top.strict and level <= top.level:
            raise ParseError(
                f"heading {title!r} (level {level}) would close its enclosing section while the access "
                f"region opened at line {top.section.line} is still open; close the region with "
                "<!-- /access --> before this heading",
                line=line,
            )
        section = self._new_section(title=title, kind="heading", start=start, end=start, line=line,
                                    policy=policy, own_title=True)
        self._stack.append(_Open(section, level=level, scope=False, min_end=heading_end))
        return section

    def open_scope(self, *, kind: str, start: int, line: int | None, policy: Policy | None,
                   strict: bool, title: str = "", level: int | None = None, min_end: int | None = None,
                   metadata: dict | None = None) -> Section:
        """Open a scope (an access region, an HTML container) at ``start``.

        A scope keeps its parent's heading path unless it has a ``title`` of its own
        (an HTML ``<section>`` whose first heading names it, passed with that heading's
        ``level``).  Headings inside a scope become its descendants; only
        :meth:`close_scope` ends it.
        """
        section = self._new_section(title=title, kind=kind, start=start, end=start, line=line, policy=policy,
                                    own_title=bool(title), metadata=metadata)
        scope_level = level if level is not None else self.heading_level
        self._stack.append(_Open(section, level=scope_level, scope=True, strict=strict,
                                 min_end=start if min_end is None else min_end))
        return section

    def close_scope(self, *, boundary: int, end: int | None, line: int | None) -> Section:
        """Close the innermost scope: headings inside it end at ``boundary``, the scope at ``end``.

        ``end`` None: the scope ends at ``boundary`` trimmed of trailing whitespace.

        Raises :class:`ParseError` when no scope is open (a stray closing marker).
        """
        while not self._stack[-1].scope:
            self._close_top(boundary)
        if len(self._stack) == 1:
            raise ParseError("closing access marker <!-- /access --> without an open region", line=line)
        entry = self._stack[-1]
        if end is not None:
            entry.min_end = max(entry.min_end, end)
        self._close_top(boundary if end is None else end)
        return entry.section

    def add_block(self, start: int, end: int, kind: str = "prose", *, embed_text: str | None = None,
                  joinable: bool = True, metadata: dict | None = None) -> Block | None:
        """Add ``text[start:end]`` (trimmed of surrounding whitespace) as a block of the current section.

        Returns None (adds nothing) when the range is blank.
        """
        text = self.text
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start >= end:
            return None
        block = Block(start=start, end=end, kind=kind, embed_text=embed_text, joinable=joinable,
                      metadata=metadata or {})
        self.current.blocks.append(block)
        self._bump(end)
        return block

    def add_leaf(self, *, kind: str, title: str, start: int, end: int, blocks: list[Block],
                 line: int | None, metadata: dict | None = None, policy: Policy | None = None) -> Section:
        """Add a closed child section (e.g. a table) of the current section."""
        section = self._new_section(title=title, kind=kind, start=start, end=end, line=line, policy=policy,
                                    own_title=bool(title), metadata=metadata)
        section.blocks.extend(blocks)
        self._bump(end)
        return section

    def finish(self) -> list[Section]:
        """Close everything still open at the end of the text and return the sections.

        An open strict scope (an access region) at the end is an unterminated marker.
        """
        while len(self._stack) > 1:
            entry = self._stack[-1]
            if entry.scope and entry.strict:
                raise ParseError(
                    "unterminated access region: missing <!-- /access --> for the marker", line=entry.section.line
                )
            self._close_top(len(self.text))
        return self.sections


class LineIndex:
    """Line number <-> character offset for a text whose lines end in \\n, \\r\\n or \\r.

    Line numbers are 0-based here (as markdown-it's ``map``); add 1 for messages.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        starts = [0]
        index = 0
        length = len(text)
        find_n = text.find
        # A plain scan: str.splitlines() would also break on \x0b, \x1c, \u2028 ...
        # which markdown-it (and readers) do not treat as line ends.
        while True:
            n = find_n("\n", index)
            r = find_n("\r", index, n if n >= 0 else length)
            if r >= 0:
                nxt = r + 2 if r + 1 < length and text[r + 1] == "\n" else r + 1
            elif n >= 0:
                nxt = n + 1
            else:
                break
            starts.append(nxt)
            index = nxt
        self.starts = starts

    @property
    def count(self) -> int:
        """Number of lines (a trailing newline does not start a further, empty line)."""
        if len(self.starts) > 1 and self.starts[-1] == len(self.text):
            return len(self.starts) - 1
        return len(self.starts)

    def start(self, line: int) -> int:
        """Offset where 0-based ``line`` starts (``len(text)`` past the end)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def end(self, line: int) -> int:
        """Offset just past the content of 0-based ``line``, before its line break."""
        if line + 1 < len(self.starts):
            end = self.starts[line + 1]
            while end > self.starts[line] and self.text[end - 1] in "\r\n":
                end -= 1
            return end
        return len(self.text)

    def line(self, line: int) -> str:
        """Content of 0-based ``line`` without its line break."""
        return self.text[self.start(line) : self.end(line)]

    def line_of(self, offset: int) -> int:
        """0-based line containing ``offset``."""
        return bisect.bisect_right(self.starts, offset) - 1
