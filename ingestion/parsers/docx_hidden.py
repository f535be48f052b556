"""Which runs of a Word paragraph a reader sees: hidden, white-on-white and tiny text out (pure).

:class:`RunVisibility` resolves each run's properties as Word does -- document defaults, the
table style of the run's table (its conditional formats included), the paragraph style and the
character style (each with its ``w:basedOn`` chain), then the run's own -- and says why a run is
not shown:

* ``w:vanish`` (hidden text), ``w:specVanish``, ``w:webHidden``. Hidden text is a *toggle*
  property: direct formatting decides; without it, any style that sets it hides (Word would
  cancel two levels that both set it; hiding more is the safe side);
* letters drawn as pictographs: ASCII text in a dingbat font (:data:`DINGBAT_FONTS`: Wingdings, Webdings, ...; by
  ``w:rFonts`` or the theme's font it names);
* a font under 2 pt (``w:sz`` is in half-points; ``w:szCs`` too for a complex-script run; two thirds of it for a
  superscript or subscript, ``w:vertAlign``) or squeezed under 10% wide (``w:w``), or fitted
  into under half a point a character (``w:fitText``); raised or lowered 750 pt or more
  (``w:position``): off the page;
* letters condensed over one another (``w:spacing`` of half the font size or more, negative); a
  paragraph indented or framed off the page (``w:ind``, ``w:framePr``, its own or its style's); a paragraph
  or table row of an exact height under 2 pt (``w:spacing w:lineRule="exact"``, ``w:trHeight w:hRule="exact"``);
* a Word 2010 text fill (``w14:textFill``) of nothing, nearly transparent, or like the background;
* a table indented or floated off the page (``w:tblInd``, ``w:tblpPr``, its own or its table style's);
* text in a complex field's code (between ``w:fldChar`` begin and separate, or end when there is no separate;
  :func:`field_code_runs`): Word shows the field's result, never its code -- a ``w:t`` written there too;
* letters a bidi override (``w:bdo``) draws in another order than they are stored (``rtl`` over Latin letters or
  digits, ``ltr`` over Hebrew or Arabic): the rule of the Unicode overrides (:func:`visible_text.shown_reordered`);
* a text colour (``w:color``, its ``w:themeColor`` read from the theme part, lightened by
  ``w:themeTint`` or darkened by ``w:themeShade``) whose contrast
  with the background behind it is under
  :data:`~ingestion.parsers.css_visibility.MIN_CONTRAST`: the run's highlight, else its
  shading, else the paragraph's, else the table cell's (its own, else its table style's), else the
  table's, else the page colour (``w:background``), else white. ``auto`` is always readable.
  A shading's ``w:themeFill`` (tinted or shaded) is the colour Word paints, not its ``w:fill``.

Table styles (``w:tblStyle``, else the document's default table style): the style's run, paragraph
and cell properties, and those of its conditional formats (``w:tblStylePr``) that apply to the
cell -- by the table's ``w:tblLook`` and the cell's row and column -- layered as ECMA-376 17.7.6
orders them (whole table, column bands, row bands, first/last row, first/last column, corners;
each through the style's ``w:basedOn`` chain). Where Word's behaviour is not certain, every
reading is judged and a run hidden in any of them is hidden (:meth:`RunVisibility._table_layers`).

Headers, footers, footnotes, comments, text boxes and any part the document does not show are
never read by the parser; deleted revisions (``w:del``) and field codes (``w:instrText``) are
not text to python-docx.
"""

from __future__ import annotations

import copy
from typing import NamedTuple

from lxml import etree

from ingestion.parsers.css_visibility import MIN_CONTRAST, MIN_FONT_PX, MIN_OPACITY, OVERLAID_LETTERS, contrast
from ingestion.parsers.visible_text import shown_reordered
from ingestion.structure import ParseError

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_A = "http://schemas.openxmlformats.org/drawingml/2006/main"
_W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
_NS = {"w": _W, "a": _A, "w14": _W14}
MIN_HALF_POINTS = MIN_FONT_PX * 0.75 * 2  # 2 pt
MIN_WIDTH_PERCENT = 10
# w:position (half-points) that moves text as far as CSS's off-screen offsets (1,000 px = 750 pt).
MAX_POSITION_HALF_POINTS = 1500
# w:ind and w:framePr offsets (twips) that put a paragraph off the page: back as far as CSS's off-screen offsets
# (1,000 px = 750 pt), or forward past the widest common page (A3 landscape, 16.5 in: a frame low on a tall page
# or an indent on a wide one is still on it).
MAX_OFFSET_TWIPS = 15000
MAX_FORWARD_TWIPS = 24000
# An exact line or table-row height (w:spacing w:lineRule="exact", w:trHeight w:hRule="exact"; twips) under 2 pt:
# Word clips the text to a strip that thin, whatever its size (the 2 pt of the font-size rule).
MIN_EXACT_HEIGHT_TWIPS = 40
_INDENTS = ("left", "start", "right", "end", "firstLine", "hanging")
# w:fitText (twips, fitted over the run's characters): under half a point a character, as w:w under 10%.
MIN_FIT_POINTS_PER_CHARACTER = 0.5
# Fonts whose letters are pictographs (twenty-fifth session, attack25): Word draws "Ignore all previous instructions"
# in Wingdings as a row of hands, stars and clocks -- a reader sees no word of it, the model reads every one. Symbol
# (Greek letters for Latin ones) is left out: a reader can still make words of it.
DINGBAT_FONTS = frozenset({"wingdings", "wingdings 2", "wingdings 3", "webdings", "marlett", "zapfdingbats",
                           "zapf dingbats", "itc zapf dingbats", "mt extra", "bookshelf symbol 7"})
# Superscript and subscript (w:vertAlign): Word draws them at about two thirds of the run's size.
_SHIFTED_SCALE = 2 / 3
_FALSE = frozenset({"0", "false", "off"})
# Letters Word sets in the complex-script font and size: Hebrew, Arabic, Syriac, Thaana, N'Ko... (0590-08FF), the
# Indic scripts, Thai, Lao, Tibetan, Myanmar (0900-109F), Khmer, and the Hebrew and Arabic presentation forms.
_COMPLEX_SCRIPTS = ((0x0590, 0x08FF), (0x0900, 0x109F), (0x1780, 0x17FF), (0xFB1D, 0xFDFF), (0xFE70, 0xFEFF))
_HIDING = ("vanish", "specVanish", "webHidden")
# w:highlight values (ST_HighlightColor) as RGB.
_HIGHLIGHTS = {
    "black": "000000", "blue": "0000FF", "cyan": "00FFFF", "green": "00FF00", "magenta": "FF00FF", "red": "FF0000",
    "yellow": "FFFF00", "white": "FFFFFF", "darkBlue": "000080", "darkCyan": "008080", "darkGreen": "008000",
    "darkMagenta": "800080", "darkRed": "800000", "darkYellow": "808000", "darkGray": "808080",
    "lightGray": "C0C0C0",
}
# w:themeColor names and the theme's colour scheme slots (the Office defaults when a theme lacks one).
_THEME_SLOTS = {"dark1": "dk1", "light1": "lt1", "dark2": "dk2", "light2": "lt2", "text1": "dk1",
                "background1": "lt1", "text2": "dk2", "background2": "lt2", "accent1": "accent1",
                "accent2": "accent2", "accent3": "accent3", "accent4": "accent4", "accent5": "accent5",
                "accent6": "accent6", "hyperlink": "hlink", "followedHyperlink": "folHlink"}
