"""Access-marker syntax shared by the Markdown and HTML parsers (docs/formats.md, "Access markers").

Markers::

    <!-- access: restricted; groups: security-team, legal -->   opens a region / tags a heading
    <!-- /access -->                                          closes a region

Everything fails closed: anything that *looks like* a marker but does not parse
exactly, an unknown level (the levels are ``accounts.policy``'s), or a group name that
is not a slug raises :class:`ParseError` with the line.  Whether a group exists is
checked later by the Django side, which knows the tenant.

"Looks like a marker" is decided only at marker *positions* -- the start of an HTML
comment, an attribute name inside a tag, a front matter key -- never in prose, so
"Access control is..." or "accessibility" in body text is just text.  A name at such
a position is first reduced to a *skeleton*: invisible format characters (Unicode
category Cf such as U+200B, U+00AD, U+FEFF, plus variation selectors and fillers)
removed, NFKC-normalised, case-folded, and common Cyrillic/Greek look-alike letters
mapped to Latin.  Then:

* comment ``<!-- WORD`` (also ``<!-``, ``<!---``, and ``<!—``/``<!–`` as word
  processors "correct" it): marker-like when WORD (its leading letters and digits,
  after an optional ``/``) is within Damerau-Levenshtein distance 1 of ``access``,
  or within 2 when followed by ``:`` or preceded by ``/`` (``<!-- acess:``,
  ``<!-- /accesss -->``, ``access`` with a U+200B inside);
* attribute names (:func:`attribute_marker_kind`): ``data-access``/``data-groups``
  exactly are markers; names within distance 2 of them (``data-acess``,
  ``data-group``, ``data_access``), ``data-access-*``/``data-group*-*``, and bare
  names within distance 1 of ``access``/``groups`` (``access=``, ``group=``) are
  near misses;
* front matter keys (:func:`front_matter_key_kind`): ``access``/``groups`` exactly
  are markers; any other key whose skeleton is within distance 2 of them
  (``Access``, ``ACCESS``, ``acess``, ``group``) or that starts with
  ``access``/``group`` followed by a separator or a capital (``access_level``,
  ``accessLevel``) is a near miss.

Formats without markers (plain text, code, CSV, transcripts, e-mail, PDF, DOCX) call
:func:`reject_unread_markers` on their text: a marker there would be silently
ignored, so it fails the document instead.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from accounts.policy import LEVEL_NAMES, Policy, UnknownAccessLevel
from accounts.policy import parse_level as level_named
from ingestion.parsers.visible_text import without_controls
from ingestion.structure import ParseError

_OPEN_RE = re.compile(r"<!--[ \t]*access[ \t]*:(?P<body>[^\n]*?)-->", re.IGNORECASE)
_CLOSE_RE = re.compile(r"<!--[ \t]*/[ \t]*access[ \t]*-->", re.IGNORECASE)
# Group slugs as the Django side stores them: lowercase letters, digits, - and _.
GROUP_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
_GROUP_SPLIT_RE = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Marker:
    """A parsed marker: ``policy`` for an opening one, None for ``<!-- /access -->``."""

    policy: Policy | None

    @property
    def closes(self) -> bool:
        return self.policy is None


# -- recognising markers and near misses -------------------------------------------

# Invisible characters that are not Unicode category Cf but render as nothing too.
_INVISIBLE_EXTRA = frozenset("\u034f\u115f\u1160\u3164\uffa0\u17b4\u17b5") | frozenset(
    chr(c) for c in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), *range(0x180B, 0x1810))
)
# Latin look-alikes (Cyrillic, Greek) of the letters of "access", "groups", "data".
_CONFUSABLES = str.maketrans({
    "а": "a", "с": "c", "е": "e", "ѕ": "s", "о": "o", "р": "p", "ԁ": "d", "υ": "u", "ց": "g", "ɡ": "g",
    "α": "a", "ο": "o", "ρ": "p", "τ": "t", "ε": "e", "ϲ": "c",
})
_ACCESS = "access"
_GROUPS = "groups"
_ATTRIBUTES = ("data-access", "data-groups")
# "<!--", also as word processors "correct" it ("<!—", "<!–") or mistyped ("<!-", "<!---").
_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"
# Each character of the opener also as an HTML character reference ("<!-&#45;", "&lt;!--", "<!&dash;-")
# or a full-width / small form NFKC maps to it ("\uff1c!--"); a CDATA section ("<![CDATA[") too.
_LT = r"(?:<|\uff1c|\ufe64|&lt;?|&#0*60;?|&#x0*3c;?)"
_BANG = r"(?:!|\uff01|\ufe57|&excl;|&#0*33;?|&#x0*21;?)"
_DASH = f"(?:[{_DASHES}]|&#0*45;?|&#x0*2d;?|&(?:dash|hyphen|minus|ndash|mdash|horbar);)"
# The dashes may be missing or spaced ("<!access:", "<! -- access:", "< !-- access:"): not a comment,
# or HTML's "bogus comment", which renders as nothing too.
# "<?" too: a processing instruction, which HTML reads as a comment (found fuzzing the markers, 2026-12-03:
# "<?access restricted?>" passed in every format).
_COMMENT_OPEN_RE = re.compile(f"{_LT}\\s*(?:{_BANG}(?:\\s*{_DASH}+|\\[CDATA\\[)?|\\?)", re.IGNORECASE)
_COMMENT_OPEN_HINT_RE = re.compile("<\\s*[!?]|[&\uff1c\ufe64]")
# How far a marker's first word is looked for, after the comment opener and any run of padding.
_COMMENT_HEAD = 80
# Padding between the opener and a marker's first word: whitespace, dashes, invisible characters, and
# the same as character references ("&nbsp;", "&#32;"). Skipped whatever its length: a window counted
# from the opener let a marker padded with 81 spaces pass as a plain comment.
_DASH_CHARS = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d")
_REFERENCE_RE = re.compile(r"&(?:[a-z]+[0-9]*|#[0-9]+|#x[0-9a-f]+);?", re.IGNORECASE)
_HEAD_RE = re.compile(f"[\\s{_DASHES}]*(?P<slash>/?)\\s*(?P<word>[^\\W_]+)(?P<colon>\\s*:)?")


def is_invisible(char: str) -> bool:
    """A character that renders as nothing: Unicode category Cf (U+200B, U+00AD, U+FEFF...) and a few others."""
    return unicodedata.category(char) == "Cf" or char in _INVISIBLE_EXTRA


def invisible_in(text: str) -> str | None:
    """The first invisible character in ``text``, else None."""
    return next((char for char in text if is_invisible(char)), None)


def skeleton(text: str) -> str:
    """``text`` as a marker name is compared: invisible characters removed, NFKC, case-folded, look-alikes mapped."""
    visible = "".join(char for char in text if not is_invisible(char))
    return unicodedata.normalize("NFKC", visible).casefold().translate(_CONFUSABLES).strip()


def edit_distance(a: str, b: str, limit: int = 2) -> int:
    """Damerau-Levenshtein (optimal string alignment) distance, capped at ``limit + 1``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


