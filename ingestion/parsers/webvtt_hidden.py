"""WebVTT: which characters of the file a player never shows (pure).

A player shows only the cues' text. Never shown, so cut from the document text:

* the blocks that are not cues -- ``NOTE`` (comments), ``STYLE`` and ``REGION`` -- and the header's
  metadata lines after the ``WEBVTT`` line (``Kind:``, ``Language:``...);
* of the cue text's tags (``<c.x>``, ``<v Name>``, ``<00:01.000>``), what a player reads and does not
  draw: the classes (``.x``), the annotation of every tag but ``<v>`` (whose voice name is the
  transcript's speaker label, kept as written), a tag that is not one of WebVTT's (``<span>``,
  ``<ignore this>``: ignored whole), and a tag left open, which swallows the rest of the cue
  (``a < b`` shows as ``a``);
* cue text that the file's own style sheets hide. A ``STYLE`` block is CSS for the cues:
  ``::cue`` styles the whole cue, ``::cue(selector)`` the nodes the selector matches -- a type
  (``c``, ``i``, ``b``, ``u``, ``v``, ``lang``, ``ruby``, ``rt``), a class (``.x``), the cue's
  identifier (``#id``), an attribute (``v[voice="Fred"]``, ``lang[lang="en"]``), ``:past`` and
  ``:future`` (a node's timestamp before or after the playback position). The cues are rebuilt as
  an HTML tree of those elements, under a player's own style (white text on a box of black at 80%
  opacity) over a video frame that may be any colour (taken as white and as black: text counts as
  hidden only when it cannot be read on either), and judged by
  :class:`~ingestion.parsers.css_visibility.Visibility` like any HTML: ``color: transparent``,
  ``opacity: 0``, ``visibility: hidden``, ``font-size: 0``, ``display: none``...

Fail closed, where a player and this reader may differ: every declaration that hides in HTML counts,
also those ``::cue`` does not apply (``display``, ``transform``: the author asked for the text not to
be shown); a ``STYLE`` block after the first cue (a browser drops it as a broken cue) applies too;
a rule without ``::cue`` is read as if in ``::cue()``, and ``::cue-region`` as ``::cue``; text is
hidden by ``:past``/``:future`` rules when it is hidden both when its cue appears and just before it
goes (``<00:09.000>`` in a cue ending at 00:05 is future all along). A ``STYLE`` block that is not
CSS (a rule or a declaration that does not parse) or that holds ``-->`` is a :class:`ParseError`
naming its line: a browser skips what it cannot parse, and where two parsers might split a broken
sheet differently, the file is better fixed at the source.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import tinycss2
from lxml import etree

from ingestion.parsers.css_visibility import Visibility
from ingestion.structure import ParseError

# A tag of the cue text: from "<" to ">", or to the end of the cue when it is left open.
_TAG_RE = re.compile(r"<([^>]*)(>|\Z)")
_CUE_TAGS = frozenset({"c", "i", "b", "u", "v", "lang", "ruby", "rt"})
_TIMESTAMP_RE = re.compile(r"(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})")
_START_TAG_RE = re.compile(r"([^\s.]*)((?:\.[^\s.]*)*)(\s.*)?", re.DOTALL)
_PAST_FUTURE_RE = re.compile(r":(past|future)\b", re.IGNORECASE)
# Characters an XML tree cannot hold (attribute values are written with them left out).
_NOT_XML_RE = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# A player's own style of a cue: white text on a box of black at 80% opacity.
_PLAYER_STYLE = "{cue} {{ color: #fff; background-color: rgba(0, 0, 0, 0.8) }}\n"
# The video frame behind a cue: any colour, taken as its extremes (a gradient's colours are each a backdrop).
_FRAME_STYLE = "background-image: linear-gradient(#fff, #000)"


@dataclass(frozen=True)
class CueSpan:
    """A cue as the transcript parser found it: identifier, times (seconds) and its text's offsets."""

    ident: str | None
    start: float | None
    end: float | None
    text_start: int
    text_end: int


@dataclass(frozen=True)
class StyleBlock:
    """A ``STYLE`` block: the 0-based line of its ``STYLE`` line and its CSS (the lines after it)."""

    line: int
    css: str


@dataclass
class HiddenCueText:
    """What the file shows of itself: ``ranges`` (sorted offsets) to cut, and the pieces of text cut."""

    ranges: list[tuple[int, int]]
    pieces: list[str]


def _seconds(stamp: str) -> float | None:
    match = _TIMESTAMP_RE.fullmatch(stamp)
    if match is None:
        return None
    hours, minutes, seconds, millis = match.groups()
    return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds) + int(millis) / 1000