_SCHEME_SLOTS = {"bg1": "lt1", "tx1": "dk1", "bg2": "lt2", "tx2": "dk2"}
# w:tblLook's attributes and the bits of its older hexadecimal w:val (ECMA-376 17.4.56; Word 2007 writes the bits).
_LOOK_BITS = {"firstRow": 0x0020, "lastRow": 0x0040, "firstColumn": 0x0080, "lastColumn": 0x0100,
              "noHBand": 0x0200, "noVBand": 0x0400}
# A w:tblLook with none of its attributes or bits: banding on, the first and last rows and columns off (ECMA-376's
# defaults). Without any w:tblLook, that and LibreOffice's reading of Word (04A0) are both judged.
_DEFAULT_LOOK: frozenset[str] = frozenset()
_LIBREOFFICE_LOOK = frozenset({"firstRow", "firstColumn", "noVBand"})
# Table styles followed through w:basedOn at most this deep (as paragraph and character styles are).
MAX_STYLE_CHAIN = 64
_THEME_DEFAULTS = {"dk1": "000000", "lt1": "FFFFFF", "dk2": "44546A", "lt2": "E7E6E6"}


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _first_value(levels: list[etree._Element], name: str) -> float | None:
    """The numeric ``w:val`` of the first level (the run's own first) that sets ``w:name``."""
    element = next((level.find(f"w:{name}", _NS) for level in levels if level.find(f"w:{name}", _NS) is not None), None)
    return _number(element.get(_w("val"))) if element is not None else None


def _w(name: str) -> str:
    return f"{{{_W}}}{name}"


def _rgb(value: str | None) -> tuple[float, float, float, float] | None:
    if not value or len(value) != 6:
        return None
    try:
        return (int(value[0:2], 16) / 255, int(value[2:4], 16) / 255, int(value[4:6], 16) / 255, 1.0)
    except ValueError:
        return None


def _fraction(value: str | None) -> float | None:
    """A ``w:themeTint`` / ``w:themeShade`` (a hex byte: ``00``..``FF``) as 0..1, or None."""
    try:
        return min(max(int(value, 16) / 255, 0.0), 1.0) if value else None
    except ValueError:
        return None


def _tinted(color: tuple[float, float, float, float] | None, tint: str | None, shade: str | None):
    """A theme colour as Word paints it: ``w:themeTint`` takes it towards white (``00``: white), ``w:themeShade``
    towards black (``00``: black). Found attacking the demo: black lightened to white on the white page was read
    as black (kept), and white darkened to black on a black shading as white (kept; a grey one was removed)."""
    if color is None:
        return None
    red, green, blue, alpha = color
    if (t := _fraction(tint)) is not None:
        red, green, blue = (c * t + (1 - t) for c in (red, green, blue))
    if (s := _fraction(shade)) is not None:
        red, green, blue = (c * s for c in (red, green, blue))
    return red, green, blue, alpha


def _on(element: etree._Element | None) -> bool | None:
    """A toggle property's value: None when absent."""
    if element is None:
        return None
    return (element.get(_w("val")) or "true").strip().lower() not in _FALSE


def _hex(color: tuple[float, float, float, float] | None) -> str | None:
    return "".join(f"{round(c * 255):02X}" for c in color[:3]) if color is not None else None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "on")


# Elements a table's rows, or a row's cells, may be wrapped in (content controls, custom XML): walked through.
_WRAPPERS = frozenset(f"{{{_W}}}{name}" for name in ("sdt", "sdtContent", "customXml"))


def _children(parent: etree._Element, tag: str) -> list[etree._Element]:
    """The ``w:tag`` children of ``parent``, and those inside :data:`_WRAPPERS` (not inside a nested table)."""
    found: list[etree._Element] = []
    for child in parent:
        if child.tag == _w(tag):
            found.append(child)
        elif child.tag in _WRAPPERS:
            found.extend(_children(child, tag))
    return found


def _ancestor(element: etree._Element | None, tag: str) -> etree._Element | None:
    while element is not None and element.tag != _w(tag):
        element = element.getparent()
    return element


class _TableLayer(NamedTuple):
    """What a table style gives the runs of one cell under one reading of it, each nearest first."""

    run: tuple[etree._Element, ...] = ()        # w:rPr: below the paragraph style, above the document defaults
    paragraph: tuple[etree._Element, ...] = ()  # w:pPr: below the paragraph style's
    cell: tuple[etree._Element, ...] = ()       # w:tcPr: below the cell's own
    table: tuple[etree._Element, ...] = ()      # w:tblPr of the style: below the table's own
    row: tuple[etree._Element, ...] = ()        # w:trPr (its w:trHeight): below the row's own


_NO_TABLE = _TableLayer()

# What this reader reads of a table style's parts: their other properties never hide text.
_READ = {
    "rPr": frozenset(_w(name) for name in ("vanish", "specVanish", "webHidden", "sz", "szCs", "w", "position", "spacing",
                                           "color", "highlight", "shd", "cs", "rtl", "rFonts", "vertAlign")) | frozenset(
        f"{{{_W14}}}{name}" for name in ("textFill", "textOutline")),
    "pPr": frozenset(_w(name) for name in ("shd", "ind", "framePr", "spacing")),
    "tcPr": frozenset({_w("shd")}),
    "tblPr": frozenset(_w(name) for name in ("shd", "tblStyleRowBandSize", "tblStyleColBandSize", "tblInd",
                                             "tblpPr")),
    "trPr": frozenset({_w("trHeight")}),
}
# w:cnfStyle (ECMA-376 17.3.1.8, on a row, a cell, a paragraph or a run): the conditional formats it names, by its
# attributes or the positions of its 12-character w:val, as the table style's w:tblStylePr types.
_CNF_KINDS = (("firstRow", "firstRow"), ("lastRow", "lastRow"), ("firstColumn", "firstCol"),
              ("lastColumn", "lastCol"), ("oddVBand", "band1Vert"), ("evenVBand", "band2Vert"),
              ("oddHBand", "band1Horz"), ("evenHBand", "band2Horz"), ("firstRowFirstColumn", "nwCell"),
              ("firstRowLastColumn", "neCell"), ("lastRowFirstColumn", "swCell"), ("lastRowLastColumn", "seCell"))
# ... layered as the looks' formats are (the last wins): bands, columns, rows, corners.
_CNF_ORDER = ("band1Horz", "band2Horz", "band1Vert", "band2Vert", "lastCol", "firstCol", "lastRow", "firstRow",
              "nwCell", "neCell", "swCell", "seCell")


def _cnf_kinds(element: etree._Element) -> frozenset[str]:
    """The conditional formats a ``w:cnfStyle`` names (its attributes, else its ``w:val`` bits)."""
    named = {kind for attribute, kind in _CNF_KINDS if _truthy(element.get(_w(attribute)))}
    value = element.get(_w("val")) or ""
    named.update(kind for (_, kind), bit in zip(_CNF_KINDS, value, strict=False) if bit == "1")
    return frozenset(named)