@lru_cache(maxsize=4096)
def _distance_to_access(word: str) -> int:
    return edit_distance(word, _ACCESS)


def _comment_head_is_marker(head: str) -> bool:
    """Whether the text right after ``<!--`` starts (or tries to start) a marker."""
    if "&" in head:
        head = html.unescape(head)
    match = _HEAD_RE.match(skeleton(" " + head) if not head.isascii() else head.lower())
    if match is None:
        return False
    distance = _distance_to_access(match["word"])
    return distance <= 1 or (distance == 2 and bool(match["slash"] or match["colon"]))


def _is_padding(char: str) -> bool:
    return char.isspace() or char in _DASH_CHARS or is_invisible(char)


def _head(text: str, start: int, end: int) -> str:
    """The text after a comment opener at ``start`` where a marker's first word would be: past any run
    of padding (linear: a run ends before the next opener), then at most ``_COMMENT_HEAD`` characters."""
    position = start
    while position < end:
        if _is_padding(text[position]):
            position += 1
            continue
        reference = _REFERENCE_RE.match(text, position, end) if text[position] == "&" else None
        if reference is None or not all(_is_padding(char) for char in html.unescape(reference.group())):
            break
        position = reference.end()
    return text[position : min(position + _COMMENT_HEAD, end)]