def _top_level_split(text: str) -> list[str]:
    """``text`` split at commas outside brackets and strings (a selector list)."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


class _Names:
    """The names this reader gives the tree's own elements, drawn for each file, so that a style sheet
    cannot name them (a rule styling them would reach text no player styles so)."""

    def __init__(self) -> None:
        token = secrets.token_hex(4)
        self.cue = f"bh-cue-{token}"
        self.text = f"bh-t-{token}"
        self.node = f"bh-node-{token}"
        self.past = f"bh-past-{token}"
        self.future = f"bh-future-{token}"


def _cue_selector(selector: str, names: _Names) -> str:
    """A ``::cue(...)`` argument (a selector list over cue nodes) as selectors of the rebuilt tree: each
    one's subject must be a cue node, ``:past``/``:future`` read from the node's timestamp."""
    out = []
    for part in _top_level_split(selector):
        part = _PAST_FUTURE_RE.sub(lambda m: f"[{names.past if m[1].lower() == 'past' else names.future}]",
                                   part.strip())
        if part:
            out.append(f"{part}.{names.node}")
    return ", ".join(out)


def _selector(prelude: str, names: _Names) -> str:
    """A rule's selector list, ``::cue``/``::cue(...)``/``::cue-region`` translated (see the module docstring)."""
    out = []
    for part in _top_level_split(prelude):
        match = re.fullmatch(r"\s*(?:.*?)::cue-region(?:\(.*\))?\s*", part, re.DOTALL | re.IGNORECASE)
        if match is not None:
            out.append(names.cue)
            continue
        match = re.fullmatch(r"\s*(?:.*?)::cue(?:\((.*)\))?\s*", part, re.DOTALL | re.IGNORECASE)
        if match is None:
            translated = _cue_selector(part, names)  # no ::cue: read as if inside one (fail closed)
        elif match[1] is None:
            translated = names.cue
        else:
            translated = _cue_selector(match[1], names)
        if translated:
            out.append(translated)
    return ", ".join(out)


def _error(node, block: StyleBlock) -> ParseError:
    return ParseError(f"malformed STYLE block: {node.message}", line=block.line + 1 + node.source_line)


def _translated(nodes: list, block: StyleBlock, names: _Names) -> str:
    """The CSS of ``nodes`` with its selectors translated; :class:`ParseError` on anything that does not parse."""
    out = []
    for node in nodes:
        if node.type == "error":
            raise _error(node, block)
        if node.type == "declaration":
            out.append(f"{node.name}:{tinycss2.serialize(node.value)}{' !important' if node.important else ''};")
        elif node.type == "qualified-rule":
            contents = tinycss2.parse_blocks_contents(node.content, skip_whitespace=True, skip_comments=True)
            out.append(f"{_selector(tinycss2.serialize(node.prelude), names)} {{ "
                       f"{_translated(contents, block, names)} }}")
        elif node.type == "at-rule" and node.content is not None:
            contents = tinycss2.parse_blocks_contents(node.content, skip_whitespace=True, skip_comments=True)
            out.append(f"@{node.at_keyword} {tinycss2.serialize(node.prelude)} {{ "
                       f"{_translated(contents, block, names)} }}")
    return "\n".join(out)


def _style_sheet(blocks: Sequence[StyleBlock], names: _Names) -> str:
    sheet = [_PLAYER_STYLE.format(cue=names.cue)]
    for block in blocks:
        if "-->" in block.css:
            line = block.line + 1 + block.css[: block.css.index("-->")].count("\n") + 1
            raise ParseError("malformed STYLE block: '-->' may not appear in a STYLE block", line=line)
        nodes = tinycss2.parse_stylesheet(block.css, skip_whitespace=True, skip_comments=True)
        sheet.append(_translated(nodes, block, names))
    return "\n".join(sheet)


def _xml(value: str) -> str:
    return _NOT_XML_RE.sub("", value)


@dataclass
class _Piece:
    element: etree._Element
    start: int
    end: int
    stamp: float | None