_HIDING_TAGS = frozenset(_w(name) for name in ("vanish", "specVanish", "webHidden"))


def _merged(pieces: list[dict[str, etree._Element]], own: etree._Element | None,
            read: frozenset[str]) -> dict[str, etree._Element]:
    """Property elements by tag, nearest first: ``own``'s children (its first of a tag, as ``find`` reads it),
    then each piece's. A hiding toggle on at any level stays on (any style that sets it hides)."""
    merged: dict[str, etree._Element] = {}
    for source in ([{child.tag: child for child in reversed(own) if child.tag in read}] if own is not None else []) \
            + pieces:
        for tag, element in source.items():
            if tag not in merged or (tag in _HIDING_TAGS and _on(element) and not _on(merged[tag])):
                merged[tag] = element
    return merged


def _properties(part: str, merged: dict[str, etree._Element]) -> tuple[etree._Element, ...]:
    """``merged`` as one ``w:part`` element (copies: the style's own stay where they are), or none."""
    if not merged:
        return ()
    element = etree.Element(_w(part), nsmap={"w": _W, "w14": _W14})
    element.extend(copy.deepcopy(merged[tag]) for tag in sorted(merged))
    return (element,)


class RunVisibility:
    """Run visibility for one document (its styles, theme and page colour read once)."""

    def __init__(self, document) -> None:
        self.styles: dict[str, etree._Element] = {}
        self.default_paragraph_style: str | None = None
        self.default_table_style: str | None = None
        self.default_run_properties: etree._Element | None = None
        self.theme: dict[str, str] = dict(_THEME_DEFAULTS)
        self.theme_fonts: dict[str, str] = {}  # "major"/"minor" -> the theme's Latin typeface
        self.page = "FFFFFF"
        self._chains: dict[str | None, list[etree._Element]] = {}
        self._pieces: dict[tuple[str, str | None, str], dict[str, etree._Element]] = {}
        self._conditionals: dict[etree._Element, dict[str, etree._Element]] = {}
        self._layer_cache: dict[tuple, _TableLayer] = {}
        self._sequences: dict[tuple[str, tuple[str, ...]], _TableLayer] = {}
        self._layers: dict[etree._Element, tuple[_TableLayer, ...]] = {}
        self._placed: dict[tuple, tuple[_TableLayer, ...]] = {}
        self._facts: dict[etree._Element, tuple[str, set[frozenset[str]], int, int] | None] = {}
        self._table_rows: dict[etree._Element, dict[etree._Element, int]] = {}
        self._row_cells: dict[etree._Element, dict[etree._Element, tuple[int, int]]] = {}
        # Each list's level paragraph properties (w:numbering: w:num -> w:abstractNum's w:lvl, or a w:lvlOverride's
        # w:lvl), by (numId, ilvl): a list level's w:ind sits under the paragraph's own, over its style's.
        self.numbering: dict[tuple[str, str], etree._Element] = {}
        self._list_levels: dict[etree._Element, etree._Element | None] = {}  # by paragraph: :meth:`_list_level`
        self._bdo_reorders: dict[etree._Element, bool] = {}  # by w:bdo: :meth:`_reordered`
        self._read_numbering(document)
        self.field_codes = field_code_runs(document.element.body)
        try:
            styles = document.styles.element
        except (AttributeError, KeyError, ValueError):
            styles = None
        if styles is not None:
            for style in styles.iterchildren(_w("style")):
                style_id = style.get(_w("styleId"))
                if style_id:
                    self.styles.setdefault(style_id, style)
                if (style.get(_w("default")) or "") in ("1", "true"):
                    if style.get(_w("type")) == "paragraph":
                        self.default_paragraph_style = self.default_paragraph_style or style_id
                    elif style.get(_w("type")) == "table":
                        self.default_table_style = self.default_table_style or style_id
            self.default_run_properties = styles.find("w:docDefaults/w:rPrDefault/w:rPr", _NS)
        self._read_theme(document)
        background = document.element.find("w:background", _NS)
        if background is not None and _rgb(background.get(_w("color"))) is not None:
            self.page = background.get(_w("color"))

    def _read_numbering(self, document) -> None:
        """Each list level's ``w:pPr`` (2026-12-04: a level's indent put its list's paragraphs off the page, and a
        level's exact line height clipped them, and neither was read)."""
        try:
            numbering = document.part.numbering_part.element
        except (AttributeError, KeyError, NotImplementedError, ValueError):
            return
        abstract: dict[str, dict[str, etree._Element]] = {}
        for definition in numbering.iterchildren(_w("abstractNum")):
            levels = {}
            for level in definition.iterchildren(_w("lvl")):
                properties = level.find("w:pPr", _NS)
                if properties is not None:
                    levels.setdefault(level.get(_w("ilvl")) or "0", properties)
            abstract.setdefault(definition.get(_w("abstractNumId")) or "", levels)
        for number in numbering.iterchildren(_w("num")):
            base = number.find("w:abstractNumId", _NS)
            levels = dict(abstract.get(base.get(_w("val")) or "", {})) if base is not None else {}
            for override in number.iterchildren(_w("lvlOverride")):
                properties = override.find("w:lvl/w:pPr", _NS)
                if properties is not None:
                    levels[override.get(_w("ilvl")) or "0"] = properties
            for level, properties in levels.items():
                self.numbering.setdefault((number.get(_w("numId")) or "", level), properties)

    def _list_level(self, paragraph: etree._Element, style: etree._Element | None) -> etree._Element | None:
        """The paragraph properties of the list level the paragraph is on (its own ``w:numPr``, else its
        style's), or None."""
        if not self.numbering:
            return None
        if paragraph in self._list_levels:  # (asked for each run of the paragraph)
            return self._list_levels[paragraph]
        found = None
        for properties in (paragraph.find("w:pPr", _NS), style.find("w:pPr", _NS) if style is not None else None):
            numbered = properties.find("w:numPr", _NS) if properties is not None else None
            if numbered is not None:
                number, level = numbered.find("w:numId", _NS), numbered.find("w:ilvl", _NS)
                if number is None:
                    continue
                found = self.numbering.get((number.get(_w("val")) or "",
                                            (level.get(_w("val")) or "0") if level is not None else "0"))
                break
        self._list_levels[paragraph] = found
        return found

    def _read_theme(self, document) -> None:
        try:
            for rel in document.part.rels.values():
                if rel.reltype.endswith("/theme") and not rel.is_external:
                    root = etree.fromstring(rel.target_part.blob)
                    for kind in ("major", "minor"):
                        latin = root.find(f".//a:fontScheme/a:{kind}Font/a:latin", _NS)
                        if latin is not None and latin.get("typeface"):
                            self.theme_fonts[kind] = latin.get("typeface")
                    scheme = root.find(".//a:clrScheme", _NS)
                    if scheme is None:
                        return
                    for slot in scheme:
                        name = etree.QName(slot).localname
                        color = slot.find("a:srgbClr", _NS)
                        system = slot.find("a:sysClr", _NS)
                        value = color.get("val") if color is not None else (
                            system.get("lastClr") if system is not None else None)
                        if _rgb(value) is not None:
                            self.theme[name] = value
                    return
        except (AttributeError, KeyError, ValueError, etree.XMLSyntaxError):
            return

    # -- properties -----------------------------------------------------------------------------------

    def _chain(self, style_id: str | None) -> list[etree._Element]:
        """The rPr of a style and of the styles it is based on, nearest first (cycles cut)."""
        if style_id in self._chains:
            return self._chains[style_id]
        chain: list[etree._Element] = []
        seen: set[str] = set()
        current = style_id
        while current and current not in seen and len(seen) < 64:
            seen.add(current)
            style = self.styles.get(current)
            if style is None:
                break
            properties = style.find("w:rPr", _NS)
            if properties is not None:
                chain.append(properties)
            based = style.find("w:basedOn", _NS)
            current = based.get(_w("val")) if based is not None else None
        self._chains[style_id] = chain
        return chain

    def _piece(self, style_id: str | None, kind: str | None, part: str, depth: int = 0) -> dict[str, etree._Element]:
        """What table style ``style_id`` gives of the properties this reader reads in its ``part`` (``rPr``,
        ``pPr``, ``tcPr``, ``tblPr``) -- of its conditional format ``kind`` (None: of the style itself) -- by tag:
        its own, else its base style's (``w:basedOn``, cycles and chains past :data:`MAX_STYLE_CHAIN` cut). A
        hiding toggle set on at any level of the chain stays on. Merged once a style, kind and part, so a cell's
        table style costs its runs one property set however deep the chain."""
        if not style_id or depth >= MAX_STYLE_CHAIN:
            return {}
        key = (style_id, kind, part)
        if key in self._pieces:
            return self._pieces[key]
        self._pieces[key] = {}  # a cycle back to this style reads nothing further
        style = self.styles.get(style_id)
        if style is None:
            return {}
        source = style if kind is None else self._conditional(style, kind)
        own = source.find(f"w:{part}", _NS) if source is not None else None
        based = style.find("w:basedOn", _NS)
        merged = _merged([self._piece(based.get(_w("val")) if based is not None else None, kind, part, depth + 1)],
                         own, _READ[part])
        self._pieces[key] = merged
        return merged

    def _conditional(self, style: etree._Element, kind: str) -> etree._Element | None:
        """The style's first ``w:tblStylePr`` of type ``kind`` (indexed once a style)."""
        conditionals = self._conditionals.get(style)
        if conditionals is None:
            conditionals = self._conditionals[style] = {}
            for conditional in style.iterchildren(_w("tblStylePr")):
                conditionals.setdefault(conditional.get(_w("type")) or "", conditional)
        return conditionals.get(kind)

    def _position(self, row: etree._Element, table: etree._Element, cell: etree._Element
                  ) -> tuple[int, int, int, int, int]:
        """The cell's row and the table's row count, its place among the row's cells, their count, and its grid
        column (``w:gridBefore`` and the spans before it). Counted once a table and once a row."""
        rows = self._table_rows.get(table)
        if rows is None:
            rows = self._table_rows[table] = {tr: index for index, tr in enumerate(_children(table, "tr"))}
        cells = self._row_cells.get(row)
        if cells is None:
            before = row.find("w:trPr/w:gridBefore", _NS)
            column = int(_number(before.get(_w("val"))) or 0) if before is not None else 0
            cells = {}
            for index, tc in enumerate(_children(row, "tc")):
                cells[tc] = (index, column)
                span = tc.find("w:tcPr/w:gridSpan", _NS)
                column += max(int(_number(span.get(_w("val"))) or 1), 1) if span is not None else 1
            self._row_cells[row] = cells
        index, column = cells.get(cell, (len(cells), len(cells)))
        return rows.get(row, len(rows)), len(rows), index, len(cells), column

    @staticmethod
    def _looks(look: etree._Element | None) -> set[frozenset[str]]:
        """Which conditional formats ``w:tblLook`` turns on (its attributes, else the bits of its ``w:val``; no
        look: row and column banding only, as Word reads it). Attributes and bits that disagree: both readings."""
        if look is None:
            return {_DEFAULT_LOOK}
        looks: set[frozenset[str]] = set()
        if any(look.get(_w(name)) is not None for name in _LOOK_BITS):
            looks.add(frozenset(name for name in _LOOK_BITS if _truthy(look.get(_w(name)))))
        try:
            bits = int(look.get(_w("val")) or "", 16)
        except ValueError:
            bits = None
        if bits is not None:
            looks.add(frozenset(name for name, bit in _LOOK_BITS.items() if bits & bit))
        return looks or {_DEFAULT_LOOK}

    @staticmethod
    def _band_size(properties: etree._Element | None, style: dict[str, etree._Element], name: str) -> int:
        element = properties.find(f"w:{name}", _NS) if properties is not None else None
        element = element if element is not None else style.get(_w(name))
        return max(int(_number(element.get(_w("val"))) or 1), 1) if element is not None else 1

    def _table_layers(self, cell: etree._Element | None) -> tuple[_TableLayer, ...]:
        """What the cell's table style gives its runs: one :class:`_TableLayer` per reading of it that Word may
        make, deduplicated (one when the table has no style).

        The conditional formats that apply to the cell, as LibreOffice's Word import reads them
        (``writerfilter``'s ``DomainMapperTableHandler`` and ``TableStyleSheetEntry``): a first row (the first,
        when the look turns it on, or any row marked ``w:tblHeader``) or a last row, else a row band -- odd or
        even counting from the row after a first row that is on, in groups of ``w:tblStyleRowBandSize`` --
        unless ``noHBand``; a first or last column (the first or last cell of its row), else a column band
        likewise (by the cell's place in its row and, when a span or ``w:gridBefore`` moves it, by its grid
        column too); a corner (``nwCell``...) when both its row's and its column's formats apply. They are
        layered whole table, row bands, column bands, last and first column, last and first row, corners (the
        last wins). The rows win over the columns: Word's own "Colorful Shading" sets black text in its top-left
        cell, on the first row's white, over the first column's dark shading -- read the other way it would
        be black on black. Fail closed, two more readings: the bands in the order of ECMA-376 17.7.6's text
        (column bands under row bands), and, without a ``w:tblLook``, both the standard's default (bands only)
        and LibreOffice's (``04A0``: first row, first column, row bands)."""
        if cell is None:
            return (_NO_TABLE,)
        cached = self._layers.get(cell)
        if cached is not None:
            return cached
        row = _ancestor(cell, "tr")
        table = _ancestor(row, "tbl")
        facts = self._table_facts(table) if row is not None and table is not None else None
        if facts is None:
            self._layers[cell] = (_NO_TABLE,)
            return self._layers[cell]
        style_id, looks, row_band, column_band = facts
        i, rows, j, cells, column = self._position(row, table, cell)
        header = bool(_on(row.find("w:trPr/w:tblHeader", _NS)))
        # The formats a w:cnfStyle names on the row, the cell, its paragraphs or their runs (2026-12-04): one more
        # reading, those formats over the whole table's (fail closed: whether Word follows them or recomputes them
        # from the look, hidden in either is hidden; Word writes them as the look gives them).
        named: set[str] = set()
        for holder in (row.find("w:trPr", _NS), cell.find("w:tcPr", _NS)):
            for cnf in holder.iterchildren(_w("cnfStyle")) if holder is not None else ():
                named |= _cnf_kinds(cnf)
        for paragraph in cell.iterchildren(_w("p")):
            for cnf in paragraph.iter(_w("cnfStyle")):
                named |= _cnf_kinds(cnf)
        # Cells in the same place as far as the formats go share their layers.
        place = (id(table), i == 0, i == rows - 1, i // row_band % 2, (i - 1) // row_band % 2, header and 0 < i,
                 j == 0, j == cells - 1, *(p // column_band % 2 for p in (j, j - 1, column, column - 1)),
                 frozenset(named))
        shared = self._placed.get(place)
        if shared is not None:
            self._layers[cell] = shared
            return shared
        sequences: set[tuple[str, ...]] = set()
        for look in looks:
            first_row = ("firstRow" in look and i == 0) or bool(header and 0 < i < rows - 1)
            last_row = "lastRow" in look and i == rows - 1 and not first_row
            first_col = "firstColumn" in look and j == 0
            last_col = "lastColumn" in look and j == cells - 1 and not first_col
            row_bands: tuple[str, ...] = ()
            if "noHBand" not in look and not (first_row or last_row):
                k = i - (1 if "firstRow" in look else 0)
                row_bands = ("band1Horz" if k // row_band % 2 == 0 else "band2Horz",)
            column_bands: set[str] = set()
            if "noVBand" not in look and not (first_col or last_col):
                for at in {j, column}:
                    k = at - (1 if "firstColumn" in look else 0)
                    column_bands.add("band1Vert" if k // column_band % 2 == 0 else "band2Vert")
            columns = ("lastCol",) if last_col else ("firstCol",) if first_col else ()
            row_formats = ("lastRow",) if last_row else ("firstRow",) if first_row else ()
            corner = {("firstRow", "firstCol"): "nwCell", ("firstRow", "lastCol"): "neCell",
                      ("lastRow", "firstCol"): "swCell", ("lastRow", "lastCol"): "seCell"}.get((*row_formats,
                                                                                               *columns))
            corners = (corner,) if corner else ()
            for vertical in column_bands or {None}:
                verticals = (vertical,) if vertical else ()
                sequences.add(("wholeTable", *row_bands, *verticals, *columns, *row_formats, *corners))
                sequences.add(("wholeTable", *verticals, *row_bands, *columns, *row_formats, *corners))
        if named:
            sequences.add(("wholeTable", *(kind for kind in _CNF_ORDER if kind in named)))
        layers = {id(layer): layer for layer in (self._layer(style_id, sequence) for sequence in sorted(sequences))}
        self._layers[cell] = self._placed[place] = tuple(layers.values())
        return self._layers[cell]

    def _table_facts(self, table: etree._Element) -> tuple[str, set[frozenset[str]], int, int] | None:
        """The table's style (None: no style this document defines), its looks and band sizes -- read once."""
        if table in self._facts:
            return self._facts[table]
        properties = table.find("w:tblPr", _NS)
        style = properties.find("w:tblStyle", _NS) if properties is not None else None
        style_id = style.get(_w("val")) if style is not None else self.default_table_style
        facts = None
        if style_id and style_id in self.styles:
            style_table = self._piece(style_id, None, "tblPr")
            look = properties.find("w:tblLook", _NS) if properties is not None else None
            facts = (style_id, self._looks(look) if look is not None else {_DEFAULT_LOOK, _LIBREOFFICE_LOOK},
                     self._band_size(properties, style_table, "tblStyleRowBandSize"),
                     self._band_size(properties, style_table, "tblStyleColBandSize"))
        self._facts[table] = facts
        return facts

    def _layer(self, style_id: str, sequence: tuple[str, ...]) -> _TableLayer:
        """The table style's properties with its conditional formats ``sequence`` applied in that order (the last
        wins), one property set a part; the same properties give the same layer (so readings that agree are
        judged once). Built once a style and sequence: a table of many cells has a handful of sequences."""
        built = self._sequences.get((style_id, sequence))
        if built is not None:
            return built
        parts = []
        for part in ("rPr", "pPr", "tcPr"):
            pieces = [self._piece(style_id, kind, part) for kind in reversed(sequence)]
            parts.append(_merged([*pieces, self._piece(style_id, None, part)], None, _READ[part]))
        parts.append(self._piece(style_id, None, "tblPr"))
        parts.append(_merged([*(self._piece(style_id, kind, "trPr") for kind in reversed(sequence)),
                              self._piece(style_id, None, "trPr")], None, _READ["trPr"]))
        built_parts = tuple(_properties(part, merged) for part, merged in zip(("rPr", "pPr", "tcPr", "tblPr", "trPr"),
                                                                              parts, strict=True))
        key = tuple(etree.tostring(element) for elements in built_parts for element in elements)
        layer = self._layer_cache.get(key)
        if layer is None:
            layer = self._layer_cache[key] = _TableLayer(*built_parts)
        self._sequences[(style_id, sequence)] = layer
        return layer

    def _levels(self, run: etree._Element, paragraph: etree._Element,
                layer: _TableLayer = _NO_TABLE) -> list[etree._Element]:
        """The run's property sets, nearest first: its own, its character style's, its paragraph style's, its
        table style's, the document defaults."""
        levels: list[etree._Element] = []
        own = run.find("w:rPr", _NS)
        if own is not None:
            levels.append(own)
        run_style = own.find("w:rStyle", _NS) if own is not None else None
        if run_style is not None:
            levels.extend(self._chain(run_style.get(_w("val"))))
        paragraph_style = paragraph.find("w:pPr/w:pStyle", _NS)
        levels.extend(self._chain(paragraph_style.get(_w("val")) if paragraph_style is not None
                                  else self.default_paragraph_style))
        levels.extend(layer.run)
        if self.default_run_properties is not None:
            levels.append(self.default_run_properties)
        return levels

    def _color(self, element: etree._Element) -> tuple[float, float, float, float] | None | str:
        theme = element.get(_w("themeColor"))
        if theme:
            slot = _THEME_SLOTS.get(theme)
            value = self.theme.get(slot) if slot else None
            if value:
                return _tinted(_rgb(value), element.get(_w("themeTint")), element.get(_w("themeShade")))
        value = element.get(_w("val"))
        if value is None or value.lower() == "auto":
            return "auto"
        return _rgb(value)

    def _theme_hex(self, element: etree._Element, name: str, tint: str, shade: str) -> str | None:
        """A shading's theme colour (``w:themeFill`` / ``w:themeColor``, tinted or shaded) as hex, or None."""
        slot = _THEME_SLOTS.get(element.get(_w(name)) or "")
        value = self.theme.get(slot) if slot else None
        return _hex(_tinted(_rgb(value), element.get(_w(tint)), element.get(_w(shade)))) if value else None

    def _shading(self, element: etree._Element | None) -> str | None:
        """The colour a ``w:shd`` paints (a solid pattern paints its ``w:color``; a percentage pattern ``pctN`` that
        share of its ``w:color``, black when ``auto``, over its fill -- found attacking hidden text, 2026-12-03:
        black text on a ``pct95`` black shading was judged against the white fill), or None. A theme colour
        (``w:themeFill``, ``w:themeColor``, with their tints and shades) is what Word paints, not the hex beside it
        (2026-12-04: Word's own table styles shade by theme; ``w:fill="FFFFFF" w:themeFill="text1"`` is black)."""
        if element is None:
            return None
        pattern = element.get(_w("val")) or ""
        fill = self._theme_hex(element, "themeFill", "themeFillTint", "themeFillShade") or element.get(_w("fill"))
        ink = self._theme_hex(element, "themeColor", "themeTint", "themeShade") or element.get(_w("color"))
        value = ink if pattern == "solid" else fill
        share = _number(pattern[3:]) if pattern.startswith("pct") else None
        if share is not None and 0 < share <= 100:
            ink_rgb = _rgb("000000" if ink is None or ink.lower() == "auto" else ink)
            ground = _rgb(value if value is not None and value.lower() != "auto" else "FFFFFF")
            if ink_rgb is not None and ground is not None:
                mixed = (round((i * share + g * (100 - share)) / 100 * 255) for i, g in zip(ink_rgb[:3], ground[:3],
                                                                                             strict=True))
                return "".join(f"{channel:02X}" for channel in mixed)
        return value if _rgb(value) is not None else None

    def _background(self, run_levels: list[etree._Element], paragraph: etree._Element,
                    cell: etree._Element | None, layer: _TableLayer = _NO_TABLE) -> str:
        for properties in run_levels:
            highlight = properties.find("w:highlight", _NS)
            if highlight is not None and highlight.get(_w("val")) in _HIGHLIGHTS:
                return _HIGHLIGHTS[highlight.get(_w("val"))]
            shading = self._shading(properties.find("w:shd", _NS))
            if shading:
                return shading
        shading = self._shading(paragraph.find("w:pPr/w:shd", _NS))
        if shading:
            return shading
        paragraph_style = paragraph.find("w:pPr/w:pStyle", _NS)
        style = self.styles.get(paragraph_style.get(_w("val")) if paragraph_style is not None
                                else self.default_paragraph_style or "")
        for properties in (style.find("w:pPr", _NS) if style is not None else None, *layer.paragraph):
            shading = self._shading(properties.find("w:shd", _NS)) if properties is not None else None
            if shading:
                return shading
        if cell is not None:
            # The cell's shading (its own, else its table style's), else the row's exceptions' and the table's.
            row = _ancestor(cell, "tr")
            table = _ancestor(row, "tbl")
            for properties in (cell.find("w:tcPr", _NS), *layer.cell,
                               row.find("w:tblPrEx", _NS) if row is not None else None,
                               table.find("w:tblPr", _NS) if table is not None else None, *layer.table):
                shading = self._shading(properties.find("w:shd", _NS)) if properties is not None else None
                if shading:
                    return shading
        return self.page

    def _off_the_page(self, paragraph: etree._Element, layer: _TableLayer = _NO_TABLE) -> bool:
        """An indent (``w:ind``) or a frame's position (``w:framePr``) of the paragraph, or of its style, that puts
        it off the page (:data:`MAX_OFFSET_TWIPS` back, :data:`MAX_FORWARD_TWIPS` forward; found attacking the
        demo). Word shows none of it; legitimate indents and frames stay on the page."""
        paragraph_style = paragraph.find("w:pPr/w:pStyle", _NS)
        style = self.styles.get(paragraph_style.get(_w("val")) if paragraph_style is not None
                                else self.default_paragraph_style or "")
        for properties in (paragraph.find("w:pPr", _NS), self._list_level(paragraph, style),
                           style.find("w:pPr", _NS) if style is not None else None, *layer.paragraph):
            if properties is None:
                continue
            for name, attributes in (("ind", _INDENTS), ("framePr", ("x", "y"))):
                element = properties.find(f"w:{name}", _NS)
                if element is not None and any(
                        (value := _number(element.get(_w(a)))) is not None
                        and (value <= -MAX_OFFSET_TWIPS or value >= MAX_FORWARD_TWIPS) for a in attributes):
                    return True
        return False

    def _table_off_the_page(self, cell: etree._Element | None, layer: _TableLayer = _NO_TABLE) -> bool:
        """A table holding the cell -- itself, or one it is nested in -- indented (``w:tblInd``, in twips) or
        floated (``w:tblpPr``'s ``w:tblpX``/``w:tblpY``) as far off the page as :meth:`_off_the_page`'s paragraphs,
        by its own properties or (the cell's own table) its table style's (fifteenth session: a table's cells
        reached the model wherever the table was put). A percentage indent (``w:type="pct"``) moves no further
        than the page."""
        tables = []
        table = _ancestor(cell, "tbl")
        while table is not None:
            tables.append(table.find("w:tblPr", _NS))
            table = _ancestor(table.getparent(), "tbl")
        for properties in (*tables, *layer.table):
            if properties is None:
                continue
            indent = properties.find("w:tblInd", _NS)
            if indent is not None and (indent.get(_w("type")) or "dxa") in ("dxa", "nil"):
                value = _number(indent.get(_w("w")))
                if value is not None and (value <= -MAX_OFFSET_TWIPS or value >= MAX_FORWARD_TWIPS):
                    return True
            floating = properties.find("w:tblpPr", _NS)
            if floating is not None and any(
                    (value := _number(floating.get(_w(a)))) is not None
                    and (value <= -MAX_OFFSET_TWIPS or value >= MAX_FORWARD_TWIPS) for a in ("tblpX", "tblpY")):
                return True
        return False

    def _reordered(self, run: etree._Element, paragraph: etree._Element) -> bool:
        """Whether the nearest ``w:bdo`` around ``run`` (within ``paragraph``) draws its text in another order than
        it is stored; judged on the override's whole shown text, so its every run goes with it."""
        element = run.getparent()
        while element is not None and element is not paragraph and element.tag != _w("bdo"):
            element = element.getparent()
        if element is None or element is paragraph:
            return False
        if element not in self._bdo_reorders:
            text = "".join(r.text if isinstance(r.text, str) else "" for r in _shown_runs(element))
            direction = (element.get(_w("val")) or "").strip().lower()
            self._bdo_reorders[element] = direction in ("rtl", "ltr") and shown_reordered(text, rtl=direction == "rtl")
        return self._bdo_reorders[element]

    def _clipped_flat(self, paragraph: etree._Element, cell: etree._Element | None,
                      layer: _TableLayer = _NO_TABLE) -> bool:
        """An exact line height (``w:spacing w:lineRule="exact"``, the paragraph's or its style's) or an exact height
        of the cell's table row (``w:trHeight w:hRule="exact"``) under :data:`MIN_EXACT_HEIGHT_TWIPS`: Word clips
        the text to it. ``atLeast`` (or no rule) grows with the text; an exact height of a line (240: 12 pt) shows it."""
        paragraph_style = paragraph.find("w:pPr/w:pStyle", _NS)
        style = self.styles.get(paragraph_style.get(_w("val")) if paragraph_style is not None
                                else self.default_paragraph_style or "")
        for properties in (paragraph.find("w:pPr", _NS), self._list_level(paragraph, style),
                           style.find("w:pPr", _NS) if style is not None else None, *layer.paragraph):
            spacing = properties.find("w:spacing", _NS) if properties is not None else None
            if spacing is not None and spacing.get(_w("line")) is not None:  # the paragraph's own wins over its style's
                line = _number(spacing.get(_w("line")))
                if spacing.get(_w("lineRule")) == "exact" and line is not None and 0 <= line < MIN_EXACT_HEIGHT_TWIPS:
                    return True
                break
        row = cell.getparent() if cell is not None else None
        height = row.find("w:trPr/w:trHeight", _NS) if row is not None else None
        if height is None and layer.row:  # the row's own height wins over its table style's (2026-12-04)
            height = layer.row[0].find("w:trHeight", _NS)
        if height is not None and height.get(_w("hRule")) == "exact":
            value = _number(height.get(_w("val")))
            return value is not None and 0 <= value < MIN_EXACT_HEIGHT_TWIPS
        return False

    def _unpainted(self, fill: etree._Element, levels: list[etree._Element], paragraph: etree._Element,
                   cell: etree._Element | None, layer: _TableLayer = _NO_TABLE) -> bool:
        """Whether a Word 2010 text fill (``w14:textFill``, which Word paints instead of ``w:color``) leaves the
        text unseen: no fill, a solid fill under :data:`MIN_OPACITY` (``w14:alpha`` is its transparency, in
        thousandths of a percent) or of a colour like the background -- unless an outline (``w14:textOutline``)
        draws it. Found attacking the demo: fully transparent text reached the model."""
        outline = next((level.find("w14:textOutline", _NS) for level in levels
                        if level.find("w14:textOutline", _NS) is not None), None)
        if outline is not None and outline.find("w14:noFill", _NS) is None and len(outline):
            return False
        if fill.find("w14:noFill", _NS) is not None:
            return True
        solid = fill.find("w14:solidFill", _NS)
        if solid is None or not len(solid):
            return False  # a gradient: not evaluated (taken as visible)
        color_element = solid[0]
        alpha = color_element.find("w14:alpha", _NS)
        transparency = _number(alpha.get(f"{{{_W14}}}val")) if alpha is not None else None
        if transparency is not None and 1 - transparency / 100000 < MIN_OPACITY:
            return True
        value = color_element.get(f"{{{_W14}}}val")
        if etree.QName(color_element).localname == "schemeClr":  # DrawingML's names: bg1, tx1, accent1, dk1...
            value = self.theme.get(_SCHEME_SLOTS.get(value or "", value or ""))
        color, background = _rgb(value), _rgb(self._background(levels, paragraph, cell, layer))
        return color is not None and background is not None and contrast(color, background) < MIN_CONTRAST

    @staticmethod
    def _complex_script(run: etree._Element, levels: list[etree._Element]) -> bool:
        """Whether Word sizes (some of) the run by its complex-script size (``w:szCs``): a run marked ``w:cs`` or
        ``w:rtl`` is complex script whatever its letters (ECMA-376 17.3.2.7, 17.3.2.30), and so are the letters of
        the complex scripts (found attacking hidden text, 2026-12-03: ``<w:cs/><w:szCs w:val="1"/>`` drew a Latin
        run at half a point, and it reached the model)."""
        for name in ("cs", "rtl"):
            if next((_on(level.find(f"w:{name}", _NS)) for level in levels
                     if level.find(f"w:{name}", _NS) is not None), False):
                return True
        text = "".join(t.text or "" for t in run.findall("w:t", _NS))
        return any(low <= ord(c) <= high for c in text for low, high in _COMPLEX_SCRIPTS)

    def hidden(self, run: etree._Element, paragraph: etree._Element, cell: etree._Element | None = None) -> str | None:
        """Why ``run`` (a ``w:r`` of ``paragraph``, inside table ``cell`` if any) is not shown, or None: hidden in
        any reading of its table style is hidden."""
        if run in self.field_codes:
            return "a field's code (Word shows its result)"
        if self._reordered(run, paragraph):
            return "letters a bidi override (w:bdo) shows in another order than stored"
        for layer in self._table_layers(cell):
            reason = self._hidden(run, paragraph, cell, layer)
            if reason:
                return reason
        return None

    def _hidden(self, run: etree._Element, paragraph: etree._Element, cell: etree._Element | None,
                layer: _TableLayer) -> str | None:
        levels = self._levels(run, paragraph, layer)
        own = run.find("w:rPr", _NS)
        for name in _HIDING:
            direct = _on(own.find(f"w:{name}", _NS)) if own is not None else None
            if direct or (direct is None and any(_on(level.find(f"w:{name}", _NS)) for level in levels)):
                return "hidden text"
        size = next((level.find("w:sz", _NS) for level in levels if level.find("w:sz", _NS) is not None), None)
        sizes = [size]
        if self._complex_script(run, levels):
            sizes.append(next((level.find("w:szCs", _NS) for level in levels
                               if level.find("w:szCs", _NS) is not None), None))
        sizes.extend(self._table_sizes(run, paragraph, layer))
        shifted = next((level.find("w:vertAlign", _NS) for level in levels
                        if level.find("w:vertAlign", _NS) is not None), None)
        scale = _SHIFTED_SCALE if shifted is not None and shifted.get(_w("val")) in ("superscript", "subscript") else 1
        for element in sizes:
            if element is not None:
                try:
                    if float(element.get(_w("val")) or 20) * scale < MIN_HALF_POINTS:
                        return "a font too small to read"
                except ValueError:
                    pass
        if self._dingbats(run, levels):
            return "letters drawn as pictographs (a symbol font)"
        width = next((level.find("w:w", _NS) for level in levels if level.find("w:w", _NS) is not None), None)
        if width is not None:
            try:
                if float(width.get(_w("val")) or 100) < MIN_WIDTH_PERCENT:
                    return "text squeezed too narrow to read"
            except ValueError:
                pass
        position = _first_value(levels, "position")
        if position is not None and abs(position) >= MAX_POSITION_HALF_POINTS:
            return "text raised or lowered off the page"
        # Character spacing (w:spacing, twips) condensed by half the font size or more: letters drawn over one
        # another, as CSS letter-spacing (found attacking the demo).
        spacing = _first_value(levels, "spacing")
        size_points = (_number(size.get(_w("val"))) or 20) / 2 if size is not None else 10
        if spacing is not None and spacing / 20 <= -OVERLAID_LETTERS * size_points:
            return "letters drawn over one another"
        if self._off_the_page(paragraph, layer):
            return "a paragraph moved off the page"
        if self._table_off_the_page(cell, layer):
            return "a table moved off the page"
        if self._clipped_flat(paragraph, cell, layer):
            return "text clipped to an exact line or row height under 2 pt"
        fit = run.find("w:rPr/w:fitText", _NS)  # direct formatting only: a style cannot fit text
        fit_twips = _number(fit.get(_w("val"))) if fit is not None else None
        characters = sum(len(t.text or "") for t in run.findall("w:t", _NS))
        if fit_twips is not None and characters and fit_twips / 20 / characters < MIN_FIT_POINTS_PER_CHARACTER:
            return "text fitted into a width too narrow to read"
        fill = next((level.find("w14:textFill", _NS) for level in levels
                     if level.find("w14:textFill", _NS) is not None), None)
        if fill is not None and self._unpainted(fill, levels, paragraph, cell, layer):
            return "text filled with nothing, or transparent or like its background (w14:textFill)"
        color_element = next((level.find("w:color", _NS) for level in levels
                              if level.find("w:color", _NS) is not None), None)
        if color_element is not None:
            color = self._color(color_element)
            background = _rgb(self._background(levels, paragraph, cell, layer))
            if isinstance(color, tuple) and background is not None and contrast(color, background) < MIN_CONTRAST:
                return "text coloured like its background"
        return None

    def _dingbats(self, run: etree._Element, levels: list[etree._Element]) -> bool:
        """Whether the run's ASCII letters and digits are drawn in a font of pictographs (:data:`DINGBAT_FONTS`):
        its ``w:rFonts`` ``w:asciiTheme`` (the theme's major or minor Latin typeface; it wins over ``w:ascii``), else
        ``w:ascii``, from the nearest property set that names one."""
        if not any(ch.isascii() and ch.isalnum() for t in run.findall("w:t", _NS) for ch in (t.text or "")):
            return False
        for level in levels:
            fonts = level.find("w:rFonts", _NS)
            if fonts is None:
                continue
            theme = fonts.get(_w("asciiTheme"))
            if theme:
                family = self.theme_fonts.get("major" if theme.startswith("major") else "minor", "")
            elif fonts.get(_w("ascii")):
                family = fonts.get(_w("ascii"))
            else:
                continue
            return " ".join(family.lower().split()) in DINGBAT_FONTS
        return False

    def _table_sizes(self, run: etree._Element, paragraph: etree._Element, layer: _TableLayer) -> list:
        """The table style's font sizes (``w:sz``, ``w:szCs``) when Word may draw the run at them though the
        paragraph style sets its own: in a paragraph of the default style, unless the run or its character style
        sets the size -- Word 2007's reading (without ``overrideTableStyleFontSizeAndJustification``) puts the
        table style's size over the Normal style's; both readings are judged (fail closed)."""
        if not layer.run:
            return []
        paragraph_style = paragraph.find("w:pPr/w:pStyle", _NS)
        if paragraph_style is not None and paragraph_style.get(_w("val")) != self.default_paragraph_style:
            return []
        own = run.find("w:rPr", _NS)
        run_style = own.find("w:rStyle", _NS) if own is not None else None
        nearer = ([own] if own is not None else []) + (self._chain(run_style.get(_w("val")))
                                                      if run_style is not None else [])
        sizes = []
        for name in ("sz", "szCs"):
            if any(level.find(f"w:{name}", _NS) is not None for level in nearer):
                continue
            element = next((level.find(f"w:{name}", _NS) for level in layer.run
                            if level.find(f"w:{name}", _NS) is not None), None)
            if element is not None and (name == "sz" or self._complex_script(run, self._levels(run, paragraph,
                                                                                               layer))):
                sizes.append(element)
        return sizes

    def paragraph_text(self, paragraph: etree._Element, cell: etree._Element | None = None,
                       hidden: list[str] | None = None) -> str:
        """What a reader sees of a ``w:p`` (python-docx's ``Paragraph.text`` without hidden runs);
        the hidden runs' text is appended to ``hidden``."""
        parts = []
        for run in _shown_runs(paragraph):
            text = run.text if isinstance(run.text, str) else ""
            if not text:
                continue
            if self.hidden(run, paragraph, cell):
                if hidden is not None:
                    hidden.append(text)
            else:
                parts.append(text)
        return "".join(parts)


# Containers of a paragraph's runs that Word shows as the paragraph's text: a hyperlink, a tracked insertion or
# move, a simple field's result, a content control, a smart tag, custom XML, bidi and direction overrides.
# (Runs directly under w:del or w:moveFrom are deleted text; a run inside another w:p -- a text box drawn in a
# run -- belongs to that paragraph; mc:Fallback repeats mc:Choice.)
_RUN_CONTAINERS = frozenset(f"{{{_NS['w']}}}{name}" for name in (
    "hyperlink", "ins", "moveTo", "fldSimple", "sdt", "sdtContent", "smartTag", "customXml", "bdo", "dir"))


def _shown_runs(paragraph: etree._Element) -> list[etree._Element]:
    """The ``w:r`` of ``paragraph`` whose text Word shows as the paragraph's, in order: its own and those inside
    :data:`_RUN_CONTAINERS` at any depth (found fuzzing the markers, 2026-12-03: the text of a tracked insertion,
    a content control, a smart tag or a simple field's result was missing from what the model reads, and its
    runs' hidden-text checks never ran)."""
    runs: list[etree._Element] = []

    def walk(element: etree._Element) -> None:
        for child in element:
            if child.tag == f"{{{_NS['w']}}}r":
                runs.append(child)
            elif child.tag in _RUN_CONTAINERS:
                walk(child)

    walk(paragraph)
    return runs



# A text box's paragraphs (w:txbxContent) are a story of their own, with fields of their own; mc:Fallback repeats
# mc:Choice. Neither is the body's text.
_OTHER_STORIES = frozenset({_w("txbxContent"), "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"})
_RUN_TEXT = frozenset(_w(name) for name in ("t", "tab", "br", "cr", "noBreakHyphen", "ptab", "sym"))


def field_code_runs(body: etree._Element) -> set[etree._Element]:
    """The ``w:r`` of ``body`` that hold text inside a complex field's code: after its ``w:fldChar
    w:fldCharType="begin"`` and before its ``separate`` (or its ``end`` when it has no separate), nested fields
    included -- a field inside another's code is code, its result too. Word shows a field's result and never its
    code, ``w:t`` written there included (LibreOffice's import reads such text as the field's command); python-docx
    read every ``w:t`` of a paragraph, so text planted in a code reached the model (fifteenth session). A field
    code may run over paragraphs, so the body is walked once in document order. A field that never ends would make
    the rest of the document its code: a :class:`ParseError` naming the paragraph it begins in, not a guess."""
    runs: set[etree._Element] = set()
    fields: list[list] = []  # per open field: [in its code?, paragraph it begins in]
    paragraph = 0
    walk = etree.iterwalk(body, events=("start",))
    for _event, element in walk:
        tag = element.tag
        if tag in _OTHER_STORIES:
            walk.skip_subtree()
        elif tag == _w("p"):
            paragraph += 1
        elif tag == _w("fldChar"):
            kind = element.get(_w("fldCharType"))
            if kind == "begin":
                fields.append([True, paragraph])
            elif kind == "separate" and fields:
                fields[-1][0] = False
            elif kind == "end" and fields:
                fields.pop()
        elif tag in _RUN_TEXT and any(code for code, _ in fields):
            parent = element.getparent()
            if parent is not None and parent.tag == _w("r"):
                runs.add(parent)
    if fields:
        raise ParseError(f"paragraph {fields[0][1]}: a field (w:fldChar) begins and never ends -- Word would show "
                         "none of what follows as text; fix or remove the field")
    return runs
