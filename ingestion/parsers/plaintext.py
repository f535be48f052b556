"""Plain text: paragraphs, plus headings only where they are unambiguous.

The document text is the decoded file itself.  Recognised headings:

* reStructuredText titles: a line underlined (or over- and underlined) with one
  repeated punctuation character, at least as long as the title and at least 3
  long, after a blank line.  Levels are assigned by order of first appearance of
  each style, as docutils does.
* Wiki titles ``= Title =``, ``== Sub ==`` and the space-separated ``= = Sub = =``
  of the WikiText corpus; the level is the number of ``=`` on each side (1-6, equal).
* Numbered clauses such as ``4.2 Refunds``: a short line after a blank line, no
  final punctuation, capitalised title, followed by a paragraph rather than by
  another item of a list; the level is the number of components.  Accepted only
  when the document has at least two of them.
* Markdown's ATX headings ``# Title`` to ``###### Title`` (a Markdown text posted
  as plain text): at most three spaces before the ``#`` run, a space after it, a
  title with a letter or digit (a closing ``#`` run dropped); the level is the
  number of ``#``.  Never inside a fenced code block (backticks or tildes), never
  next to another ``#`` line (a block of shell comments), and accepted only when
  the document has at least two of them.  Nothing else of Markdown is read: a
  file *named* ``.md`` goes to the Markdown parser, which also leaves hidden text
  out; this only gives pasted Markdown its sections (issue 30, docs/benchmarks.md).

A false heading is worse than a missed one (it cuts a section, and with it a
chunk, in two), so every rule errs towards "paragraph".

Paragraphs are separated by blank lines.  A file with no blank line at all (one
paragraph per line, like WikiText) gets one block per line instead of one giant
block.  Plain text has no access markers: every section inherits the document
default, and text that looks like a marker (a Markdown file uploaded as plain
text) fails the document -- see ``registry.register``.  An empty (or
all-whitespace) file is a valid document with no blocks.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ingestion.parsers.access_markers import reject_unread_markers
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import LineIndex, SectionTreeBuilder
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import merge_ranges, remove_ranges, shown_slice, terminal_hidden
from ingestion.structure import ParsedDocument

# docutils accepts any non-alphanumeric printable 7-bit character as adornment.
_ADORNMENT_RE = re.compile(r"([!-/:-@\[-`{-~])\1{2,}[ \t]*\Z")
_WIKI_RE = re.compile(r"[ \t]*(?P<open>=(?:[ \t]?=)*)[ \t]+(?P<title>\S.*?)[ \t]+(?P<close>=(?:[ \t]?=)*)[ \t]*\Z")
_NUMBERED_RE = re.compile(r"(?P<number>[1-9]\d{0,2}(?:\.\d{1,3})*)\.?[ \t]+(?P<title>\S.*)\Z")
# A Markdown ATX heading (``## Title``, a closing run of ``#`` after a space dropped) and a code fence's line.
_ATX_RE = re.compile(r" {0,3}(?P<hashes>#{1,6})[ \t]+(?P<title>.*?)(?:[ \t]+#+)?[ \t]*\Z")
_FENCE_RE = re.compile(r" {0,3}(?P<run>`{3,}|~{3,})")
_MAX_TITLE_CHARS = 100
_MAX_NUMBERED_LINE = 80
_MAX_NUMBERED_WORDS = 12


@dataclass(frozen=True)
class _Heading:
    first: int  # first line of the heading construct (overline or title), 0-based
    last: int  # last line (underline or title)
    title_line: int
    title: str
    style: tuple  # ("rst", char, overlined) | ("wiki", n) | ("num", n) | ("atx", n)


def _blank(line: str) -> bool:
    return not line.strip()


def _rst_heading(lines: list[str], i: int) -> _Heading | None:
    """An RST title whose *title* line is ``i``, or None."""
    title_line = lines[i]
    title = title_line.strip()
    if not title or len(title) > _MAX_TITLE_CHARS or _ADORNMENT_RE.match(title_line.strip()):
        return None
    if i + 1 >= len(lines):
        return None
    under = _ADORNMENT_RE.match(lines[i + 1])
    if not under:
        return None
    under_text = lines[i + 1].rstrip()
    over = _ADORNMENT_RE.match(lines[i - 1]) if i >= 1 else None
    if over and lines[i - 1].rstrip() == under_text:
        # Over- and underline: same character, same length, covering the (maybe indented) title.
        if len(under_text) >= len(title_line.rstrip()) and (i < 2 or _blank(lines[i - 2])):
            return _Heading(i - 1, i + 1, i, title, ("rst", under_text[0], True))
        return None
    if title_line[0] in " \t" or len(under_text) < len(title_line.rstrip()):
        return None
    if i >= 1 and not _blank(lines[i - 1]):
        return None
    return _Heading(i, i + 1, i, title, ("rst", under_text[0], False))


def _wiki_heading(lines: list[str], i: int) -> _Heading | None:
    match = _WIKI_RE.match(lines[i])
    if not match:
        return None
    opening, closing = match["open"].count("="), match["close"].count("=")
    title = match["title"]
    if opening != closing or not 1 <= opening <= 6 or title.startswith("=") or title.endswith("="):
        return None
    if len(title) > _MAX_TITLE_CHARS:
        return None
    return _Heading(i, i, i, title, ("wiki", opening))


def _numbered_candidate(line: str) -> re.Match[str] | None:
    if len(line) > _MAX_NUMBERED_LINE or line[:1] in (" ", "\t"):
        return None
    return _NUMBERED_RE.match(line.rstrip())


def _numbered_heading(lines: list[str], i: int) -> _Heading | None:
    match = _numbered_candidate(lines[i])
    if not match:
        return None
    title = match["title"].strip()
    if not title[0].isupper() or title[-1] in ".,;:!?" or len(title.split()) > _MAX_NUMBERED_WORDS:
        return None
    if i >= 1 and not _blank(lines[i - 1]):
        return None
    # Followed by a paragraph, not by the next item of a numbered list.
    j = i + 1
    while j < len(lines) and _blank(lines[j]):
        j += 1
    if j >= len(lines):
        return None
    following = _numbered_candidate(lines[j])
    number = match["number"]
    if following and not following["number"].startswith(number + "."):
        return None
    return _Heading(i, i, i, title, ("num", number.count(".") + 1))


def _fenced(lines: list[str]) -> set[int]:
    """The lines of fenced code blocks, fences included (CommonMark: a run of at least three backticks or tildes
    after at most three spaces opens one; a run of the same character, at least as long, with nothing after it
    closes it; an unclosed one runs to the end)."""
    inside: set[int] = set()
    opened: str | None = None
    for n, line in enumerate(lines):
        match = _FENCE_RE.match(line)
        if opened is None:
            if match and not (match["run"][0] == "`" and "`" in line[match.end():]):
                opened = match["run"]
                inside.add(n)
        else:
            inside.add(n)
            if (match and match["run"][0] == opened[0] and len(match["run"]) >= len(opened)
                    and not line[match.end():].strip()):
                opened = None
    return inside


def _atx_headings(lines: list[str]) -> dict[int, _Heading]:
    """Markdown ATX headings outside fenced code, by line: none next to another (a block of ``#`` comment lines is
    not a run of headings), and none unless the text has at least two."""
    fenced = _fenced(lines)
    found: dict[int, _Heading | None] = {}
    for n, line in enumerate(lines):
        match = _ATX_RE.match(line) if n not in fenced else None
        if match is None:
            continue
        title = match["title"].strip()
        if any(ch.isalnum() for ch in title) and len(title) <= _MAX_TITLE_CHARS:
            found[n] = _Heading(n, n, n, title, ("atx", len(match["hashes"])))
        else:
            found[n] = None  # still a `#` line: its neighbours are not headings either
    lone = {n: h for n, h in found.items() if h is not None and n - 1 not in found and n + 1 not in found}
    return lone if len(lone) >= 2 else {}


def find_headings(lines: list[str], *, markdown_headings: bool = True) -> list[_Heading]:
    """All unambiguous headings, in order, non-overlapping (Markdown's ``#`` headings too with
    ``markdown_headings``)."""
    headings: list[_Heading] = []
    numbered: list[_Heading] = []
    atx = _atx_headings(lines) if markdown_headings else {}
    i = 0
    while i < len(lines):
        heading = atx.get(i) or _wiki_heading(lines, i) or _rst_heading(lines, i)
        if heading is None:
            candidate = _numbered_heading(lines, i)
            if candidate is not None:
                numbered.append(candidate)
                headings.append(candidate)
                i += 1
                continue
            i += 1
            continue
        if headings and heading.first <= headings[-1].last:
            # An overline that was the previous heading's underline: keep the first reading.
            i += 1
            continue
        headings.append(heading)
        i = heading.last + 1
    if len(numbered) < 2:
        headings = [h for h in headings if h.style[0] != "num"]
    return headings


def _levels(headings: list[_Heading]) -> list[int]:
    rst_order: dict[tuple, int] = {}
    levels = []
    for heading in headings:
        if heading.style[0] == "rst":
            levels.append(rst_order.setdefault(heading.style, len(rst_order) + 1))
        else:
            levels.append(heading.style[1])
    return levels


def _shown_titles(headings: list[_Heading], text: str, index: LineIndex, lines: list[str],
                  hidden: Sequence[tuple[int, int]]) -> list[_Heading]:
    """Each heading with its title as a terminal shows it (``hidden`` cut out); one whose title it hides whole (no
    letter or digit left) is no heading. Found in the twentieth session: the structure is read on the file as
    written, and a concealed run inside a title (``2. Sec ESC[8m...ESC[0m ond``) reached the title and every heading
    path under it -- the model's text -- while the document text lost it."""
    shown = []
    for heading in headings:
        at = lines[heading.title_line].find(heading.title)
        if at < 0:  # every style's title is a slice of its line; were it not, no heading (less structure)
            continue
        start = index.start(heading.title_line) + at
        title = shown_slice(text, hidden, start, start + len(heading.title)).strip()
        if any(ch.isalnum() for ch in title):
            shown.append(dataclasses.replace(heading, title=title))
    return shown


def parse_text(text: str, *, markdown_headings: bool = True,
               hidden: Sequence[tuple[int, int]] = ()) -> ParsedDocument:
    """Build the section tree of already-decoded plain text (offsets index ``text``). ``markdown_headings=False``:
    without Markdown's ``#`` headings, as before the twentieth session (the benchmarks' reading of before).
    ``hidden``: what a terminal does not show of ``text`` (the caller cuts it after): the titles are what is shown."""
    index = LineIndex(text)
    lines = [index.line(i) for i in range(index.count)]
    headings = find_headings(lines, markdown_headings=markdown_headings)
    if hidden:
        headings = _shown_titles(headings, text, index, lines, merge_ranges(hidden))
    levels = _levels(headings)
    heading_lines = {line for h in headings for line in range(h.first, h.last + 1)}
    one_per_line = not any(_blank(line) for n, line in enumerate(lines) if n not in heading_lines)

    builder = SectionTreeBuilder(text)
    by_first = {h.first: (h, level) for h, level in zip(headings, levels, strict=True)}
    paragraph_start: int | None = None

    def flush(last_line: int) -> None:
        nonlocal paragraph_start
        if paragraph_start is not None:
            builder.add_block(index.start(paragraph_start), index.end(last_line))
            paragraph_start = None

    i = 0
    while i < len(lines):
        found = by_first.get(i)
        if found is not None:
            flush(i - 1)
            heading, level = found
            builder.open_heading(
                level=level,
                title=heading.title,
                start=index.start(heading.first),
                heading_end=index.end(heading.last),
                line=heading.title_line + 1,
            )
            i = heading.last + 1
            continue
        if _blank(lines[i]):
            flush(i - 1)
        elif one_per_line:
            paragraph_start = i
            flush(i)
        elif paragraph_start is None:
            paragraph_start = i
        i += 1
    flush(len(lines) - 1)
    return ParsedDocument(text=text, sections=builder.finish())


@register(content_types=["text/plain", "text/x-rst"], extensions=[".txt", ".text", ".rst"])
def parse_plaintext(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a plain-text file (UTF-8; see the module docstring for what counts as a heading)."""
    text = decode_text(data)
    hidden = terminal_hidden(text, carriage_returns=True)
    if hidden:
        reject_unread_markers(text)  # on the file as written: a marker a terminal hides still fails, with its line
    return remove_ranges(parse_text(text, hidden=hidden), hidden)