class _CueTree:
    """One cue's text as elements under a cue element, its tag parts that a player does not draw, and its
    pieces of text (each in an element of its own, to be judged)."""

    def __init__(self, text: str, cue: CueSpan, parent: etree._Element, names: _Names) -> None:
        self.unshown: list[tuple[int, int]] = []
        self.pieces: list[_Piece] = []
        self.stamps: list[tuple[etree._Element, float | None]] = []
        root = etree.SubElement(parent, names.cue, {"class": names.node})
        if cue.ident:
            root.set("id", _xml(cue.ident))
        current, stamp = root, cue.start
        position = cue.text_start
        body = text[cue.text_start : cue.text_end]
        for match in _TAG_RE.finditer(body):
            tag_start, tag_end = cue.text_start + match.start(), cue.text_start + match.end()
            if tag_start > position:
                self._text(current, position, tag_start, stamp, names)
            position = tag_end
            inside, closed = match[1], bool(match[2])
            inside_start = tag_start + 1
            if not closed:
                self.unshown.append((tag_start, tag_end))  # left open: the rest of the cue is its tag
                break
            if inside.startswith("/"):
                name = inside[1:]
                if current is not root and name == current.tag:
                    current = current.getparent()
                elif name == "ruby" and current.tag == "rt":
                    current = current.getparent().getparent()
                elif name not in _CUE_TAGS:
                    self.unshown.append((tag_start, tag_end))
                continue
            if inside[:1].isdigit():
                seconds = _seconds(inside)
                if seconds is None:
                    self.unshown.append((tag_start, tag_end))
                elif stamp is None or seconds > stamp:
                    stamp = seconds  # an element is past once every timestamp before it is
                continue
            parts = _START_TAG_RE.fullmatch(inside)
            name, classes, annotation = parts[1], parts[2], parts[3]
            if name not in _CUE_TAGS or (name == "rt" and current.tag != "ruby"):
                self.unshown.append((tag_start, tag_end))
                continue
            if classes:
                start = inside_start + len(name)
                self.unshown.append((start, start + len(classes)))
            if annotation and name != "v":
                start = inside_start + len(name) + len(classes)
                self.unshown.append((start, start + len(annotation)))
            attributes = {"class": " ".join([*(c for c in classes.split(".") if c), names.node])}
            if name == "v" and annotation:
                attributes["voice"] = _xml(" ".join(annotation.split()))
            if name == "lang" and annotation:
                attributes["lang"] = _xml(annotation.strip())
            current = etree.SubElement(current, name, {k: _xml(v) for k, v in attributes.items()})
            self.stamps.append((current, stamp))
        else:
            if position < cue.text_end:
                self._text(current, position, cue.text_end, stamp, names)

    def _text(self, parent: etree._Element, start: int, end: int, stamp: float | None, names: _Names) -> None:
        element = etree.SubElement(parent, names.text, {"class": names.node})
        element.text = "x"  # what is judged is where the text is, not what it says
        self.pieces.append(_Piece(element, start, end, stamp))


def hidden_cue_text(text: str, cues: Sequence[CueSpan], styles: Sequence[StyleBlock],
                    unshown_blocks: Sequence[tuple[int, int]]) -> HiddenCueText:
    """What of ``text`` (a WebVTT file) a player never shows: ``unshown_blocks`` (offsets of the NOTE,
    STYLE and REGION blocks and header lines), the tag parts it does not draw, and the cue text its
    ``STYLE`` blocks hide (see the module docstring). :class:`ParseError` for a malformed STYLE block."""
    names = _Names()
    ranges = list(unshown_blocks)
    sheet = _style_sheet(styles, names) if styles else None
    html = etree.Element("html")
    if sheet is not None:
        etree.SubElement(etree.SubElement(html, "head"), "style").text = _xml(sheet)
    frame = etree.SubElement(etree.SubElement(html, "body"), "div", {"style": _FRAME_STYLE})
    trees = []
    for cue in cues:
        tree = _CueTree(text, cue, frame, names)
        ranges.extend(tree.unshown)
        trees.append((cue, tree))
    if sheet is not None:
        # Judged when the cue appears, and (when a rule says :past or :future) again just before it goes.
        timed = any(_PAST_FUTURE_RE.search(block.css) for block in styles)
        moments = ["start", "end"] if timed else ["start"]
        hidden_in: list[set[int]] = []
        for moment in moments:
            for cue, tree in trees:
                now = cue.start if moment == "start" else cue.end
                for element, stamp in tree.stamps:
                    past = stamp is None or now is None or (stamp <= now if moment == "start" else stamp < now)
                    element.attrib.pop(names.future if past else names.past, None)
                    element.set(names.past if past else names.future, "")
            visibility = Visibility(html)
            hidden_in.append({id(piece.element) for _, tree in trees for piece in tree.pieces
                              if visibility.text_hidden(piece.element) is not None})
        always = set.intersection(*hidden_in)
        ranges.extend((piece.start, piece.end) for _, tree in trees for piece in tree.pieces
                      if id(piece.element) in always)
    ranges.sort()
    return HiddenCueText(ranges=ranges, pieces=[text[start:end] for start, end in ranges])