def find_marker_comment(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Offset of the first comment opener (``<!--``, or a dash-like variant) in ``text[start:end]`` that
    starts a marker or a near miss, else None."""
    end = len(text) if end is None else end
    for opener in _COMMENT_OPEN_RE.finditer(text, start, end):
        if _comment_head_is_marker(_head(text, opener.end(), end)):
            return opener.start()
    return None


def looks_like_marker_comment(content: str) -> bool:
    """True when an HTML comment's *content* (between ``<!--`` and ``-->``, or ``<?`` and ``>``) looks like a
    marker."""
    content = content[1:] if content.startswith("?") else content
    return _comment_head_is_marker(_head(content, 0, len(content)))


def looks_like_marker(text: str) -> bool:
    """True when ``text`` contains a comment that is (or tries to be) an access marker."""
    return _COMMENT_OPEN_HINT_RE.search(text) is not None and find_marker_comment(text) is not None


@lru_cache(maxsize=4096)
def attribute_marker_kind(name: str) -> str | None:
    """``"exact"`` for ``data-access``/``data-groups`` (any case), ``"near"`` for a near miss, else None.

    Near misses: names whose skeleton is within distance 2 of ``data-access`` /
    ``data-groups`` (``data-acess``, ``data-group``, ``data_access``, ``dataaccess``,
    invisible characters inside), ``data-access-*`` / ``data-group(s)-*``, and bare
    names within distance 1 of ``access`` / ``groups`` (``access``, ``acess``,
    ``group``).  Real HTML attributes such as ``accesskey`` and ``accept`` are not.
    """
    if name.lower() in _ATTRIBUTES:
        return "exact"
    # As written in the source: a character reference ("data&#45;access") or a namespace prefix
    # ("xml:data-access", "xlink:data-access") makes another attribute that no policy reads.
    norm = skeleton(html.unescape(name) if "&" in name else name).rpartition(":")[2]
    if norm in _ATTRIBUTES:
        return "near"
    if any(edit_distance(norm, target) <= 2 for target in _ATTRIBUTES):
        return "near"
    core = re.sub(r"^data[\W_]?", "", norm)
    if core != norm and re.match(r"(?:access|groups?)[\W_]", core):
        return "near"
    if core == norm and (edit_distance(norm, _ACCESS, 1) <= 1 or edit_distance(norm, _GROUPS, 1) <= 1):
        return "near"
    # "access"/"group(s)" as a component of the name (found fuzzing the markers, 2026-12-03: "access-level",
    # "accesslevel", "x-access", "aria-access", "data-accessgroups" passed); "accesskey" is HTML's own.
    if _ATTRIBUTE_COMPONENT_RE.search(norm):
        return "near"
    return None


_ATTRIBUTE_COMPONENT_RE = re.compile(r"(?:^|[\W_])(?:access|groups?)(?:[\W_]|level|groups?|rights|$)")


_METADATA_NAMES = ("access", "groups", "accesslevel", "accessrights", "dataaccess", "datagroups")


@lru_cache(maxsize=1024)
def metadata_name_is_marker(name: str) -> bool:
    """Whether the name of a metadata field (an HTML ``<meta name=...>``, ``property``...) looks like an access
    marker: its last component (after ``:`` or ``.``, as in ``og:access`` or ``DC.accessRights``), without
    separators, is within distance 1 of ``access``, ``groups``, ``access-level``, ``accessRights``,
    ``data-access`` or ``data-groups``. Schema.org's ``accessMode`` or ``accessibilitySummary`` are not."""
    last = re.split(r"[:.]", skeleton(html.unescape(name) if "&" in name else name))[-1]
    core = re.sub(r"[\W_]+", "", last)
    return bool(core) and any(edit_distance(core, target, 1) <= 1 for target in _METADATA_NAMES)


@lru_cache(maxsize=1024)
def front_matter_key_kind(key: str) -> str | None:
    """``"exact"`` for the keys ``access``/``groups``, ``"near"`` for a near miss of them, else None.

    YAML keys are case-sensitive, so ``Access`` is not ``access``: it and every key
    whose skeleton is within distance 2 of ``access``/``groups``, or that starts with
    ``access``/``group`` followed by a separator or a capital (``access_level``,
    ``accessLevel``, ``groups-allowed``), is a near miss.
    """
    if key in (_ACCESS, _GROUPS):
        return "exact"
    norm = skeleton(key)
    if edit_distance(norm, _ACCESS) <= 2 or edit_distance(norm, _GROUPS) <= 2:
        return "near"
    if re.match(r"(?:access|groups?)[\W_]", norm) or re.match(r"(?i:access|groups?)[A-Z]", key):
        return "near"
    return None


# A tag-like span "<name ..." up to its ">" (or the next "<"); attribute names inside it.
_TAG_RE = re.compile(r"<[A-Za-z][^\s<>/]*(?P<attributes>[^<>]*)")
_ATTRIBUTE_NAME_RE = re.compile(r"""(?:^|(?<=[\s"'/]))(?P<name>[^\s"'<>/=]+)\s*=""")


def find_policy_attribute(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Offset of the first attribute inside a tag-like ``<name ...>`` of ``text[start:end]`` that is
    ``data-access``/``data-groups`` or a near miss of them (see :func:`attribute_marker_kind`), else None."""
    end = len(text) if end is None else end
    for tag in _TAG_RE.finditer(text, start, end):
        attributes_start = tag.start("attributes")
        for attribute in _ATTRIBUTE_NAME_RE.finditer(tag["attributes"]):
            if attribute_marker_kind(attribute["name"]) is not None:
                return attributes_start + attribute.start("name")
    return None


_FRONT_MATTER_SCAN_LINES = 200
_FRONT_MATTER_SCAN_CHARS = 64 * 1024
_FRONT_MATTER_KEY_RE = re.compile(r"\s*(?P<key>[^\s:=#][^:=#]*?)\s*[:=]")
# A line that opens or closes something front-matter-like: 3+ dashes (YAML) or pluses (TOML), with or
# without trailing text ("--- # meta", "----", "+++").
_FRONT_MATTER_FENCE_RE = re.compile(r"(?:-{3,}|\+{3,})(?:[^-+].*)?\Z", re.DOTALL)


def _is_front_matter_fence(line: str) -> bool:
    return _FRONT_MATTER_FENCE_RE.match(skeleton(line)) is not None


def find_front_matter_marker(text: str) -> int | None:
    """Offset of an ``access``/``groups`` key (or near miss, ``key:`` or ``key =``) in a front-matter-like
    block at the start of ``text``: a first non-blank line of 3+ dashes or pluses (invisible characters,
    spaces and trailing text aside) up to the next such line.  For texts where that block is *not* read
    as front matter."""
    lines = text[: _FRONT_MATTER_SCAN_CHARS].splitlines(keepends=True)[:_FRONT_MATTER_SCAN_LINES]
    offset = 0
    index = 0
    while index < len(lines) and not skeleton(lines[index]):
        offset += len(lines[index])
        index += 1
    if index >= len(lines) or not _is_front_matter_fence(lines[index]):
        return None
    offset += len(lines[index])
    for line in lines[index + 1 :]:
        if _is_front_matter_fence(line) or skeleton(line) == "...":
            return None
        match = _FRONT_MATTER_KEY_RE.match(line)
        if match is not None and front_matter_key_kind(match["key"].strip("'\"")) is not None:
            return offset + match.start("key")
        offset += len(line)
    return None


# A line (or a CSV cell) that starts like a marker's key: up to 8 characters of punctuation (a comment, list or
# quote leader: "..", "#", "//", "--", "*", ">", ";", "%", the ":" of a reStructuredText field) or WebVTT's
# "NOTE", then one word, maybe "level", and ":" (or "=", "::"; full-width forms too), then the rest of the line.
# ":" and "=" with their full-width and small forms, and the colon look-alikes NFKC leaves alone (ratio, modifier
# letter colons, Armenian full stop, Hebrew sof pasuq, the presentation form of a two-dot leader, runic
# punctuation, two-dot punctuation).
_COLONS = ":=\uff1a\ufe55\ufe13\uff1d\u2236\u02d0\ua789\u0589\u05c3\ufe30\u16ec\u205a"
_COLON_LOOKALIKES = str.maketrans(dict.fromkeys("\u2236\u02d0\ua789\u0589\u05c3\ufe30\u16ec\u205a", ":"))
_SPACE = r"[^\S\n\r]"
_LINE_KEY_RE = re.compile(
    f"[\\n\\r]{_SPACE}*+(?P<lead>[^\\w\\s]{{0,8}}+|NOTE(?={_SPACE}))(?P<gap>{_SPACE}*+)"
    f"(?P<key>[^\\s{_COLONS}]{{3,40}}+)(?P<level>{_SPACE}+level)?{_SPACE}*+"
    f"(?P<sep>[{_COLONS}]{{1,2}})(?P<value>[^\\n\\r]{{0,120}})",
    re.IGNORECASE,
)
_LEVEL_VALUE_RE = re.compile(r"[\W_]*(?P<word>[^\W\d_]+)(?P<rest>.*)", re.DOTALL)


@lru_cache(maxsize=8192)
def _line_key(key: str) -> tuple[int, int]:
    """A line marker's key's distances to ``access`` and ``groups`` (capped at 3 and 2), compared as its
    skeleton without leading punctuation or a trailing "level"."""
    norm = re.sub(r"^[\W_]+", "", skeleton(key))
    if len(norm) > len("level") + 2:
        norm = re.sub(r"[\W_]*level$", "", norm)
    return edit_distance(norm, _ACCESS), edit_distance(norm, _GROUPS, 1)


def _is_level_value(value: str) -> bool:
    """Whether ``value`` (what follows a key's ":") is a level (within distance 1 of one, any case) that ends
    the line, or is followed by punctuation only, or by ";"/"," and anything (``restricted; groups: a``)."""
    match = _LEVEL_VALUE_RE.match(skeleton(value))
    if match is None or not any(edit_distance(match["word"], level, 1) <= 1 for level in LEVEL_NAMES):
        return False
    rest = match["rest"].strip()
    return not rest or rest[0] in ";," or not re.search(r"[^\W_]", rest)


def _line_marker(match: re.Match[str]) -> bool:
    to_access, to_groups = _line_key(match["key"] + (match["level"] or ""))
    if to_access > 2 and to_groups > 1:
        return False
    lead = skeleton(match["lead"]) if match["lead"] else ""
    sep = unicodedata.normalize("NFKC", match["sep"]).translate(_COLON_LOOKALIKES)
    # reStructuredText's own places for a key: a comment or directive (".. access: x", ".. access:: x") and a
    # field (":access: x"). Whatever the value: a comment is never shown, a field is metadata.
    if (lead == ".." and match["gap"] and sep.startswith(":")) or (lead == ":" and sep.startswith(":")):
        return True
    if sep.startswith("=") and not lead:
        return False  # "access = 'restricted'" is code (an assignment); "# access = restricted" is not
    return to_access <= 1 and _is_level_value(match["value"])


def find_line_marker(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Offset of the first line of ``text[start:end]`` that starts like a marker's key and value, written the way
    a format without HTML comments would: ``access: restricted``, ``# access: restricted; groups: a``,
    ``Access: Confidential``, reStructuredText's ``.. access: restricted`` and ``:access: restricted`` (those two
    whatever the value, and ``groups`` too), WebVTT's ``NOTE access: internal``. Prose is not: a level must
    follow ``access:`` and end the line or be followed by ``;``/``,`` ("Access: granted to everyone",
    "Access: restricted to staff on weekdays" are text)."""
    end = len(text) if end is None else end
    # The pattern starts with the line break before the line (a fast scan); the first line gets one.
    first = _LINE_KEY_RE.match("\n" + text[start : min(end, start + 400)])
    if first is not None and first.start() == 0 and _line_marker(first):
        return start
    for match in _LINE_KEY_RE.finditer(text, start, end):
        if _line_marker(match):
            return match.start() + 1
    return None


def find_unread_marker(text: str) -> int | None:
    """Offset of the first thing in ``text`` that is or looks like an access marker of any format
    (a marker comment, a ``data-access``-like attribute in a tag, an ``access:`` front matter key, a line
    that starts like a marker's key and value)."""
    found = [
        offset
        for offset in (find_marker_comment(text), find_policy_attribute(text), find_front_matter_marker(text),
                       find_line_marker(text))
        if offset is not None
    ]
    return min(found) if found else None


def reject_unread_markers(text: str) -> None:
    """:class:`ParseError` with the line when ``text`` -- of a format that has no access markers -- holds
    something that looks like one: it would be silently ignored and the text get the upload's policy."""
    offset = find_unread_marker(text)
    if offset is None:
        # Read without a terminal's control sequences too (attack20b): ``ESC[8m# access: restricted ESC[0m`` starts
        # its line with the escape on the file as written, and is cut whole from the text a terminal shows.
        text = without_controls(text)
        offset = find_unread_marker(text)
        if offset is None:
            return
    line = text.count("\n", 0, offset) + 1
    excerpt = re.match(r".*?-->|[^\n>]*>?", text[offset : offset + 80])[0]
    raise ParseError(
        f"{_excerpt(excerpt)} looks like an access marker, but access markers are only read in Markdown and "
        "HTML documents; in this format it would be ignored and the text would get the upload's access. "
        "Upload the document as text/markdown (or text/html) for its markers to apply, or remove the marker",
        line=line,
    )


_TAG_HINT_RE = re.compile("[<&\uff1c\ufe64]")
_TAG_LEFT_OPEN_RE = re.compile(r"<[^<>\n]*\n")


def _row_of(rows: Sequence[Sequence[str]], between_cells: str, offset: int) -> int:
    """The index of the row at ``offset`` of the rows' text (rows joined by line breaks, cells by
    ``between_cells``)."""
    position = 0
    for index, row in enumerate(rows):
        position += sum(len(cell) for cell in row) + len(between_cells) * max(len(row) - 1, 0) + 1
        if offset < position:
            return index
    return len(rows) - 1


def reject_cell_markers(rows: Sequence[tuple[int, Sequence[str]]]) -> None:
    """:class:`ParseError` with the row's line when the cells of a table row (``(line, cells)``) look like an
    access marker, each alone (a cell ``access: restricted`` in the middle of a row: each cell is read as a line)
    or read across the row as a spreadsheet shows it (``<!--`` in one cell, ``access: restricted -->`` in the
    next). The rows are checked together, a few regular-expression scans for all of them; the file's raw text
    is checked as any text."""
    cells = [row for _, row in rows]
    found: list[tuple[int, str]] = []
    text = "\n".join("\n".join(row) for row in cells)
    offset = find_line_marker(text)
    if offset is not None:
        found.append((_row_of(cells, "\n", offset), text[offset:]))
    if _TAG_HINT_RE.search(text) is not None:
        # A tag left open at the end of a cell ("<div" | "data-access='restricted'>"): only those rows are read
        # for attributes across their cells (a tag closed in its cell is in the raw text's check).
        open_tags = [] if _TAG_LEFT_OPEN_RE.search(text) is None else [
            index for index, row in enumerate(cells) if any(c.rfind("<") > c.rfind(">") for c in row[:-1])]
        for between in (" ", ""):
            across = "\n".join(between.join(row) for row in cells)
            offset = find_marker_comment(across)
            if offset is not None:
                found.append((_row_of(cells, between, offset), across[offset:]))
            if open_tags:
                tagged = [cells[index] for index in open_tags]
                across = "\n".join(between.join(row) for row in tagged)
                offset = find_policy_attribute(across)
                if offset is not None:
                    found.append((open_tags[_row_of(tagged, between, offset)], across[offset:]))
    if not found:
        return
    index, rest = min(found, key=lambda hit: hit[0])
    excerpt = re.match(r".*?-->|[^\n>]*>?", rest[:80])[0]
    raise ParseError(
        f"the cells of this row ({_excerpt(excerpt.strip())}) look like an access marker, but access markers are only "
        "read in Markdown and HTML documents; in a table it would be ignored and the row would get the upload's "
        "access. Remove it, or put the protected rows in a Markdown (or HTML) document with markers",
        line=rows[index][0],
    )


def reject_hidden_markers(pieces: Iterable[str], *, where: str) -> None:
    """:class:`ParseError` when text a reader does not see (and that is left out of the document text:
    a hidden DOCX run, invisible PDF text) holds something that looks like an access marker. Leaving
    it out must not turn a marker in a format without markers into a silent pass."""
    for piece in pieces:
        offset = find_unread_marker(piece)
        if offset is not None:
            excerpt = re.match(r".*?-->|[^\n>]*>?", piece[offset : offset + 80])[0]
            raise ParseError(
                f"{_excerpt(excerpt)} in {where} looks like an access marker, but access markers are only read in "
                "Markdown and HTML documents (and never in text a reader does not see); remove it, or upload the "
                "document as text/markdown (or text/html) with visible markers"
            )


def parse_level(value: object, *, line: int | None, where: str = "access level") -> str:
    """A known access level (case-insensitive), else :class:`ParseError`."""
    try:
        return level_named(value.strip().lower() if isinstance(value, str) else None).label
    except UnknownAccessLevel:
        raise ParseError(f"unknown {where} {value!r} (expected one of: {', '.join(LEVEL_NAMES)})", line=line) from None


def parse_groups(value: object, *, line: int | None, key: str = "groups") -> tuple[str, ...]:
    """Group slugs from ``"a, b"``, ``"a b"``, ``"[a, b]"`` or a YAML list; :class:`ParseError` on bad syntax.

    ``value`` is what a ``groups`` key that *is there* says: nothing at all (``groups:`` with no value,
    a YAML null, ``data-groups=""``) or only separators (``groups: ,``) is a forgotten value, not "no
    groups", and fails. No groups is said with an explicit empty list (``[]``) or by leaving the key out.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        named, none = ('data-groups="a b"', 'data-groups="[]"') if key == "data-groups" else ("groups: a, b", "groups: []")
        raise ParseError(
            f"'{key}' is given without a value, which is ambiguous (a forgotten value?): name the groups ('{named}'), "
            f"write '{none}' for none, or leave it out", line=line)
    if isinstance(value, str):
        stripped = value.strip()
        explicit_empty = stripped.startswith("[") and stripped.endswith("]")
        if explicit_empty:
            stripped = stripped[1:-1]
        items: list[object] = [item for item in _GROUP_SPLIT_RE.split(stripped) if item]
        if not items and (stripped.strip() or not explicit_empty):
            raise ParseError(f"invalid groups {value!r}: separators without group names", line=line)
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ParseError(f"invalid groups {value!r}: expected a list of group names", line=line)
    groups = []
    for item in items:
        if not isinstance(item, str) or not GROUP_RE.match(item):
            raise ParseError(
                f"invalid group name {item!r} (group names are lowercase slugs: a-z, 0-9, '-', '_')", line=line
            )
        groups.append(item)
    return tuple(groups)


def parse_policy_spec(body: str, *, line: int | None) -> Policy:
    """The ``restricted; groups: a, b`` part of an opening marker."""
    parts = [part.strip() for part in body.split(";")]
    level = parse_level(parts[0], line=line)
    groups: tuple[str, ...] = ()
    seen_groups = False
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        if not sep or key.strip().lower() != "groups" or seen_groups:
            raise ParseError(f"malformed access marker: unexpected {part!r} (expected 'groups: a, b')", line=line)
        seen_groups = True
        groups = parse_groups(value, line=line)
    return Policy(level=level, groups=groups)


def parse_marker(text: str, *, line: int | None) -> Marker:
    """Parse ``text`` (surrounding whitespace ignored) as exactly one marker, else :class:`ParseError`."""
    candidate = text.strip()
    reject_invisible(candidate, line=line)
    if _CLOSE_RE.fullmatch(candidate):
        return Marker(policy=None)
    match = _OPEN_RE.fullmatch(candidate)
    if match is None:
        raise ParseError(
            f"malformed access marker {_excerpt(candidate)} (expected '<!-- access: LEVEL; groups: a, b -->' "
            "or '<!-- /access -->' alone on its line)",
            line=line,
        )
    return Marker(policy=parse_policy_spec(match["body"], line=line))


def split_trailing_marker(text: str, *, line: int | None) -> tuple[str, Policy | None]:
    """``("Title", policy)`` for a heading ``Title <!-- access: ... -->``; ``(text, None)`` without one.

    The marker must end the heading; any other marker-like text in it is an error.
    """
    stripped = text.rstrip()
    marker_at = find_marker_comment(stripped)
    reject_invisible(stripped[marker_at:] if marker_at is not None else stripped, line=line)
    matches = list(_OPEN_RE.finditer(stripped))
    match = matches[-1] if matches else None
    if match is None or match.end() != len(stripped) or looks_like_marker(stripped[: match.start()]):
        raise ParseError(
            f"malformed access marker in heading {_excerpt(stripped)} (a heading marker must be "
            "'<!-- access: LEVEL; groups: a, b -->' at the end of the heading)",
            line=line,
        )
    return stripped[: match.start()].rstrip(), parse_policy_spec(match["body"], line=line)


def reject_invisible(text: str, *, line: int | None, where: str = "access marker") -> None:
    """:class:`ParseError` when ``text`` (a marker) holds an invisible character: it would not read as it looks."""
    char = invisible_in(text)
    if char is not None:
        name = unicodedata.name(char, "invisible character")
        raise ParseError(f"{where} contains an invisible character U+{ord(char):04X} ({name}): "
                         f"retype it with visible characters only", line=line)


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
