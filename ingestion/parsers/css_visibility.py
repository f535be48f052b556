"""Which text of an HTML tree a reader sees: the attributes and the CSS that hide it (pure, lxml trees).

:class:`Visibility` decides, for each element, whether the text directly inside it (its
``.text`` and its children's ``.tail``) is shown, and if not, why. It evaluates what the
page itself says -- a browser would show the same:

* **attributes**: ``hidden`` (any value; the user-agent rule ``display: none``, which an
  author's ``display`` overrides), ``aria-hidden="true"`` (the whole subtree: content its
  author withholds from screen readers is not read to the model either), ``<template>``,
  ``<dialog>`` without ``open``, the elements a browser's own style sheet never shows
  (:data:`UA_HIDDEN`: ``<datalist>``, ``<rp>``, ...); the legacy ``<font color>``, ``bgcolor`` and
  ``<body text>`` colours;
* **CSS** from ``style`` attributes, every ``<style>`` element of the document (print-only
  ones aside), ``<link rel=stylesheet>`` with a ``data:`` URL and ``@import`` of a ``data:`` URL
  (of any type; :data:`MAX_IMPORT_DEPTH` deep), cascaded as a browser
  does -- ``!important``, cascade layers (``@layer``, in the order they first appear, unlayered rules
  above them, reversed for ``!important``), selector specificity, an ``@scope``'s proximity, source
  order, inheritance (selectors parsed
  by cssselect: those of tags, ids and classes joined by descendant or child combinators are
  matched right to left from an index of the page, the others run as an XPath); custom
  properties (``var()``, inherited, with fallbacks, registered ones by ``@property`` with their initial value;
  ``env()``, ``attr()``, ``anchor()``, ``anchor-size()`` likewise) and ``calc()``/``min()``/``max()``/
  ``clamp()`` evaluated; property names and keywords in any case, any spacing. Nested rules (``&``,
  :data:`MAX_RULE_NESTING` deep) are read as rules; inside ``@media``/``@supports``/``@container``/``@scope``/
  ``@starting-style`` only declarations that hide text by themselves count in the cascade, so a condition can
  never un-hide; a second cascade pass applies every declaration of the conditional rules whose condition may
  hold on a desktop screen (:mod:`css_conditions`: what this reader cannot evaluate may; a colour set there too),
  and text hidden in either pass is hidden; an ``@font-face``'s ``size-adjust`` scales the text of its family;
* text is hidden by: ``display: none``; ``visibility: hidden|collapse`` (inherited, undone
  by ``visible`` below); ``content-visibility: hidden``; ``-webkit-text-security: disc|circle|square``
  (inherited, undone by ``none`` below: letters drawn as bullets); ``opacity`` (multiplied down the
  tree, ``filter: opacity()`` too) under :data:`MIN_OPACITY`; ``filter: blur()`` of half the
  font size or more; a font size (after ``em``/``%`` and ``transform``/``zoom``/``scale``/``rotate``
  scaling -- a 3D rotation or ``matrix3d`` by what its projection leaves, so text turned edge-on
  is gone) under :data:`MIN_FONT_PX` (2 pt), including ``font: 0/0 a``; a ``letter-spacing`` of
  minus :data:`OVERLAID_LETTERS` of the font size or less (the letters drawn over one another), a
  ``word-spacing`` of minus :data:`OVERLAID_WORDS` (the words); ``backface-visibility: hidden`` on an
  element whose own ``transform``/``rotate``/``scale`` turns its back to the reader
  (``rotateY(180deg)``); a text colour
  (``color``, ``-webkit-text-fill-color``, with its alpha, seen through any ``invert``/
  ``brightness``/``contrast``/``grayscale`` filter around it) whose contrast with every
  colour of the background behind it (the nearest ``background-color``, composited,
  and the colours of a gradient; the canvas is white) is under :data:`MIN_CONTRAST`,
  unless a ``text-shadow`` or ``-webkit-text-stroke`` of a contrasting colour outlines
  it; positioning :data:`OFF_SCREEN_PX` or more away (``left``/``right``/``top``/
  ``bottom``/``inset`` of a positioned element, ``margin-left``/``margin-top``,
  ``text-indent``, ``translate``); a ``clip`` rectangle or a box (``width``/``height``/
  ``max-*`` with ``overflow: hidden|clip`` or paint containment) at most one pixel wide or high, or at
  most two both wide and high; ``clip-path`` ``inset()`` of 50% or more, a ``circle()``/``ellipse()``
  that small (radii in px; of percentages only 0%), a ``polygon()`` of no area or a ``path()`` that reaches
  no further than that or encloses nothing; a ``mask``/``mask-image`` of (nearly) transparent gradients only,
  or of layers all sized 0 (``mask-size: 0``); a ``clip-path`` or every layer of a ``mask``/``mask-image`` drawn from
  the page's own SVG (``url(#id)`` naming a ``<clipPath>`` or ``<mask>``: this reader does not lay out SVG geometry,
  so such text is removed, fail closed) or of nothing (a mask image that can never load), a ``filter`` naming the
  page's SVG ``<filter>`` whose result is not the text itself (:func:`_svg_filter_hides`);
  an element that starts past the last line of a line clamp (``-webkit-line-clamp`` on a vertical
  ``-webkit-box``, or ``line-clamp``, with overflow clipped), lines counted from forced breaks only. Colours in every CSS form a
  browser paints: ``lab``/``lch``/``oklab``/``oklch`` converted, system colours and ``light-dark()`` as the
  element's colour scheme paints them; a colour function this reader cannot evaluate
  (``color-mix()``, relative colours) counts as transparent, so text in it is hidden (fail closed).
* **animations** (``@keyframes``, fourteenth session): an animated element is judged in each keyframe its animation
  can rest in for longer than :data:`ANIMATION_REST_S` (:func:`_rest_offsets`: paused at its start, filled backwards
  through a long delay, filled forwards at its end, any keyframe of a long run or loop), that keyframe's
  declarations over its own (not over ``!important``), and hidden when one hides it; a keyframe passed on the way to
  a visible rest (an ordinary fade-in) hides nothing, and none un-hides;
* the browser's own colours: ``<mark>``'s yellow behind black text (the user-agent sheet's ``Mark`` and
  ``MarkText``), links, and the page's **colour scheme** (:meth:`Visibility._page_dark`): a root whose
  ``color-scheme`` (else the first ``<meta name="color-scheme">``) lists ``dark`` but not ``light`` paints the
  canvas #121212 and its default text white; ``color-scheme`` on any element gives its ``light-dark()`` and
  system colours their dark values (:data:`_DARK_SYSTEM_COLORS`). A page read another way (an e-mail, Markdown:
  ``either_scheme``) that asks for a dark scheme is judged in both schemes: hidden in either is hidden.
  A page whose sheets, ``style`` attributes or ``<meta>`` name a colour scheme is also judged as a reader who
  prefers dark sees it (the dark pass: ``prefers-color-scheme: dark`` holds, ``light dark`` is dark).

Not evaluated (docs/security.md, "Hidden text"): stylesheets fetched from elsewhere, scripts,
pseudo-element content, text covered by another element, and a background image's pixels
(text over an image is judged visible).
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from urllib.parse import unquote

import tinycss2
import tinycss2.color4
from cssselect import HTMLTranslator, SelectorError
from cssselect import parse as parse_selectors
from lxml import etree

from ingestion.parsers.css_conditions import media_may_hold, supports_may_hold
from ingestion.structure import ParseError

MIN_CONTRAST = 1.2  # WCAG contrast ratio: #eee on white is 1.16, #ddd 1.36
MIN_FONT_PX = 8 / 3  # 2 pt
MIN_OPACITY = 0.1
OFF_SCREEN_PX = 1000.0
# A transform that shears a letter's axes closer than this to one another draws it as a band of strokes (a skew of
# 65 degrees or more; rendered in chromium: at 70 nothing reads, at 60 words still do).
MIN_AXES_DEGREES = 25.0
# Box edges that push an element's text right or down by their size (2026-12-04): a padding or border of
# OFF_SCREEN_PX or more moves it off the screen, as a margin does (the right and bottom ones move nothing).
_PUSHING = ("padding-left", "padding-top", "border-left-width", "border-top-width")
# Letters spaced closer than half the font size each are drawn over the one before (typography's
# tightest tracking is a few hundredths of an em).
OVERLAID_LETTERS = 0.5
# Words spaced one and a half font sizes closer or more are drawn over one another: short words wholly,
# the others over their last letters (rendered in chromium: at -1em a sentence still reads, at -2em none
# of it does; a space is about a quarter of the font size, and the inline-block grid hack that cancels
# it uses about -0.4em).
OVERLAID_WORDS = 1.5
# -webkit-text-security keywords that draw every letter as a bullet, as a password field does (chromium and WebKit
# paint them on any element): a reader sees a row of dots.
TEXT_SECURITY = frozenset({"disc", "circle", "square"})
# A box (or clip) this small shows nothing of text: at most two pixels in either direction (chromium draws a
# clipped box 2 px wide and any height as a few dark pixels, no letter readable).
_HAIR_PX = 2.0
_DEFAULT_FONT_PX = 16.0
_VIEWPORT_PX = 1280.0  # what "%" and "vw" of a position are taken against
_WHITE = (1.0, 1.0, 1.0, 1.0)
_BLACK = (0.0, 0.0, 0.0, 1.0)
Color = tuple[float, float, float, float]

_UNITS_PX = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4, "q": 96 / 101.6}
_FONT_KEYWORDS = {"xx-small": 9.0, "x-small": 10.0, "small": 13.0, "medium": 16.0, "large": 18.0,
                  "x-large": 24.0, "xx-large": 32.0, "xxx-large": 48.0}
# ``@import`` of ``data:`` style sheets inside one another: read this deep (a page's own sheets are depth 0).
MAX_IMPORT_DEPTH = 8
# ... and at most this many characters of them in a page (the same sheet imported twice counts twice): a page's
# imports cost no more than a sheet of that size written in it; past it the page fails with the line of its sheet.
MAX_IMPORTED_CSS = 200_000
_PRINT_ONLY_RE = re.compile(r"^\s*(only\s+)?(print|speech)\b", re.IGNORECASE)


def _print_only(media: str) -> bool:
    """Whether a media query list applies to no screen: every query of it print or speech only. ``print, screen``
    applies on screen (found attacking the demo: read as print only, its rules were ignored)."""
    return all(_PRINT_ONLY_RE.match(query) for query in media.split(","))


def _condition_holds(keyword: str, prelude: list, dark: bool = False) -> bool:
    """Whether a conditional rule's condition may hold on the screen the second pass assumes (:mod:`css_conditions`:
    what this reader cannot evaluate may). A ``@container`` may (the container's size is not known; without any
    container on the page a size query holds nowhere: :meth:`_Sheets.finish`); an ``@scope``'s rules apply inside
    its roots (:meth:`_Sheets._nest`); ``@starting-style`` may (a long transition keeps its values on the screen for
    as long as it lasts); ``@document`` applies in no browser this reader stands for (chromium ignores it)."""
    if keyword == "media":
        return media_may_hold(prelude, dark)
    if keyword == "supports":
        return supports_may_hold(prelude)
    return keyword in ("container", "scope", "starting-style")


_PSEUDO_RE = re.compile(r"::?[A-Za-z_-][\w-]*(\([^()]*\))?")
_CONDITIONAL_AT_RULES = frozenset({"media", "supports", "container", "scope", "document", "-moz-document",
                                   "starting-style"})
_TRANSLATOR = HTMLTranslator()
# An unvisited link (:link, what a reader who never followed it sees): a browser's own style sheet colours it,
# and the <body link> attribute does as a presentational hint; it inherits no colour (found attacking hidden
# text, 2026-12-03: white <body link> text reached the model, and a link under white text was removed though
# a browser draws it blue).
_LINKS = frozenset({"a", "area"})
LINK_COLOR: Color = (0.0, 0.0, 238 / 255, 1.0)
# :any-link matches every link; a link not followed is :link (cssselect knows only that one).
_ANY_LINK_RE = re.compile(r":(-webkit-)?any-link\b", re.IGNORECASE)


@dataclass(frozen=True)
class _State:
    """What an element passes down and what decides its own text's visibility."""

    gone: str | None = None  # the whole subtree is hidden, and why
    invisible: bool = False  # visibility: hidden (inherited)
    masked: bool = False  # -webkit-text-security: every letter drawn as a bullet (inherited, undone by none)
    font_px: float = _DEFAULT_FONT_PX
    scale: float = 1.0  # transform / zoom scale of the element's box
    adjust: float = 1.0  # font-size-adjust: the used font size over the computed one (inherited)
    face: float = 1.0  # the size-adjust of the @font-face its font-family names first (inherited with the family)
    color: Color | None = _BLACK  # None: a colour this reader cannot compare
    backdrop: tuple[Color, ...] | None = (_WHITE,)  # colours behind the text; None: unknown (an image)
    outlined: bool = False  # a contrasting text-shadow or stroke draws the text whatever its colour
    shadowed: bool = False  # a text-shadow of a contrasting colour, on the screen (inherited)
    stroked: bool = False  # a -webkit-text-stroke colour that contrasts (inherited; it draws at a width above 0)
    stroke_px: float = 0.0  # -webkit-text-stroke-width (inherited)
    opacity: float = 1.0
    custom: dict | None = None  # custom properties (``--name``), inherited, for ``var()``
    # Colour filters of the element and its ancestors (``filter: invert()``...): every colour painted
    # inside them (text, and backgrounds set inside) is seen through them.
    filters: tuple = ()
    # ``mix-blend-mode`` (the innermost): (mode, the colours behind the blending element), and what the
    # blending group itself has painted behind the text (None: nothing, the group is transparent there)
    blend: tuple | None = None
    group_backdrop: Color | None = None
    painted: bool = False  # an element here or above paints a background (the bare canvas is not blended with)
    dark: bool = False  # the element's colour scheme is dark: its system colours and light-dark() are the dark ones


@dataclass(frozen=True)
class _Declaration:
    name: str
    value: list
    important: bool


def _tokens(value: list) -> list:
    return [token for token in value if token.type not in ("whitespace", "comment")]


# CSS logical properties as the physical ones this reader evaluates, in a horizontal left-to-right page (found
# attacking the demo: ``block-size: 0; overflow: hidden``, ``inset-inline-start: -9999px`` reached the model).
# Another writing mode swaps width and height, left and top: every test they meet is the same either way (a box
# too small in either direction, an offset far in any), so the mapping hides what it would hide there too.
_LOGICAL = {
    "block-size": "height", "inline-size": "width", "max-block-size": "max-height", "max-inline-size": "max-width",
    "inset-block-start": "top", "inset-block-end": "bottom", "inset-inline-start": "left", "inset-inline-end": "right",
    "margin-block-start": "margin-top", "margin-inline-start": "margin-left",
    "overflow-block": "overflow-y", "overflow-inline": "overflow-x",
    "padding-block-start": "padding-top", "padding-inline-start": "padding-left",
    "border-block-start-width": "border-top-width", "border-inline-start-width": "border-left-width",
    "border-block-start": "border-top", "border-inline-start": "border-left", "border-block": "border-top",
    "border-inline": "border-left",
}
# Their two-value shorthands: (start, end); an end margin moves nothing (as margin-right is not evaluated).
_LOGICAL_PAIRS = {
    "inset-block": ("top", "bottom"), "inset-inline": ("left", "right"),
    "margin-block": ("margin-top", None), "margin-inline": ("margin-left", None),
    "padding-block": ("padding-top", None), "padding-inline": ("padding-left", None),
    "border-block-width": ("border-top-width", None), "border-inline-width": ("border-left-width", None),
}


def _declarations(nodes: list) -> list[_Declaration]:
    out = []
    for node in nodes:
        if node.type != "declaration":
            continue
        if node.name.startswith("--"):
            out.append(_Declaration(node.name, node.value, node.important))
        elif node.lower_name in _LOGICAL_PAIRS:
            values = _tokens(node.value)
            for name, value in zip(_LOGICAL_PAIRS[node.lower_name], (values[:1], values[1:2] or values[:1]),
                                   strict=True):
                if name is not None and value:
                    out.append(_Declaration(name, value, node.important))
        elif node.lower_name in RELEVANT or node.lower_name in _LOGICAL:
            out.append(_Declaration(_LOGICAL.get(node.lower_name, node.lower_name), node.value, node.important))
        elif node.lower_name.removeprefix("-webkit-") in _ANIMATION_PROPERTIES:
            out.append(_Declaration(node.lower_name.removeprefix("-webkit-"), node.value, node.important))
    return out


@lru_cache(maxsize=4096)
def _style_attribute(style: str) -> tuple[_Declaration, ...]:
    """The declarations of a ``style`` attribute (pages repeat the same few many times)."""
    return tuple(_declarations(tinycss2.parse_blocks_contents(style, skip_whitespace=True, skip_comments=True)))


def _length_px(token, font_px: float, *, basis: float = _VIEWPORT_PX) -> float | None:
    """A length token in px (``em``/``ex``/``ch`` from ``font_px``, ``%`` and ``vw`` from ``basis``);
    ``calc()``, ``min()``, ``max()`` and ``clamp()`` of them are evaluated."""
    if token.type == "function" and token.lower_name in _MATH:
        return _math(token, font_px, basis)
    if token.type == "number" and token.value == 0:
        return 0.0
    if token.type == "percentage":
        return token.value * basis / 100
    if token.type != "dimension":
        return None
    unit = token.lower_unit
    if unit in _UNITS_PX:
        return token.value * _UNITS_PX[unit]
    if unit == "em":
        return token.value * font_px
    if unit in ("ex", "ch"):
        return token.value * font_px / 2
    if unit == "rem":
        return token.value * _DEFAULT_FONT_PX
    if unit in _VIEWPORT_UNITS:
        return token.value * _VIEWPORT_PX / 100
    if unit in _FONT_UNITS:  # (found attacking the demo: ``font-size: 0.1cap`` was a size this reader did not know)
        relative, root = _FONT_UNITS[unit]
        return token.value * relative * (_DEFAULT_FONT_PX if root else font_px)
    return None


# Viewport units, and container query units taken as the viewport's (the nearest container is at most that).
_VIEWPORT_UNITS = frozenset({
    "vw", "vh", "vi", "vb", "vmin", "vmax", *(f"{size}{axis}" for size in ("s", "l", "d")
                                              for axis in ("vw", "vh", "vi", "vb", "vmin", "vmax")),
    "cqw", "cqh", "cqi", "cqb", "cqmin", "cqmax"})
# Font-relative units beyond em/ex/ch/rem: (their size in em, of the root's font), from the usual font metrics
# (cap height 0.7 em, an ideograph 1 em, a normal line 1.2 em).
_FONT_UNITS = {"cap": (0.7, False), "ic": (1.0, False), "lh": (1.2, False), "rcap": (0.7, True), "ric": (1.0, True),
               "rlh": (1.2, True), "rex": (0.5, True), "rch": (0.5, True)}


# CSS system colours as a light page (the white canvas this reader assumes) paints them.
_SYSTEM_COLORS: dict[str, Color] = {
    "canvas": _WHITE, "field": _WHITE, "buttonface": (0.94, 0.94, 0.94, 1.0), "buttonborder": (0.46, 0.46, 0.46, 1.0),
    "canvastext": _BLACK, "fieldtext": _BLACK, "buttontext": _BLACK, "graytext": (0.43, 0.43, 0.43, 1.0),
    "highlight": (0.0, 0.47, 0.84, 1.0), "highlighttext": _WHITE, "linktext": (0.0, 0.0, 0.93, 1.0),
    "visitedtext": (0.33, 0.1, 0.55, 1.0), "activetext": (1.0, 0.0, 0.0, 1.0), "mark": (1.0, 1.0, 0.0, 1.0),
    "marktext": _BLACK, "accentcolor": (0.0, 0.47, 0.84, 1.0), "accentcolortext": _WHITE,
    "selecteditem": (0.0, 0.47, 0.84, 1.0), "selecteditemtext": _WHITE,
}
# The same in a dark colour scheme (chromium 156's values, read with getComputedStyle: the canvas #121212, its
# text white; Mark and MarkText do not change).
_DARK_SYSTEM_COLORS: dict[str, Color] = {
    **_SYSTEM_COLORS, "canvas": (18 / 255, 18 / 255, 18 / 255, 1.0), "field": (59 / 255, 59 / 255, 59 / 255, 1.0),
    "buttonface": (107 / 255, 107 / 255, 107 / 255, 1.0), "buttonborder": _WHITE, "canvastext": _WHITE,
    "fieldtext": _WHITE, "buttontext": _WHITE, "graytext": (0.5, 0.5, 0.5, 1.0), "highlight": (0.0, 65 / 255, 198 / 255, 0.8),
    "linktext": (158 / 255, 158 / 255, 1.0, 1.0), "visitedtext": (208 / 255, 173 / 255, 240 / 255, 1.0),
    "selecteditem": (153 / 255, 200 / 255, 1.0, 1.0), "selecteditemtext": (59 / 255, 59 / 255, 59 / 255, 1.0),
}
DARK_CANVAS: Color = _DARK_SYSTEM_COLORS["canvas"]
# <mark>: the user-agent sheet's ``background-color: Mark; color: MarkText`` (yellow, black in both schemes).
# Checked in chromium 156 (headless, Playwright, each page screenshotted and the text's pixels compared with the
# commonest pixel of its box; 2026-12-04): <mark> text #ee0 or yellow shows nothing (contrast 1.16, 1.00), black
# text in a <mark> on a black page shows (19.6); ``mark { background: transparent }`` on a black page, or
# ``color: inherit`` of white, hides it. A root ``color-scheme: dark`` (or the first <meta name="color-scheme">
# saying dark: in the body too, any case; ``normal`` on the root defers to it) paints the canvas #121212 and the
# default text white, #111 and black text on it show nothing; ``light dark``/``dark light`` stay light; a second
# meta, or ``color-scheme`` on the body or a div, changes neither the canvas nor the inherited colour, but a dark
# div's ``CanvasText`` and ``light-dark(black, white)`` are white (nothing drawn on the white page).
MARK_BACKGROUND: Color = (1.0, 1.0, 0.0, 1.0)
# The properties whose colours a dark scheme changes (system colours, light-dark()).
_SCHEMED = frozenset({"color", "-webkit-text-fill-color", "background-color", "background-image", "text-shadow",
                      "-webkit-text-stroke", "-webkit-text-stroke-color"})
# Functions a browser paints as a colour. One this reader cannot evaluate (``color-mix()``, the relative
# ``rgb(from white r g b)``...) is taken as transparent -- the colour of whatever is behind it, so text
# in it is judged hidden: fail closed, as for a selector this reader does not know.
_COLOR_FUNCTIONS = frozenset({"rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color",
                              "color-mix", "device-cmyk", "contrast-color", "light-dark"})
_UNJUDGED = (0.0, 0.0, 0.0, 0.0)
# CIE XYZ (D50) to linear sRGB, chromatic adaptation included (CSS Color 4's sample code).
_XYZ_D50_TO_LINEAR_SRGB = ((3.1341359569958707, -1.6173863321612538, -0.4906619460083532),
                           (-0.978795502912089, 1.916254567259524, 0.03344273116131949),
                           (0.07195537988411677, -0.2289768264158322, 1.4057971997029423))


def _color(token) -> Color | str | None:
    """An RGBA colour in 0..1, ``"currentcolor"``, or None when the token is no colour this reader knows."""
    if isinstance(token, _ColorToken):
        return token.color
    try:
        parsed = tinycss2.color4.parse_color(token)
    except (ValueError, TypeError, ArithmeticError):
        return None
    if parsed is None:
        return _color_other(token)
    if isinstance(parsed, str):
        return parsed
    alpha = parsed.alpha if parsed.alpha is not None else 1.0
    try:
        red, green, blue = parsed.to("srgb").coordinates
    except NotImplementedError:
        rgb = _lab_family_srgb(parsed.space, parsed.coordinates)
        if rgb is None:
            return _UNJUDGED
        red, green, blue = rgb
    except (ValueError, TypeError, ArithmeticError):
        return _UNJUDGED
    return (min(max(red, 0.0), 1.0), min(max(green, 0.0), 1.0), min(max(blue, 0.0), 1.0), alpha)


def _color_other(token) -> Color | None:
    """What tinycss2 does not parse: system colours, ``light-dark()`` (its light value: the canvas is
    white), other colour functions (:data:`_UNJUDGED`); None for anything else."""
    if token.type == "ident":
        return _SYSTEM_COLORS.get(token.lower_value)
    if token.type != "function" or token.lower_name not in _COLOR_FUNCTIONS:
        return None
    if token.lower_name == "light-dark":
        first = next((t for t in _tokens(token.arguments) if t.type != "literal"), None)
        color = _color(first) if first is not None else None
        return color if isinstance(color, tuple) else _UNJUDGED
    return _UNJUDGED


def _lab_family_srgb(space: str, coordinates) -> tuple[float, float, float] | None:
    """``lab``/``lch`` (CIE, D50) and ``oklab``/``oklch`` as gamma-encoded sRGB (unclamped); tinycss2 parses
    them but does not convert them. None for another space or a missing (``none``) coordinate."""
    if space not in ("lab", "lch", "oklab", "oklch") or any(c is None for c in coordinates):
        return None
    lightness, first, second = coordinates
    if space in ("lch", "oklch"):
        hue = math.radians(second)
        first, second = first * math.cos(hue), first * math.sin(hue)
    if space in ("oklab", "oklch"):
        l_ = (lightness + 0.3963377774 * first + 0.2158037573 * second) ** 3
        m_ = (lightness - 0.1055613458 * first - 0.0638541728 * second) ** 3
        s_ = (lightness - 0.0894841775 * first - 1.2914855480 * second) ** 3
        linear = (4.0767416621 * l_ - 3.3077115913 * m_ + 0.2309699292 * s_,
                  -1.2684380046 * l_ + 2.6097574011 * m_ - 0.3413193965 * s_,
                  -0.0041960863 * l_ - 0.7034186147 * m_ + 1.7076147010 * s_)
    else:
        epsilon, kappa = 216 / 24389, 24389 / 27
        fy = (lightness + 16) / 116
        fx, fz = fy + first / 500, fy - second / 200
        x = fx ** 3 if fx ** 3 > epsilon else (116 * fx - 16) / kappa
        y = fy ** 3 if lightness > kappa * epsilon else lightness / kappa
        z = fz ** 3 if fz ** 3 > epsilon else (116 * fz - 16) / kappa
        xyz = (x * 0.3457 / 0.3585, y, z * (1 - 0.3457 - 0.3585) / 0.3585)
        linear = tuple(sum(m * v for m, v in zip(row, xyz, strict=True)) for row in _XYZ_D50_TO_LINEAR_SRGB)

    def encode(value: float) -> float:
        sign, magnitude = (-1.0 if value < 0 else 1.0), abs(value)
        return sign * (1.055 * magnitude ** (1 / 2.4) - 0.055 if magnitude > 0.0031308 else 12.92 * magnitude)

    red, green, blue = (encode(v) for v in linear)
    return red, green, blue


def _luminance(color: Color) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue, _ = color
    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def _over(top: Color, bottom: Color) -> Color:
    """``top`` composited over the opaque ``bottom``."""
    alpha = top[3]
    return (top[0] * alpha + bottom[0] * (1 - alpha), top[1] * alpha + bottom[1] * (1 - alpha),
            top[2] * alpha + bottom[2] * (1 - alpha), 1.0)


def contrast(a: Color, b: Color) -> float:
    """WCAG 2 contrast ratio of two opaque colours (1 to 21)."""
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@lru_cache(maxsize=4096)
def _blends_in(color: Color, backdrop: tuple[Color, ...]) -> bool:
    """Whether text of ``color`` is too close to every colour behind it to be read."""
    return all(contrast(_over(color, behind), behind) < MIN_CONTRAST for behind in backdrop)


def _soft_light(b: float, s: float) -> float:
    if s <= 0.5:
        return b - (1 - 2 * s) * b * (1 - b)
    d = ((16 * b - 12) * b + 4) * b if b <= 0.25 else math.sqrt(b)
    return b + (2 * s - 1) * (d - b)


def _hard_light(b: float, s: float) -> float:
    return b * 2 * s if s <= 0.5 else b + (2 * s - 1) - b * (2 * s - 1)


# The separable blend modes of CSS Compositing and Blending (per channel, backdrop b and source s in 0..1).
_SEPARABLE = {
    "multiply": lambda b, s: b * s,
    "screen": lambda b, s: b + s - b * s,
    "overlay": lambda b, s: _hard_light(s, b),
    "darken": min,
    "lighten": max,
    "color-dodge": lambda b, s: 0.0 if b == 0 else 1.0 if s >= 1 else min(1.0, b / (1 - s)),
    "color-burn": lambda b, s: 1.0 if b >= 1 else 0.0 if s <= 0 else 1 - min(1.0, (1 - b) / s),
    "hard-light": _hard_light,
    "soft-light": _soft_light,
    "difference": lambda b, s: abs(b - s),
    "exclusion": lambda b, s: b + s - 2 * b * s,
    "plus-lighter": lambda b, s: min(1.0, b + s),
    "plus-darker": lambda b, s: max(0.0, b + s - 1),
}


def _lum(c: tuple) -> float:
    return 0.3 * c[0] + 0.59 * c[1] + 0.11 * c[2]


def _set_lum(c: tuple, light: float) -> tuple:
    d = light - _lum(c)
    c = tuple(v + d for v in c)
    lum, low, high = _lum(c), min(c), max(c)
    if low < 0:
        c = tuple(lum + (v - lum) * lum / (lum - low) for v in c)
    if high > 1:
        c = tuple(lum + (v - lum) * (1 - lum) / (high - lum) for v in c)
    return c


def _set_sat(c: tuple, saturation: float) -> tuple:
    low, high = min(c), max(c)
    if high == low:
        return (0.0, 0.0, 0.0)
    return tuple((v - low) * saturation / (high - low) for v in c)


# The non-separable ones (whole colours).
_NON_SEPARABLE = {
    "hue": lambda b, s: _set_lum(_set_sat(s, max(b) - min(b)), _lum(b)),
    "saturation": lambda b, s: _set_lum(_set_sat(b, max(s) - min(s)), _lum(b)),
    "color": lambda b, s: _set_lum(s, _lum(b)),
    "luminosity": lambda b, s: _set_lum(b, _lum(s)),
}
BLEND_MODES = frozenset(_SEPARABLE) | frozenset(_NON_SEPARABLE)


def _blended(mode: str, behind: Color, top: Color | None) -> Color:
    """What a pixel of ``top`` (with its alpha; None: nothing painted) in a group blended by ``mode`` shows
    over the opaque ``behind``: the blend, weighted by the group's alpha there, over the backdrop."""
    if top is None or top[3] <= 0:
        return behind
    b, s = behind[:3], top[:3]
    mixed = (tuple(_SEPARABLE[mode](x, y) for x, y in zip(b, s, strict=True)) if mode in _SEPARABLE
             else _NON_SEPARABLE[mode](b, s))
    alpha = top[3]
    return (*(alpha * m + (1 - alpha) * x for m, x in zip(mixed, b, strict=True)), 1.0)  # type: ignore[return-value]


def _over_any(top: Color, bottom: Color | None) -> Color:
    """``top`` composited over ``bottom`` (None: transparent), alphas kept."""
    if bottom is None or bottom[3] <= 0:
        return top
    alpha = top[3] + bottom[3] * (1 - top[3])
    if alpha <= 0:
        return (0.0, 0.0, 0.0, 0.0)
    return (*((t * top[3] + u * bottom[3] * (1 - top[3])) / alpha
              for t, u in zip(top[:3], bottom[:3], strict=True)), alpha)  # type: ignore[return-value]


@lru_cache(maxsize=4096)
def _blends_in_group(color: Color, mode: str, outside: tuple[Color, ...], group: Color | None) -> bool:
    """Whether text of ``color`` drawn in a group blended by ``mode`` (over ``group``, what the group painted
    behind it) is too close, on every colour ``outside`` it, to what the group shows around it."""
    text = _over_any(color, group)
    return all(contrast(_blended(mode, behind, text), _blended(mode, behind, group)) < MIN_CONTRAST
               for behind in outside)


def _legacy_color(value: str | None) -> Color | None:
    """A ``bgcolor``/``<font color>``/``<body text|link>`` attribute's colour, read by the HTML standard's rules
    for parsing a legacy colour value: a named colour, ``#rgb``, else any string made hex -- every other
    character read as ``0``, so ``fzfzfz`` is ``#f0f0f0`` and ``chucknorris`` ``#c00000`` (found attacking hidden
    text, 2026-12-03: such values were taken as no colour, and near-white text on white reached the model) --
    and split into three components. None for an empty value and ``transparent`` (no colour: the attribute is
    ignored)."""
    value = (value or "").strip(" \t\n\f\r")
    if not value or value.lower() == "transparent":
        return None
    if value.isascii() and value.isalpha():
        named = tinycss2.color4._COLOR_KEYWORDS.get(value.lower())
        if named is not None:
            return _color(tinycss2.parse_one_component_value(value.lower()))  # type: ignore[return-value]
    if re.fullmatch(r"#[0-9a-fA-F]{3}", value):
        return tuple(int(c, 16) * 17 / 255 for c in value[1:]) + (1.0,)  # type: ignore[return-value]
    value = "".join("00" if ord(c) > 0xFFFF else c for c in value)[:128].removeprefix("#")
    value = re.sub(r"[^0-9a-fA-F]", "0", value)
    value += "0" * (-len(value) % 3 or (3 if not value else 0))
    length = len(value) // 3
    parts = [value[i * length:(i + 1) * length][-8:] for i in range(3)]
    while len(parts[0]) > 2 and all(part[0] == "0" for part in parts):
        parts = [part[1:] for part in parts]
    return tuple(int(part[:2], 16) / 255 for part in parts) + (1.0,)  # type: ignore[return-value]


# Style rules nested in one another (CSS nesting, at-rules inside rules) are read this deep; deeper, the page fails
# with the line of its sheet (fourteenth session: 3,000 nested rules overflowed the stack).
MAX_RULE_NESTING = 64
# Brackets -- ``(``, ``[``, ``{`` -- open inside one another in a style sheet or a ``style`` attribute at most this
# deep; deeper, the page fails with the line of its sheet or element (attack15b, fourteenth session: 3,000 nested
# parentheses in a ``@media`` condition, an ``:is()`` selector, a declaration's value or a ``style`` attribute
# overflowed the stack in tinycss2's serializer -- a RecursionError, "internal error" with a logged traceback, where
# a malformed page is an error naming its line). Real sheets nest a few deep.
MAX_CSS_BRACKETS = 128
_BRACKETS_RE = re.compile(r"[(\[{)\]}]")


def _brackets_checked(css: str, line: int | None, what: str) -> None:
    """Raise :class:`ParseError` (``line``) when brackets open in ``css`` more than :data:`MAX_CSS_BRACKETS` deep
    (counted as written: an unclosed one too, a bracket in a string or comment as well -- fail closed)."""
    if len(css) <= MAX_CSS_BRACKETS:
        return
    depth = 0
    for match in _BRACKETS_RE.finditer(css):
        if match.group() in "([{":
            depth += 1
            if depth > MAX_CSS_BRACKETS:
                raise ParseError(f"{what} has brackets nested more than {MAX_CSS_BRACKETS} deep", line=line)
        elif depth:
            depth -= 1
# A nested rule's selector is its parent's inside ``:is()`` for each selector of its list, so a list of five nested
# twelve deep made 1.3 GB of selectors from 400 characters (fourteenth session, 69 s): the selectors made by nesting
# (and ``@scope``) in a page are at most this many characters, or ``NESTED_SELECTORS_PER_CHARACTER`` times the
# characters of its style sheets, whichever is more; past it the page fails with the line of its sheet.
MAX_NESTED_SELECTORS = 200_000
NESTED_SELECTORS_PER_CHARACTER = 4
_UNLAYERED = (math.inf,)
_BRACKETED_RE = re.compile(r"\[[^\]]*\]|\([^()]*\)|\"[^\"]*\"|'[^']*'")
_COMBINATOR_RE = re.compile(r"\S\s*[\s>+~]\s*\S")
# The declarations that give a page what some conditional rules need (:attr:`_Place.needs`).
_NEEDED = {"container": "container", "container-type": "container", "transition": "transition",
           "transition-duration": "transition", "transition-property": "transition"}


@dataclass
class _AtRules:
    """What a page's ``@property`` and ``@font-face`` rules say (fourteenth session, found looking for the siblings of
    the conditional rules: each hid text in chromium 156 that reached the model). ``properties``: each registered
    custom property's ``inherits`` and initial value (tokens; None: none) -- ``color: var(--c)`` is white where
    ``@property --c`` gives white as its initial value, though nothing sets it. ``faces``: the smallest
    ``size-adjust`` of a ``@font-face`` of each family name (lower case) -- text in that family is drawn at that
    share of its size, ``size-adjust: 1%`` a smudge (whether the face loads, or which characters its
    ``unicode-range`` covers, is not evaluated: fail closed)."""

    properties: dict[str, tuple[bool, list | None]] = field(default_factory=dict)
    # ... and for the second pass: with the registrations under a condition that may hold (they may un-hide, so
    # the first pass does not take them)
    screen_properties: dict[str, tuple[bool, list | None]] = field(default_factory=dict)
    faces: dict[str, float] = field(default_factory=dict)
    # ``@keyframes`` (fourteenth session): each name's keyframes -- their declarations by offset (0 to 100; None: a
    # selector this reader does not place, a timeline range), every rule of that name together (which one a browser
    # takes is not evaluated: fail closed) -- and the line of the sheet of the first (for an error: :class:`_Frames`)
    keyframes: dict[str, dict[float | None, list[_Declaration]]] = field(default_factory=dict)
    keyframes_line: int | None = None


class _Scope:
    """An ``@scope``'s roots and limits (selectors; ``limit`` None: none): a rule inside it applies to an element
    below (or at) a root with no limit on the way, and the nearer the root, the stronger (the cascade's scope
    proximity, after specificity; an unscoped rule is the farthest)."""

    def __init__(self, root: str, limit: str | None) -> None:
        self.root, self.limit = root, limit


@dataclass(frozen=True)
class _Place:
    """Where a rule stands: what it takes from the rules and at-rules around it."""

    parent: str | None = None  # the selector of the style rule it is nested in
    conditional: bool = False  # under a condition: the first pass takes only what hides by itself
    screen: bool = True  # that condition may hold on the screen: the second pass takes all of it
    depth: int = 0  # the @import rules that led to its sheet
    layer: tuple = ()  # its cascade layer (the index of each name, outermost first); () unlayered
    # What the page must have for it to apply: "container" under a size @container (some element a container),
    # "transition" under @starting-style (some transition: without one a starting style is never seen)
    needs: frozenset = frozenset()
    scope: str | None = None  # the root of the @scope it is directly in (its selector)
    scoped: _Scope | None = None  # the @scope it is in: its proximity ranks it (:meth:`Visibility._proximity`)
    nesting: int = 0  # rules and at-rules around it


class _Sheets:
    """The document's style rules: each selector as a compiled XPath (cssselect), with its cascade key and its
    declarations, in source order."""

    def __init__(self, dark: bool = False) -> None:
        # The screen the second pass assumes prefers a dark colour scheme (the dark pass, 2026-12-04).
        self.dark = dark
        # Some sheet or media list names a colour scheme (``prefers-color-scheme``, ``color-scheme``): the page may
        # differ for a reader who prefers dark, so :class:`Visibility` judges it in a dark pass too.
        self.schemes = False
        # (XPath, cascade key, declarations, what the selector's subject must have: (classes, id, tag)). The key
        # (:meth:`_key`): the cascade layer's order, the specificity, then the rule's ``@scope`` (its proximity).
        self.rules: list[tuple[etree.XPath, tuple, list[_Declaration], tuple]] = []
        # The second pass (2026-12-04): the rules as a desktop screen applies them -- a conditional rule whose
        # condition may hold there (:func:`_condition_holds`) with all its declarations (a colour too), one whose
        # condition surely does not with only those that hide by themselves; ``screen_differs``: some rule gives
        # the second pass more than the first.
        self.screen_rules: list[tuple[etree.XPath, tuple, list[_Declaration], tuple]] = []
        self.screen_differs = False
        self.line: int | None = None  # the source line of the sheet being read (for an error)
        self.owner: etree._Element | None = None  # the <style> or <link> element of the sheet being read
        self._child_index: dict[etree._Element, dict[etree._Element, int]] = {}
        self.imported = 0  # characters of imported sheets read (:data:`MAX_IMPORTED_CSS`)
        self.nested = 0  # characters of selectors made by nesting (:data:`MAX_NESTED_SELECTORS`)
        self.read = 0  # characters of style sheets read (imported ones too)
        # Cascade layers (fourteenth session: read in source order, so a layered rule beat an unlayered one written
        # before it -- ``.x { display: none } @layer a { .x { display: inline } }`` kept text chromium hides): the
        # index of each layer name within its parent layer, by first appearance, and how many each parent has.
        self._layer_names: dict[tuple, dict[str, int]] = {}
        self._layer_count: dict[tuple, int] = {}
        # A size @container holds only where some element is a container (``container-type``/``container``), a
        # starting style shows only through a transition: what the page has of them (:data:`_NEEDED`), and the
        # second-pass entries that need one, with what the first pass takes of them (:meth:`finish`).
        self.has: set[str] = set()
        self._if_needed: list[tuple[int, frozenset, list[_Declaration]]] = []
        self.at_rules = _AtRules()

    def add(self, css: str, *, conditional: bool = False, depth: int = 0, screen: bool = True,
            layer: tuple = ()) -> None:
        """A style sheet's rules; ``conditional``: it applies under a condition (a ``media`` attribute), so only
        what hides by itself counts in the first pass; ``screen``: that condition may hold on a desktop screen, so
        the second pass takes all of it. ``depth``: how many ``@import`` rules led here; ``layer``: the cascade
        layer an ``@import`` put it in."""
        self.schemes = self.schemes or "color-scheme" in css.lower()
        self.read += len(css)
        _brackets_checked(css, self.line, "a style sheet")
        self._rules(tinycss2.parse_stylesheet(css, skip_whitespace=True, skip_comments=True),
                    _Place(conditional=conditional, screen=screen, depth=depth, layer=layer))

    def finish(self, root: etree._Element) -> None:
        """After every sheet is read: without a container on the page (no ``container-type`` or ``container``
        declared in a sheet or a ``style`` attribute), a size ``@container`` rule applies nowhere; without a
        ``transition`` a starting style is never drawn -- the second pass takes of them only what the first does."""
        missing = {need for _, needs, _ in self._if_needed for need in needs} - self.has
        if not missing:
            return
        for element in root.iter(etree.Element):
            style = (element.get("style") or "").lower()
            missing = {need for need in missing if need not in style}
            if not missing:
                return
        for index, needs, first in self._if_needed:
            if needs & missing:
                xpath, key, _, subject = self.screen_rules[index]
                self.screen_rules[index] = (xpath, key, first, subject)

    def _layer(self, within: tuple, name: str | None) -> tuple:
        """The path of cascade layer ``name`` (dotted: nested) declared inside layer ``within``; None: a new
        anonymous one. A name is ordered where it first appears (``@layer b, a;`` orders b below a)."""
        path = within
        for part in name.split(".") if name else [None]:
            names = self._layer_names.setdefault(path, {})
            index = names.get(part) if part is not None else None
            if index is None:
                index = self._layer_count.get(path, 0)
                self._layer_count[path] = index + 1
                if part is not None:
                    names[part] = index
            path = (*path, index)
        return path

    def _nest(self, selector: str, place: _Place) -> str:
        """A selector as written inside a style rule or an ``@scope``, as one selector of the page: ``&`` (and an
        ``@scope``'s ``:scope``) stands for the context, a selector without one is its descendant. A context of
        compound selectors goes in ``:is()`` (``:where()`` for a scope's implicit one); one with a combinator
        (``.wrap p``), which ``:is()`` here cannot hold, is written out for each of its selectors -- its own
        specificity each, not the list's highest (fourteenth session: ``.wrap p { span { color: white } }`` compiled
        to nothing, and its colour was dropped)."""
        if place.scope is not None:  # relative to the scope's root
            context, implicit = place.scope, ":where({}) {}"
        elif place.parent is not None:
            context, implicit = place.parent, ":is({}) {}"
        else:
            return selector
        items = [item.strip() for item in context.split(",")]
        compound = not any(_COMBINATOR_RE.search(_BRACKETED_RE.sub("", item)) for item in items)
        parts = []
        for part in selector.split(","):
            part = part.strip()
            if place.scope is not None:
                part = re.sub(r":scope\b", "&", part, flags=re.IGNORECASE)
            if "&" not in part:
                parts.extend([implicit.format(context, part)] if compound else [f"{item} {part}" for item in items])
            elif not compound and part.startswith("&") and part.count("&") == 1:
                parts.extend(item + part[1:] for item in items)
            else:  # (a complex context inside a compound, ``.x&``: left to ``:is()``, which may not compile)
                parts.append(part.replace("&", f":is({context})"))
        made = ", ".join(parts)
        self.nested += len(made)
        bound = max(MAX_NESTED_SELECTORS, NESTED_SELECTORS_PER_CHARACTER * self.read)
        if self.nested > bound:
            raise ParseError(f"a page's nested style rules make more than {bound:,} characters of selectors",
                             line=self.line)
        return made

    def _import(self, prelude: list, place: _Place) -> None:
        """An ``@import`` of a ``data:`` style sheet (found attacking hidden text, 2026-12-04: ignored, so the rules
        it brings hid nothing and the text reached the model): its rules read where the import stands, as a browser
        reads them, in the cascade layer it names; under a media query list that is not plain ``screen``/``all``,
        or a ``supports()`` condition, conditionally (only what hides by itself). A print-only import is ignored, as
        are sheets from elsewhere (not fetched). Imports of ``data:`` sheets nested deeper than
        :data:`MAX_IMPORT_DEPTH` fail the document with the line of the sheet (each level is a part of the one
        above, so the bound keeps the work linear; not reading them would keep what they hide)."""
        conditional, depth = place.conditional, place.depth
        tokens = _tokens(prelude)
        if not tokens:
            return
        first = tokens[0]
        href = None
        if first.type in ("url", "string"):
            href = first.value
        elif first.type == "function" and first.lower_name == "url":
            strings = [t for t in _tokens(first.arguments) if t.type == "string"]
            href = strings[0].value if len(strings) == 1 else None
        if href is None:
            return
        rest = tokens[1:]
        layer = place.layer
        if rest and rest[0].type == "ident" and rest[0].lower_value == "layer":
            layer, rest = self._layer(place.layer, None), rest[1:]
        elif rest and rest[0].type == "function" and rest[0].lower_name == "layer":
            layer = self._layer(place.layer, tinycss2.serialize(rest[0].arguments).strip() or None)
            rest = rest[1:]
        screen = not conditional
        if rest and rest[0].type == "function" and rest[0].lower_name == "supports":
            screen = screen and supports_may_hold(rest[0].arguments, import_form=True)
            conditional, rest = True, rest[1:]
        media = tinycss2.serialize(prelude[prelude.index(rest[0]):]).strip().lower() if rest else ""
        screen = screen and (not media or media_may_hold(media, self.dark))
        if media and _print_only(media):
            return
        css = _data_url_text(href)
        self.imported += len(css)
        if self.imported > MAX_IMPORTED_CSS:
            raise ParseError(f"a page's style sheets import more than {MAX_IMPORTED_CSS:,} characters of data: style "
                             "sheets", line=self.line)
        if css and depth >= MAX_IMPORT_DEPTH:
            raise ParseError(f"a style sheet imports data: style sheets nested more than {MAX_IMPORT_DEPTH} deep",
                             line=self.line)
        if css:
            self.add(css, conditional=conditional or media not in ("", "all", "screen"), depth=depth + 1,
                     screen=screen, layer=layer)

    def _rules(self, nodes: list, place: _Place) -> None:
        if place.nesting > MAX_RULE_NESTING:
            raise ParseError(f"style rules nested more than {MAX_RULE_NESTING} deep", line=self.line)
        late = False  # a rule other than @charset, @layer and @import came before: a later @import is ignored
        for node in nodes:
            if node.type == "at-rule" and node.lower_at_keyword == "import":
                if place.parent is None:  # (a browser reads it only at the top of a sheet; after other rules or
                    # inside an at-rule, where it applies nowhere, its rules are read as conditional: they may hide,
                    # never un-hide)
                    self._import(node.prelude, replace(place, conditional=place.conditional or late
                                                       or not place.screen or place.nesting > 0))
                continue
            if node.type == "at-rule" and node.lower_at_keyword == "layer" and node.content is None:
                for name in tinycss2.serialize(node.prelude).split(","):  # ``@layer a, b;``: their order
                    if "".join(name.split()):
                        self._layer(place.layer, "".join(name.split()))
                continue
            if not (node.type == "at-rule" and node.lower_at_keyword == "charset"):
                late = True
            if node.type == "qualified-rule":
                selector = self._nest(tinycss2.serialize(node.prelude).strip(), place)
                contents = tinycss2.parse_blocks_contents(node.content, skip_whitespace=True, skip_comments=True)
                self._declared(contents, selector, place)
                nested = [item for item in contents if item.type in ("qualified-rule", "at-rule")]
                if nested:
                    self._rules(nested, replace(place, parent=selector, scope=None, nesting=place.nesting + 1))
            elif node.type == "at-rule" and node.content is not None:
                keyword = node.lower_at_keyword
                if keyword in ("property", "font-face"):
                    self._descriptors(keyword, node, place)
                    continue
                if keyword in ("keyframes", "-webkit-keyframes"):
                    if place.screen:  # (under a condition that surely does not hold on a screen: never applied)
                        self._keyframes(node)
                    continue
                if keyword == "media" and _print_only(tinycss2.serialize(node.prelude)):
                    continue
                if keyword != "layer" and keyword not in _CONDITIONAL_AT_RULES:
                    continue
                inner = tinycss2.parse_blocks_contents(node.content, skip_whitespace=True, skip_comments=True)
                inside = replace(place, nesting=place.nesting + 1)
                if keyword == "layer":
                    inside = replace(inside, layer=self._layer(place.layer,
                                                               "".join(tinycss2.serialize(node.prelude).split())
                                                               or None))
                else:
                    inside = replace(inside, conditional=True,
                                     screen=place.screen and _condition_holds(keyword, node.prelude, self.dark))
                    if keyword == "container" and not re.search(r"\bstyle\s*\(",
                                                                tinycss2.serialize(node.prelude), re.IGNORECASE):
                        inside = replace(inside, needs=place.needs | {"container"})  # (a style query needs none)
                    if keyword == "starting-style":
                        inside = replace(inside, needs=place.needs | {"transition"})
                    if keyword == "scope":
                        root, limit = self._scope_root(node.prelude, place)
                        inside = replace(inside, scope=root, parent=None, scoped=_Scope(root, limit))
                target = inside.scope if keyword == "scope" else place.parent
                if target is not None:  # declarations right inside a nested conditional rule (or an @scope)
                    self._declared(inner, target, replace(inside, conditional=True))
                self._rules([item for item in inner if item.type in ("qualified-rule", "at-rule")], inside)

    def _descriptors(self, keyword: str, node, place: _Place) -> None:
        """An ``@property`` (under a condition, for the second pass only, when the condition may hold) or an
        ``@font-face`` (read anywhere: a face only shrinks text, so one that may not apply hides what it would)."""
        descriptors = {item.lower_name: _tokens(item.value) for item in tinycss2.parse_blocks_contents(
            node.content, skip_whitespace=True, skip_comments=True) if item.type == "declaration"}
        if keyword == "font-face":
            family = _first_family(descriptors.get("font-family", []))
            size = descriptors.get("size-adjust", [])
            if family and len(size) == 1 and size[0].type == "percentage" and size[0].value >= 0:
                faces = self.at_rules.faces
                faces[family] = min(faces.get(family, math.inf), size[0].value / 100)
            return
        name = "".join(token.value for token in _tokens(node.prelude) if token.type == "ident")
        syntax = descriptors.get("syntax", [])
        inherits = _keyword(descriptors.get("inherits", []))
        if place.parent is not None or not name.startswith("--") or inherits not in ("true", "false") \
                or len(syntax) != 1 or syntax[0].type != "string":
            return  # not a registration a browser takes
        initial = descriptors.get("initial-value") or None
        if initial is None and syntax[0].value.strip() != "*":
            return
        if place.screen:
            self.at_rules.screen_properties[name] = (inherits == "true", initial)
        if place.conditional:
            self.screen_differs = self.screen_differs or place.screen
        else:
            self.at_rules.properties[name] = (inherits == "true", initial)

    def _keyframes(self, node) -> None:
        """A ``@keyframes`` rule (``@-webkit-keyframes`` too): its keyframes by offset, without their ``!important``
        declarations (a browser ignores them). A name that is no ``<custom-ident>`` or string names nothing."""
        tokens = _tokens(node.prelude)
        if len(tokens) != 1 or tokens[0].type not in ("ident", "string") or (
                tokens[0].type == "ident" and tokens[0].lower_value in _NOT_A_NAME):
            return
        at_rules = self.at_rules
        if at_rules.keyframes_line is None:
            at_rules.keyframes_line = self.line
        frames = at_rules.keyframes.setdefault(tokens[0].value, {})
        for rule in tinycss2.parse_rule_list(node.content, skip_whitespace=True, skip_comments=True):
            if rule.type != "qualified-rule":
                continue
            offsets = _keyframe_offsets(rule.prelude)
            if not offsets:
                continue  # (an offset past 0% to 100%: the browser drops the keyframe)
            declarations = [d for d in _declarations(tinycss2.parse_blocks_contents(
                rule.content, skip_whitespace=True, skip_comments=True)) if not d.important
                and d.name not in _ANIMATION_PROPERTIES]
            for offset in offsets:
                frames.setdefault(offset, []).extend(declarations)

    def _scope_root(self, prelude: list, place: _Place) -> tuple[str, str | None]:
        """The selectors of an ``@scope``'s roots -- its start (inside a style rule or a scope, relative to it);
        without one, the parent of the sheet's ``<style>`` (or ``<link>``) -- and of its limits (``to (...)``,
        relative to the roots; None: none)."""
        tokens = _tokens(prelude)
        start = tinycss2.serialize(tokens[0].content).strip() if tokens and tokens[0].type == "() block" else ""
        root = self._nest(start, place) if start else place.scope or place.parent or self._owner_parent()
        limit = None
        if len(tokens) >= 2 and tokens[-1].type == "() block" and tokens[-2].type == "ident" \
                and tokens[-2].lower_value == "to":
            written = tinycss2.serialize(tokens[-1].content).strip()
            limit = self._nest(written, replace(place, scope=root, parent=None)) if written else None
        return root, limit

    def _owner_parent(self) -> str:
        """A selector of the parent of the element whose sheet is read (an ``@scope`` without a start is rooted
        there): its path of ``:nth-child()`` steps from the root; every element when it is not known."""
        element = self.owner.getparent() if self.owner is not None else None
        if element is None or not isinstance(element.tag, str):
            return "*"
        steps = []
        while element is not None:
            parent = element.getparent()
            if parent is None:
                steps.append(element.tag)
                break
            indexes = self._child_index.get(parent)
            if indexes is None:
                children = [child for child in parent if isinstance(child.tag, str)]
                indexes = self._child_index[parent] = {child: number for number, child in enumerate(children, 1)}
            steps.append(f"{element.tag}:nth-child({indexes[element]})")
            element = parent
        return " > ".join(reversed(steps))

    def _declared(self, contents: list, selector: str, place: _Place) -> None:
        """A style rule's own declarations (``contents``: its block's items)."""
        for item in contents:
            if item.type == "declaration" and item.lower_name in _NEEDED:
                self.has.add(_NEEDED[item.lower_name])
        declarations = _declarations(contents)
        first = [d for d in declarations if _hides_alone(d)] if place.conditional else declarations
        if first or (place.conditional and place.screen and declarations):
            self._add(selector, first, declarations if place.conditional and place.screen and len(first) != len(
                declarations) else first, place)

    def _key(self, place: _Place, specificity: tuple, important: bool) -> tuple:
        """A rule's cascade key after origin and importance: its layer's order (an unlayered rule above every
        layer; reversed for ``!important``), its specificity, then its ``@scope`` -- replaced, for each element it
        matches, by minus the element's distance to the scope's nearest root (:meth:`Visibility._proximity`); an
        unscoped rule is the farthest (minus infinity)."""
        layer = (*place.layer, math.inf) if place.layer else _UNLAYERED
        if important:
            layer = tuple(-index for index in layer)
        return (layer, specificity, place.scoped if place.scoped is not None else -math.inf)

    def _add(self, selector: str, declarations: list[_Declaration], screen: list[_Declaration],
             place: _Place) -> None:
        """A rule's ``declarations`` for the first pass and ``screen`` for the second (the same list, or more)."""
        compiled = _compile(selector)
        if compiled is None:
            if not any(_hides_alone(d) for d in declarations):
                return
            # A selector this reader does not know (a vendor pseudo-class): hide wherever it could
            # apply, by matching without its pseudo-classes -- never un-hide through it.
            declarations = screen = [d for d in declarations if _hides_alone(d)]
            compiled = _compile(_PSEUDO_RE.sub("", selector).strip(" ,") or "*")
            if compiled is None:
                return
        if screen is not declarations:
            self.screen_differs = True
        mixed = any(d.important for d in screen)
        for pseudo_element, specificity, xpath, needs in compiled:
            if pseudo_element is not None and pseudo_element not in ("first-line", "first-letter"):
                continue  # ::before, ::marker ... style no text of the document
            for important in ((False, True) if mixed else (False,)):
                first = [d for d in declarations if d.important == important] if mixed else declarations
                second = [d for d in screen if d.important == important] if mixed else screen
                key = self._key(place, specificity, important)
                if first:
                    self.rules.append((xpath, key, first, needs))
                if second:
                    if place.needs and screen is not declarations:
                        self._if_needed.append((len(self.screen_rules), place.needs, first))
                    self.screen_rules.append((xpath, key, second, needs))


def _compile(selector: str) -> list[tuple[str | None, tuple[int, int, int], object, tuple]] | None:
    """Each selector of a list: its pseudo-element, specificity, matcher (a :data:`_Chain` for the
    common selectors of tags, ids and classes joined by descendant or child combinators, else an XPath)
    and what its subject must have; None when one is not understood."""
    selector = _ANY_LINK_RE.sub(":link", selector)
    try:
        return [(item.pseudo_element, item.specificity(),
                 _chain(item.parsed_tree) or etree.XPath(_TRANSLATOR.selector_to_xpath(item)),
                 _subject_needs(item.parsed_tree)) for item in parse_selectors(selector)]
    except (SelectorError, etree.XPathSyntaxError, ValueError, TypeError, RecursionError):
        return None


# A compound of a tag (None: any), an id and classes; a chain is the subject's compound, then each
# compound to its left with the combinator (" " or ">") that joins it to the one on its right.
_Compound = tuple[str | None, str | None, frozenset[str]]
_Chain = list[tuple[str | None, _Compound]]


def _compound(node) -> _Compound | None:
    tag = ident = None
    classes: set[str] = set()
    while node is not None:
        kind = type(node).__name__
        if kind == "Class":
            classes.add(node.class_name)
        elif kind == "Hash":
            ident = node.id
        elif kind == "Element":
            tag = node.element.lower() if node.element and node.element != "*" else None
            return tag, ident, frozenset(classes)
        else:
            return None  # an attribute, a pseudo-class...: left to the XPath
        node = node.selector
    return None


def _chain(tree) -> _Chain | None:
    chain: _Chain = []
    combinator = None
    while type(tree).__name__ == "CombinedSelector":
        compound = _compound(tree.subselector)
        if compound is None or tree.combinator not in (" ", ">"):
            return None
        chain.append((combinator, compound))
        combinator = tree.combinator
        tree = tree.selector
    compound = _compound(tree)
    if compound is None or len(chain) > 6:
        return None
    chain.append((combinator, compound))
    return chain


def _compound_matches(element: etree._Element, compound: _Compound) -> bool:
    tag, ident, classes = compound
    return ((tag is None or element.tag == tag) and (ident is None or element.get("id") == ident)
            and (not classes or classes <= set((element.get("class") or "").split())))


def _chain_matches(element: etree._Element, chain: _Chain, index: int, seen: dict) -> bool:
    """Whether ``element`` matches ``chain[index:]`` (it already matched ``chain[index - 1]``'s compound)."""
    if index == len(chain):
        return True
    key = (id(element), index)
    if key in seen:
        return seen[key]
    combinator, compound = chain[index]
    found = False
    ancestor = element.getparent()
    while ancestor is not None and not found:
        if _compound_matches(ancestor, compound) and _chain_matches(ancestor, chain, index + 1, seen):
            found = True
        if combinator == ">":
            break
        ancestor = ancestor.getparent()
    seen[key] = found
    return found


def _subject_needs(tree) -> tuple[frozenset[str], str | None, str | None]:
    """The classes, id and element name that an element must have to be the selector's subject (the
    compound right of its last combinator), so that a rule whose subject is on no element of the page
    is not run at all."""
    while type(tree).__name__ == "CombinedSelector":
        tree = tree.subselector
    classes: set[str] = set()
    ident = name = None
    while tree is not None:
        kind = type(tree).__name__
        if kind == "Class":
            classes.add(tree.class_name)
        elif kind == "Hash":
            ident = tree.id
        elif kind == "Element":
            name = tree.element.lower() if tree.element and tree.element != "*" else None
            break
        tree = getattr(tree, "selector", None)
    return frozenset(classes), ident, name


def _style_sheets(root: etree._Element, dark: bool = False) -> _Sheets:
    """The page's style sheets; ``dark``: their second pass as a reader who prefers a dark scheme applies them."""
    sheets = _Sheets(dark)
    for node in root.iter("style", "link"):
        if any(ancestor.tag == "template" for ancestor in node.iterancestors()):
            continue
        media = (node.get("media") or "").strip().lower()
        if media and _print_only(media):
            continue
        if node.tag == "style":
            css = "".join(node.itertext())
        else:
            rel = (node.get("rel") or "").lower().split()
            if "stylesheet" not in rel or "alternate" in rel or node.get("disabled") is not None:
                continue  # not a style sheet, or one the page does not apply unless its reader picks it
            css = _data_url_text(node.get("href") or "")
        if css:
            sheets.line, sheets.owner = node.sourceline, node
            sheets.schemes = sheets.schemes or "color-scheme" in media
            sheets.add(css, conditional=media not in ("", "all", "screen"),
                       screen=not media or media_may_hold(media, dark))
            if "<![CDATA[" in css:
                # An XHTML page, which a browser reads as XML, takes a CDATA section's text as the sheet; read as
                # HTML it is no rule (found attacking hidden text, 2026-12-03: <style><![CDATA[.x{display:none}]]>
                # in an .xhtml file hid text that reached the model). Read both ways: the CDATA reading only hides.
                sheets.add(css.replace("<![CDATA[", "").replace("]]>", ""), conditional=True, screen=False)
    sheets.finish(root)
    return sheets


def _data_url_text(href: str) -> str:
    """The text of a ``data:`` URL, read as a style sheet (style sheets anywhere else are not fetched) whatever its
    MIME type: a page in quirks mode (no doctype) applies a ``data:text/plain`` sheet -- or ``data:,``, or any other
    type -- as CSS (chromium 156, fourteenth session: ``@import url("data:text/plain,.x{display:none}")`` hid text
    that reached the model); a page in standards mode ignores it, but the modes are not told apart here (fail
    closed: what such a sheet hides is hidden in either)."""
    match = re.fullmatch(r"\s*data:([^,]*),(.*)", href, re.DOTALL | re.IGNORECASE)
    if match is None:
        return ""
    payload = match[2]
    if ";base64" in match[1].lower():
        try:
            return base64.b64decode(unquote(payload), validate=False).decode("utf-8", "replace")
        except ValueError:
            return ""
    return unquote(payload)


# -- reading declarations ---------------------------------------------------------------------------


def _keyword(tokens: list) -> str | None:
    return tokens[0].lower_value if len(tokens) == 1 and tokens[0].type == "ident" else None


def _number(token) -> float | None:
    if token.type == "number":
        return float(token.value)
    if token.type == "percentage":
        return token.value / 100
    if token.type == "function" and token.lower_name in _MATH:
        return _math(token, _DEFAULT_FONT_PX, 100.0, percent_as_fraction=True)
    return None


_MATH = frozenset({"calc", "min", "max", "clamp"})


def _math(function, font_px: float, basis: float, *, percent_as_fraction: bool = False,
          depth: int = 0) -> float | None:
    """A CSS math function's value (lengths in px, numbers as numbers), or None when it is not one this
    reader can evaluate: ``calc(1px - 1px)``, ``min(0px, 2em)``, ``clamp(0px, 0px, 1px)``..."""
    if depth > 16:
        return None

    def value(token) -> float | None:
        if token.type == "number":
            return float(token.value)
        if token.type == "percentage":
            return token.value / 100 if percent_as_fraction else token.value * basis / 100
        if token.type == "dimension":
            return _length_px(token, font_px, basis=basis)
        if token.type == "function" and token.lower_name in _MATH:
            return _math(token, font_px, basis, percent_as_fraction=percent_as_fraction, depth=depth + 1)
        if token.type == "() block":
            return expression(_tokens(token.content))
        return None

    def expression(tokens: list) -> float | None:
        """Sums of products, left to right (``*`` and ``/`` before ``+`` and ``-``)."""
        terms: list[tuple[str, list]] = [("+", [])]
        for token in tokens:
            if token.type == "literal" and token.value in "+-" and terms[-1][1]:
                terms.append((token.value, []))
            else:
                terms[-1][1].append(token)
        total = 0.0
        for sign, factors in terms:
            result = value(factors[0]) if factors else None
            index = 1
            while result is not None and index < len(factors):
                operator = factors[index]
                operand = value(factors[index + 1]) if index + 1 < len(factors) else None
                if operator.type != "literal" or operator.value not in "*/" or operand is None or (
                        operator.value == "/" and operand == 0):
                    return None
                result = result * operand if operator.value == "*" else result / operand
                index += 2
            if result is None:
                return None
            total += result if sign == "+" else -result
        return total

    arguments = _tokens(function.arguments)
    groups: list[list] = [[]]
    for token in arguments:
        if token.type == "literal" and token.value == ",":
            groups.append([])
        else:
            groups[-1].append(token)
    values = [expression(group) for group in groups]
    if any(v is None for v in values) or not values:
        return None
    name = function.lower_name
    if name == "calc" and len(values) == 1:
        return values[0]
    if name == "min":
        return min(values)  # type: ignore[type-var]
    if name == "max":
        return max(values)  # type: ignore[type-var]
    if name == "clamp" and len(values) == 3:
        low, middle, high = values
        return max(low, min(middle, high))  # type: ignore[type-var]
    return None


def _font_size(tokens: list, parent_px: float) -> float | None:
    """``font-size`` in px (None: not one this reader knows)."""
    if len(tokens) != 1:
        return None
    token = tokens[0]
    if token.type == "ident":
        keyword = token.lower_value
        if keyword in _FONT_KEYWORDS:
            return _FONT_KEYWORDS[keyword]
        if keyword == "smaller":
            return parent_px / 1.2
        if keyword == "larger":
            return parent_px * 1.2
        return None
    if token.type == "percentage":
        return parent_px * token.value / 100
    size = _length_px(token, parent_px, basis=parent_px)
    return max(size, 0.0) if size is not None else None


def _font_shorthand_size(tokens: list, parent_px: float) -> float | None:
    """The size in a ``font`` shorthand (``font: 0/0 a``, ``italic bold 1px serif``)."""
    for index, token in enumerate(tokens):
        if token.type in ("dimension", "percentage") or (token.type == "number" and token.value == 0) or (
                token.type == "ident" and token.lower_value in _FONT_KEYWORDS):
            follows = tokens[index + 1] if index + 1 < len(tokens) else None
            if token.type == "number" and not (follows is not None and follows.type == "literal"
                                               and follows.value == "/") and index + 1 < len(tokens):
                continue  # a bare 0 is a size only before "/" or last (a weight is a number too)
            return _font_size([token], parent_px)
    return None


# The font metrics ``font-size-adjust`` names, as a share of the font size, in the usual fonts (as the units: an x
# height of half the size, a cap height of 0.7, an ideograph of 1).
_FONT_METRICS = {"ex-height": 0.5, "cap-height": 0.7, "ch-width": 0.5, "ic-width": 1.0, "ic-height": 1.0}


def _first_family(tokens: list) -> str | None:
    """The first family name of a ``font-family`` list, lower case (a string, or words joined by spaces)."""
    words = []
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            break
        if token.type == "string":
            return token.value.strip().lower() or None
        if token.type == "ident":
            words.append(token.value.lower())
        elif token.type not in ("whitespace", "comment"):
            return None
    return " ".join(words) or None


def _shorthand_families(tokens: list) -> list:
    """The family list of a ``font`` shorthand: what follows its size (and ``/`` line height)."""
    for index, token in enumerate(tokens):
        if token.type in ("dimension", "percentage", "number") or (
                token.type == "ident" and token.lower_value in _FONT_KEYWORDS):
            rest = tokens[index + 1:]
            if token.type == "number" and not (rest and rest[0].type == "literal" and rest[0].value == "/"):
                continue  # a weight
            if rest and rest[0].type == "literal" and rest[0].value == "/":
                rest = rest[2:]
            return rest
    return []


def _face_scale(tokens: list, faces: dict[str, float], inherited: float) -> float:
    """The ``size-adjust`` an element's font family draws it at (the ``@font-face`` its list names first)."""
    if _keyword(tokens) in ("inherit", "unset"):
        return inherited
    family = _first_family(tokens)
    return faces.get(family, 1.0) if family else 1.0


def _font_size_adjust(tokens: list, inherited: float) -> float:
    """The used font size over the computed one that ``font-size-adjust`` sets (2026-12-04, found attacking hidden
    text: ``font-size-adjust: 0`` draws the font at size 0, and the text reached the model): a number N scales the
    font so that its metric (``ex-height`` unless named) is N times the size, so the size by N over the metric's usual
    share; ``none``, ``from-font`` or a value this reader cannot read: 1; ``inherit``/``unset``: the parent's."""
    keyword = _keyword(tokens)
    if keyword in ("inherit", "unset"):
        return inherited
    metric, number = "ex-height", None
    for token in tokens:
        if token.type == "ident" and token.lower_value in _FONT_METRICS:
            metric = token.lower_value
        elif token.type == "number" and token.value >= 0:
            number = float(token.value)
        elif token.type == "function" and token.lower_name in _MATH:
            number = _number(token)
        else:
            return 1.0
    return 1.0 if number is None or number < 0 else number / _FONT_METRICS[metric]


def _stroke_width(tokens: list, font_px: float) -> float:
    """The width a ``-webkit-text-stroke`` or ``-webkit-text-stroke-width`` value sets: 0 when it gives none (the
    initial value); a width this reader cannot measure counts as drawn."""
    for token in tokens:
        if token.type == "ident" and token.lower_value in _LINE_WIDTHS:
            return _LINE_WIDTHS[token.lower_value]
    for token in _lengths(tokens):
        width = _length_px(token, font_px)
        return 1.0 if width is None else max(width, 0.0)
    return 0.0


_LINE_WIDTHS = {"thin": 1.0, "medium": 3.0, "thick": 5.0}


def _lengths(tokens: list) -> list:
    """The tokens of a value that may be lengths (numbers, dimensions, math functions), in order."""
    return [t for t in tokens if t.type in ("dimension", "number")
            or (t.type == "function" and not isinstance(_color(t), tuple))]


def _colors_in(tokens: list) -> list[Color]:
    """The colours in a value (a shorthand, a gradient's arguments)."""
    found: list[Color] = []
    for token in tokens:
        if token.type == "function":
            found.extend(_colors_in(_tokens(token.arguments)))
            color = _color(token)
        elif token.type in ("ident", "hash"):
            color = _color(token)
        else:
            continue
        if isinstance(color, tuple):
            found.append(color)
    return found


def _offset_far(tokens: list, font_px: float) -> bool:
    return any((px := _length_px(token, font_px)) is not None and abs(px) >= OFF_SCREEN_PX for token in tokens)


def _pushes_far(tokens: list, font_px: float) -> bool:
    """A padding or border width of :data:`OFF_SCREEN_PX` or more (a negative one is invalid: ignored by browsers)."""
    return len(tokens) == 1 and (px := _length_px(tokens[0], font_px)) is not None and px >= OFF_SCREEN_PX


def _line_off_screen(tokens: dict[str, list], font_px: float) -> bool:
    """Whether a ``line-height`` or ``vertical-align`` moves the text :data:`OFF_SCREEN_PX` or more (2026-12-04): a
    line box of height L draws its text (L - font size) / 2 below its top, and ``vertical-align`` shifts the baseline
    by its length (a percentage of the line height, taken as 1.2 em); the reader would scroll past a screen of nothing
    to find it, as for a margin. Inherited (``line-height``): a child's line stays in its parent's tall line box."""
    height = tokens.get("line-height", [])
    if len(height) == 1:
        token = height[0]
        number = token.value if token.type == "number" else None
        line = number * font_px if number is not None else _length_px(token, font_px, basis=font_px)
        if line is not None and (line - font_px) / 2 >= OFF_SCREEN_PX:
            return True
    shift = tokens.get("vertical-align", [])
    return len(shift) == 1 and (px := _length_px(shift[0], font_px, basis=1.2 * font_px)) is not None \
        and abs(px) >= OFF_SCREEN_PX


_ANGLE_RADIANS = {"deg": math.pi / 180, "rad": 1.0, "grad": math.pi / 200, "turn": 2 * math.pi}


def _angle(token) -> float | None:
    """An angle in radians (``90deg``, ``0.25turn``, ``0``), or None."""
    if token.type == "number" and token.value == 0:
        return 0.0
    if token.type == "dimension" and token.lower_unit in _ANGLE_RADIANS:
        return token.value * _ANGLE_RADIANS[token.lower_unit]
    return None


def _rotation_scale(axis: tuple[float, float, float], angle: float) -> float:
    """How much a 3D rotation leaves of a box facing the reader: the square root of the area of its
    projection (the rotation matrix's upper-left 2x2 determinant). ``rotateY(90deg)`` turns the text
    edge-on: 0. A rotation in the page's plane (about z) keeps it whole."""
    x, y, z = axis
    norm = math.sqrt(x * x + y * y + z * z)
    if norm == 0:
        return 1.0  # no axis: not rendered as a rotation
    x, y, z = x / norm, y / norm, z / norm
    c, s = math.cos(angle), math.sin(angle)
    m00, m01 = c + x * x * (1 - c), x * y * (1 - c) - z * s
    m10, m11 = y * x * (1 - c) + z * s, c + y * y * (1 - c)
    return math.sqrt(abs(m00 * m11 - m01 * m10))


def _rotate_property(tokens: list) -> float:
    """The ``rotate`` property's scale: ``45deg`` (in the plane), ``x 90deg``, ``y 90deg``, ``z 90deg``,
    ``1 0 0 90deg``; 1.0 for anything this reader cannot read."""
    axes = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}
    if len(tokens) == 2 and tokens[0].type == "ident" and tokens[0].lower_value in axes:
        angle = _angle(tokens[1])
        return 1.0 if angle is None else _rotation_scale(axes[tokens[0].lower_value], angle)
    if len(tokens) == 4:
        numbers, angle = [_number(t) for t in tokens[:3]], _angle(tokens[3])
        if angle is not None and all(n is not None for n in numbers):
            return _rotation_scale(tuple(numbers), angle)  # type: ignore[arg-type]
    return 1.0


def _transform(tokens: list, font_px: float) -> tuple[float, bool]:
    """A ``transform``'s scale (the smaller axis; for a 3D rotation or matrix, what its projection leaves)
    and whether it translates far off screen."""
    scale, far = 1.0, False
    for token in tokens:
        if token.type != "function":
            continue
        name = token.lower_name
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        numbers = [_number(t) for t in arguments]
        if name in ("scale", "scale3d", "scalex", "scaley") and numbers and all(n is not None for n in numbers):
            factor = min(abs(n) for n in numbers[:2] if n is not None)  # type: ignore[type-var]
            scale *= factor
        elif name in ("matrix", "matrix3d") and numbers and all(n is not None for n in numbers):
            values = [n for n in numbers if n is not None]
            if name == "matrix" and len(values) == 6:
                scale *= math.sqrt(abs(values[0] * values[3] - values[1] * values[2]))
                far = far or abs(values[4]) >= OFF_SCREEN_PX or abs(values[5]) >= OFF_SCREEN_PX
            elif name == "matrix3d" and len(values) == 16:  # column-major: the 2D part is 0, 1, 4, 5
                scale *= math.sqrt(abs(values[0] * values[5] - values[1] * values[4]))
                far = far or abs(values[12]) >= OFF_SCREEN_PX or abs(values[13]) >= OFF_SCREEN_PX
        elif name in ("rotatex", "rotatey") and len(arguments) == 1 and (angle := _angle(arguments[0])) is not None:
            scale *= abs(math.cos(angle))  # the other axis is squeezed: rotateY(90deg) is edge-on
        elif name == "rotate3d" and len(arguments) == 4:
            angle, axis = _angle(arguments[3]), numbers[:3]
            if angle is not None and all(n is not None for n in axis):
                scale *= _rotation_scale(tuple(axis), angle)  # type: ignore[arg-type]
        elif name.startswith("translate"):
            far = far or _offset_far(arguments, font_px)
    return min(scale, _readable_scale(_linear_part(tokens))), far or _behind_the_viewer(tokens, font_px)


def _behind_the_viewer(tokens: list, font_px: float) -> bool:
    """Whether a ``transform`` puts the whole element behind the viewer: after a ``perspective()``, a translation
    towards the viewer as far as its distance or more (``perspective(10px) translateZ(10px)``), or a ``matrix3d`` whose
    projective part is 0 or less -- the homogeneous ``w`` of every point of the element's plane is not positive, and a
    browser draws none of it (found attacking the demo, fifteenth session, attack16: chromium 156 draws no pixel of
    it; the matrix's linear part, all this reader judged, is the identity). Judged only where ``w`` is the same at every
    point of the plane (nothing turns the plane before the projection); else, or for a function this reader does not
    read, not judged."""
    row = [0.0, 0.0, 0.0, 1.0]  # the last row of the transform's 4x4 matrix, built left to right
    projects = False
    for token in tokens:
        if token.type == "ident" and token.lower_value == "none":
            continue
        if token.type != "function":
            return False
        name = token.lower_name
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        step = [[float(i == j) for j in range(4)] for i in range(4)]
        if name == "perspective":
            distance = _length_px(arguments[0], font_px) if len(arguments) == 1 else None
            if distance is None or distance <= 0:
                return False
            step[3][2], projects = -1.0 / distance, True
        elif name.startswith("translate"):
            lengths = [_length_px(argument, font_px) for argument in arguments]
            if None in lengths or not lengths:
                return False
            axes = {"translatex": (0,), "translatey": (1,), "translatez": (2,)}.get(name, (0, 1, 2))
            for axis, length in zip(axes, lengths, strict=False):
                step[axis][3] = length  # type: ignore[assignment]
        elif name == "matrix3d":
            numbers = [_number(t) for t in arguments]
            if len(numbers) != 16 or None in numbers:
                return False
            step = [[numbers[column * 4 + r] for column in range(4)] for r in range(4)]  # type: ignore[misc]
            projects = True
        else:
            linear = _linear_part([token])
            if linear is None:
                return False
            for r in range(3):
                step[r][:3] = list(linear[r])
        row = [sum(row[k] * step[k][j] for k in range(4)) for j in range(4)]
    return projects and abs(row[0]) < 1e-9 and abs(row[1]) < 1e-9 and row[3] <= 0


def _readable_scale(matrix: Matrix | None) -> float:
    """How much of a letter's size a transform leaves readable (2026-12-04; found attacking hidden text: a skew near
    90 degrees, ``skewX(80deg)``, and a matrix squashing one axis, ``matrix(1, 0, 0, 0.15, 0, 0)``, drew unreadable
    smears that reached the model -- the square root of the determinant, the scale read before, is 1 for any skew and
    0.39 for that matrix). Of the projected 2D part (columns ``u`` along the baseline, ``v`` up the letters): the
    height across the baseline (``|det| / |u|``) and the width across the letters' stems (``|det| / |v|``), the
    smaller of the two, which the 2 pt rule then judges; 0 when the axes are sheared within
    :data:`MIN_AXES_DEGREES` of one another (rendered in chromium: a skew of 70 degrees or more draws a band of
    strokes, at 60 words still show, at 45 and 20 they read). 1 for a transform this reader cannot read."""
    if matrix is None:
        return 1.0
    (a, c, _), (b, d, _), _ = matrix
    determinant = abs(a * d - b * c)
    along, up = math.hypot(a, b), math.hypot(c, d)
    if along == 0 or up == 0 or determinant == 0:
        return 0.0
    if determinant / (along * up) < math.sin(math.radians(MIN_AXES_DEGREES)):
        return 0.0
    return min(determinant / along, determinant / up)


Matrix = tuple[tuple[float, float, float], ...]
_IDENTITY: Matrix = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def _product(a: Matrix, b: Matrix) -> Matrix:
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)) for i in range(3))


def _rotation(axis: tuple[float, float, float], angle: float) -> Matrix | None:
    x, y, z = axis
    norm = math.sqrt(x * x + y * y + z * z)
    if norm == 0:
        return None
    x, y, z = x / norm, y / norm, z / norm
    c, s, t = math.cos(angle), math.sin(angle), 1 - math.cos(angle)
    return ((c + x * x * t, x * y * t - z * s, x * z * t + y * s),
            (y * x * t + z * s, c + y * y * t, y * z * t - x * s),
            (z * x * t - y * s, z * y * t + x * s, c + z * z * t))


def _linear_part(tokens: list) -> Matrix | None:
    """The 3x3 linear part of a ``transform`` (translations and ``perspective()`` left out: they move the
    box, they do not turn it over), or None when a function is not one this reader reads."""
    matrix = _IDENTITY
    for token in tokens:
        if token.type == "ident" and token.lower_value == "none":
            continue
        if token.type != "function":
            return None
        name = token.lower_name
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        numbers = [_number(t) for t in arguments]
        step: Matrix | None = _IDENTITY
        if name.startswith("translate") or name == "perspective":
            pass
        elif name in ("skew", "skewx", "skewy") and 1 <= len(arguments) <= (2 if name == "skew" else 1):
            angles = [_angle(argument) for argument in arguments]
            if None in angles:
                step = None
            else:  # a shear keeps the z axis and the facing
                x = math.tan(angles[0]) if name != "skewy" else 0.0  # type: ignore[arg-type]
                y = math.tan(angles[0]) if name == "skewy" else math.tan(angles[1]) if len(angles) == 2 else 0.0  # type: ignore[arg-type]
                step = ((1.0, x, 0.0), (y, 1.0, 0.0), (0.0, 0.0, 1.0))
        elif name in ("rotate", "rotatez", "rotatex", "rotatey") and len(arguments) == 1:
            angle = _angle(arguments[0])
            axis = {"rotatex": (1.0, 0.0, 0.0), "rotatey": (0.0, 1.0, 0.0)}.get(name, (0.0, 0.0, 1.0))
            step = _rotation(axis, angle) if angle is not None else None
        elif name == "rotate3d" and len(arguments) == 4:
            angle = _angle(arguments[3])
            step = None if angle is None or None in numbers[:3] else _rotation(tuple(numbers[:3]), angle)  # type: ignore[arg-type]
        elif name in ("scale", "scalex", "scaley", "scalez", "scale3d") and numbers and None not in numbers:
            x, y, z = {"scalex": (numbers[0], 1.0, 1.0), "scaley": (1.0, numbers[0], 1.0),
                       "scalez": (1.0, 1.0, numbers[0]), "scale3d": tuple(numbers[:3]) + (1.0,) * (3 - len(numbers))
                       }.get(name, (numbers[0], numbers[-1], 1.0))  # type: ignore[assignment]
            step = ((x, 0.0, 0.0), (0.0, y, 0.0), (0.0, 0.0, z))  # type: ignore[assignment]
        elif name == "matrix" and len(numbers) == 6 and None not in numbers:
            a, b, c, d = numbers[:4]
            step = ((a, c, 0.0), (b, d, 0.0), (0.0, 0.0, 1.0))  # type: ignore[assignment]
        elif name == "matrix3d" and len(numbers) == 16 and None not in numbers:  # column-major
            step = tuple(tuple(numbers[column * 4 + row] for column in range(3)) for row in range(3))  # type: ignore[assignment]
        else:
            step = None
        if step is None:
            return None
        matrix = _product(matrix, step)
    return matrix


def _faces_away(tokens: dict[str, list]) -> bool:
    """Whether an element's own ``rotate``, ``scale`` and ``transform`` turn its back to the reader: the
    z component of its turned normal (the inverse matrix's, as browsers test it) is negative --
    ``rotateY(180deg)``, ``rotateX(0.5turn)``, ``rotate: y 180deg``; a mirror in the page's plane
    (``scaleX(-1)``) does not. Anything this reader cannot read counts as facing the reader."""
    matrix = _IDENTITY
    rotate = tokens.get("rotate", [])
    if rotate and _keyword(rotate) != "none":
        axes = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}
        axis: tuple | None = None
        angle = _angle(rotate[-1])
        if len(rotate) == 1:
            axis = axes["z"]
        elif len(rotate) == 2 and rotate[0].type == "ident":
            axis = axes.get(rotate[0].lower_value)
        elif len(rotate) == 4:
            numbers = [_number(t) for t in rotate[:3]]
            axis = None if None in numbers else tuple(numbers)
        turned = _rotation(axis, angle) if axis is not None and angle is not None else None
        if turned is None:
            return False
        matrix = _product(matrix, turned)
    scale = [_number(t) for t in tokens.get("scale", [])]
    if len(scale) == 3 and None not in scale:
        matrix = _product(matrix, ((scale[0], 0.0, 0.0), (0.0, scale[1], 0.0), (0.0, 0.0, scale[2])))  # type: ignore[arg-type]
    own = _linear_part(tokens.get("transform", []))
    if own is None:
        return False
    matrix = _product(matrix, own)
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = matrix
    determinant = (m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20) + m02 * (m10 * m21 - m11 * m20))
    if determinant == 0:
        return False  # flattened: the scale rule judges it
    return (m00 * m11 - m01 * m10) / determinant < 0


def _clip_gone(name: str, tokens: list, font_px: float) -> bool:
    if not tokens or tokens[0].type != "function":
        return False
    function = tokens[0]
    arguments = [t for t in _tokens(function.arguments) if t.type != "literal"]
    if name == "clip" and function.lower_name == "rect" and len(arguments) == 4:
        top, right, bottom, left = (_length_px(t, font_px) for t in arguments)
        if None in (top, right, bottom, left):
            return False
        return _too_small(right - left, bottom - top)  # type: ignore[operator]
    if name == "clip-path":
        if function.lower_name in ("rect", "xywh"):  # rect(top right bottom left), xywh(x y width height)
            sides = []
            for token in arguments:
                if token.type == "ident":  # "round", or "auto": the box's own edge, unknown here
                    break
                sides.append(_length_px(token, font_px, basis=OFF_SCREEN_PX))
            if len(sides) != 4 or None in sides:
                return False
            if function.lower_name == "rect":
                top, right, bottom, left = sides
                return _too_small(right - left, bottom - top)  # type: ignore[operator]
            return _too_small(sides[2], sides[3])
        if function.lower_name == "inset":
            return any(t.type == "percentage" and t.value >= 50 for t in arguments)
        if function.lower_name in ("circle", "ellipse"):
            # Radii before "at": a percentage is of a box this reader does not know, so only 0% counts.
            radii = []
            for token in arguments:
                if token.type == "ident":
                    break
                radii.append(0.0 if token.type == "percentage" and token.value == 0 else
                             None if token.type == "percentage" else _length_px(token, font_px))
            if not radii:
                return False
            across = radii[:1] * 2 if function.lower_name == "circle" or len(radii) == 1 else radii[:2]
            width, height = (None if r is None else 2 * r for r in across)
            return _too_small(width, height)
        if function.lower_name == "polygon":
            return _polygon_area(function, font_px) <= 1
        if function.lower_name == "path":
            strings = [t.value for t in arguments if t.type == "string"]
            return len(strings) == 1 and _svg_path_gone(strings[0])
    return False


_PATH_ARITY = {"m": 2, "l": 2, "h": 1, "v": 1, "c": 6, "s": 4, "q": 4, "t": 2, "a": 7, "z": 0}
_PATH_TOKEN = re.compile(r"[MmLlHhVvCcSsQqTtAaZz]|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _svg_path_gone(data: str) -> bool:
    """Whether a ``clip-path: path()`` (SVG path data, user units = px) clips everything away: no command,
    or every point it reaches -- control points and, for an arc, its radii around the end point, so a
    superset of what it encloses -- within :data:`_HAIR_PX` in either direction, or straight segments only
    enclosing at most one square pixel. Path data this reader cannot follow counts as visible (as a
    ``polygon()`` of unknown points)."""
    tokens = _PATH_TOKEN.findall(data)
    if re.sub(r"[\s,]+", "", data) != "".join(tokens):
        return False  # something else in the data: not followed
    x = y = start_x = start_y = 0.0
    points: list[tuple[float, float]] = []
    subpaths: list[list[tuple[float, float]]] = []  # the points of each subpath, for the area
    straight = True
    command, i = "", 0
    while i < len(tokens):
        if tokens[i].isalpha():
            command, i = tokens[i], i + 1
            if command in "Zz":
                x, y = start_x, start_y
                continue
        if not command or command in "Zz":
            return False  # numbers without a command
        arity = _PATH_ARITY[command.lower()]
        args = tokens[i : i + arity]
        if len(args) < arity or any(a.isalpha() for a in args):
            return False
        values = [float(a) for a in args]
        i += arity
        relative = command.islower()
        low = command.lower()
        if low == "h":
            x = x + values[0] if relative else values[0]
        elif low == "v":
            y = y + values[0] if relative else values[0]
        elif low == "a":
            rx, ry = abs(values[0]), abs(values[1])
            x, y = (x + values[5], y + values[6]) if relative else (values[5], values[6])
            points += [(x - rx, y - ry), (x + rx, y + ry)]
            straight = False
        else:
            pairs = [(values[k], values[k + 1]) for k in range(0, arity, 2)]
            if relative:
                pairs = [(x + px, y + py) for px, py in pairs]
            points += pairs[:-1]
            straight = straight and low in ("m", "l")
            x, y = pairs[-1]
            if low == "m":
                start_x, start_y = x, y
                subpaths.append([])
                command = "l" if relative else "L"  # further pairs after a moveto are lines
        points.append((x, y))
        if subpaths:
            subpaths[-1].append((x, y))
    if not points:
        return True  # path(""): nothing is inside it
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    if _too_small(max(xs) - min(xs), max(ys) - min(ys)):
        return True
    if straight:
        area = sum(abs(sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(sub, sub[1:] + sub[:1], strict=True)))
                   for sub in subpaths) / 2
        return area <= 1
    return False


# What sizes a size-contained box in its block axis (``_size_contained_empty``).
_INTRINSIC = {"height": ("contain-intrinsic-height", "contain-intrinsic-block-size"),
              "width": ("contain-intrinsic-width", "contain-intrinsic-block-size")}


def _size_contained_empty(tokens: dict[str, list], font_px: float, *, block: bool) -> bool:
    """Whether a box whose overflow is clipped (``overflow: hidden|clip`` or paint containment: the caller's test) is
    **size-contained** (``contain: size`` or ``strict``) with no room for a line in its block axis: size containment
    lays a box out as if it were empty, so its auto block size is its ``contain-intrinsic-*`` size (none: 0), at least
    its ``min-*``, plus its padding -- and what overflows it is clipped. Found attacking the demo (fifteenth session,
    attack16): ``<div style="contain: strict">`` draws nothing of its text in chromium 156 (checked with the payload
    written backwards: not one pixel differs), no height being written, so the box rule kept it. A block size written
    (``height``/``max-height``; in a vertical writing mode ``width``) is the box rule's. A non-atomic inline box (an
    element inline by its tag and its ``display``) is not contained: drawn. What this reader cannot read of the sizes
    counts as 0 (fail closed); a box of more than :data:`_HAIR_PX` shows its first line."""
    if not any(t.type == "ident" and t.lower_value in ("size", "strict") for t in tokens.get("contain", [])):
        return False
    display = _keyword(tokens.get("display", []))
    if display in ("inline", "contents") or (display is None and not block):
        return False
    vertical = (_keyword(tokens.get("writing-mode", [])) or "").startswith(("vertical", "sideways"))
    axis = "width" if vertical else "height"
    if tokens.get(axis) or tokens.get(f"max-{axis}"):
        return False  # a size of its own: judged by the box rule
    sides = ("padding-left", "padding-right") if vertical else ("padding-top", "padding-bottom")

    def length(name: str, default: float = 0.0) -> float:
        value = [t for t in tokens.get(name, []) if not (t.type == "ident" and t.lower_value in ("auto", "none"))]
        size = _length_px(value[-1], font_px) if value else default
        return max(size, 0.0) if size is not None else 0.0

    intrinsic = max([length(name) for name in (*_INTRINSIC[axis], "contain-intrinsic-size")] or [0.0])
    return max(intrinsic, length(f"min-{axis}")) + sum(length(side) for side in sides) <= _HAIR_PX


def _too_small(width: float | None, height: float | None) -> bool:
    """Whether a box (or clip) of these sizes in px (None: unknown) shows nothing of text: at most
    :data:`_HAIR_PX` in either direction."""
    return any(size is not None and size <= _HAIR_PX for size in (width, height))


def _polygon_area(function, font_px: float) -> float:
    """A ``polygon()``'s area in square pixels (percentages of a :data:`OFF_SCREEN_PX` box), infinite when
    a point is not a pair of lengths this reader knows (nothing is hidden then)."""
    points, point = [], []
    for token in _tokens(function.arguments):
        if token.type == "literal" and token.value == ",":
            points.append(point)
            point = []
        elif token.type == "ident" and not points and not point:
            continue  # a fill rule: nonzero, evenodd
        elif token.type != "literal":
            point.append(_length_px(token, font_px, basis=OFF_SCREEN_PX))
    points.append(point)
    if any(len(p) != 2 or None in p for p in points):
        return math.inf
    return abs(sum(x1 * y2 - x2 * y1 for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1], strict=True))) / 2


def _mask_gone(tokens: list) -> bool:
    """A ``mask``/``mask-image`` of gradients only, every colour of them (nearly) transparent: nothing of
    the element is painted. A mask with an image (``url()``) is judged visible."""
    if not tokens or any(t.type == "url" or (t.type == "function" and t.lower_name in ("url", "image-set"))
                         for t in tokens):
        return False
    gradients = [t for t in tokens if t.type == "function" and t.lower_name.endswith("gradient")]
    colors = [c for g in gradients for c in _colors_in([g])]
    return bool(gradients) and bool(colors) and all(c[3] < MIN_OPACITY for c in colors)


def _layers(tokens: list) -> list[list]:
    layers: list[list] = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            layers.append([])
        else:
            layers[-1].append(token)
    return layers


def _no_size(tokens: list, font_px: float) -> bool:
    """Whether a ``mask-size`` layer (one or two sizes) has a width or height of 0."""
    sizes = [t for t in tokens if not (t.type == "ident" and t.lower_value == "auto")]
    return any((t.type in ("number", "percentage", "dimension") and t.value == 0)
               or (t.type == "function" and (px := _length_px(t, font_px)) is not None and px == 0) for t in sizes)


def _mask_of_no_size(tokens: dict[str, list], font_px: float) -> bool:
    """A mask image (any: a gradient, an image) in layers all sized 0 wide or high -- ``mask-size: 0``,
    ``mask: url(m.png) 0 0 / 0 0`` (and ``-webkit-`` forms): nothing of it is drawn, so nothing of the element
    (checked in chromium: no pixel painted; a layer of any size beside it shows the element)."""
    for prefix in ("", "-webkit-"):
        shorthand = tokens.get(f"{prefix}mask", [])
        image = tokens.get(f"{prefix}mask-image") or shorthand
        if not image or _keyword(image) == "none":
            continue
        size = tokens.get(f"{prefix}mask-size")
        if size:
            layers = _layers(size)
        else:  # the shorthand's sizes: after the "/" of each layer
            layers = []
            for layer in _layers(shorthand):
                slash = next((i for i, t in enumerate(layer) if t.type == "literal" and t.value == "/"), None)
                layers.append([t for t in layer[slash + 1 : slash + 3] if t.type != "ident" or t.lower_value == "auto"]
                              if slash is not None else [])
        if layers and all(_no_size(layer, font_px) for layer in layers):
            return True
    return False


def _hides_alone(declaration: _Declaration) -> bool:
    """Whether a declaration hides text whatever else applies (used where conditions are not evaluated)."""
    name, tokens = declaration.name, _tokens(declaration.value)
    keyword = _keyword(tokens)
    if name == "display":
        return keyword == "none"
    if name == "visibility":
        return keyword in ("hidden", "collapse")
    if name == "content-visibility":
        return keyword == "hidden"
    if name == "-webkit-text-security":
        return keyword in TEXT_SECURITY
    if name == "opacity":
        value = _number(tokens[0]) if len(tokens) == 1 else None
        return value is not None and value < MIN_OPACITY
    if name == "font-size":
        # Alone, only an absolute size (or zero) says how small: a relative one depends on the parent.
        token = tokens[0] if len(tokens) == 1 else None
        absolute = token is not None and (
            (token.type in ("number", "percentage", "dimension") and token.value == 0)
            or (token.type == "dimension" and token.lower_unit in _UNITS_PX))
        size = _font_size(tokens, _DEFAULT_FONT_PX) if absolute else None
        return size is not None and size < MIN_FONT_PX
    if name == "font":
        size = _font_shorthand_size(tokens, _DEFAULT_FONT_PX)
        return size == 0
    if name == "font-size-adjust":  # alone, only 0 is small at any font size
        return _font_size_adjust(tokens, 1.0) == 0
    if name in ("left", "right", "top", "bottom", "inset", "margin-left", "margin-top", "text-indent", "translate"):
        return _offset_far(tokens, _DEFAULT_FONT_PX)
    if name in _PUSHING:
        return _pushes_far(tokens, _DEFAULT_FONT_PX)
    if name in ("padding", "border-width", "border", "border-left", "border-top"):
        return any(_pushes_far(_tokens(value), _DEFAULT_FONT_PX) for longhand, value in _expand(declaration)
                   if longhand in _PUSHING)
    if name in ("line-height", "vertical-align"):  # alone, only an absolute length says how far
        absolute = len(tokens) == 1 and tokens[0].type == "dimension" and tokens[0].lower_unit in _UNITS_PX
        return absolute and _line_off_screen({name: tokens}, 0.0)
    if name in ("clip", "clip-path"):
        return _clip_gone(name, tokens, _DEFAULT_FONT_PX)
    if name in _MASK_PROPERTIES:
        return _mask_gone(tokens)
    if name in ("letter-spacing", "word-spacing"):
        # Alone, only a gap relative to the font size says how much it overlays: -1em does at any size.
        token = tokens[0] if len(tokens) == 1 else None
        relative = token is not None and (token.type == "percentage" or (
            token.type == "dimension" and token.lower_unit == "em"))
        gap = _length_px(token, _DEFAULT_FONT_PX, basis=_DEFAULT_FONT_PX) if relative else None
        limit = OVERLAID_LETTERS if name == "letter-spacing" else OVERLAID_WORDS
        if token is not None and token.type == "dimension" and token.lower_unit in _UNITS_PX \
                and token.value * _UNITS_PX[token.lower_unit] >= OFF_SCREEN_PX:
            return True  # spaced off the screen at any font size
        return gap is not None and gap <= -limit * _DEFAULT_FONT_PX
    if name == "transform":
        scale, far = _transform(tokens, _DEFAULT_FONT_PX)
        return far or scale * _DEFAULT_FONT_PX < MIN_FONT_PX
    return False


_BOX_PROPERTIES = ("width", "height", "max-width", "max-height")
_MASK_PROPERTIES = ("mask", "mask-image", "-webkit-mask", "-webkit-mask-image")
# Elements a browser's own style sheet never shows (the HTML standard's rendering section gives them
# `display: none`), and the widgets whose content is only a fallback for browsers without them
# (`progress`, `meter`: a bar is drawn, never their text); as for the `hidden` attribute, an author's
# `display` shows them again. (Found attacking the demo: their text reached the model.)
UA_HIDDEN = frozenset({"datalist", "noembed", "noframes", "rp", "title", "progress", "meter"})
# Declarative shadow DOM (``<template shadowrootmode>``, 2026-12-03): a shadow host draws its shadow tree,
# and of its own children and text only what a ``<slot>`` of that tree takes -- the rest is never drawn
# (checked in chromium). The elements that may host one (the DOM standard's ``attachShadow`` list, and custom
# elements: a name with a hyphen); the old ``shadowroot`` attribute counts too (fail closed).
UNSLOTTED = "not taken by a slot of its shadow root"
_SHADOW_HOSTS = frozenset({
    "article", "aside", "blockquote", "body", "div", "footer", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "main", "nav", "p", "section", "span",
})
# What inside a shadow tree may hide a slot: this reader does not cascade the shadow tree, so a slot under
# any of these (or in a shadow tree with style sheets of its own: ``::slotted()``, ``slot {...}``) shows
# nothing (fail closed).
_SLOT_HIDERS = ("hidden", "aria-hidden", "style", "inert")


def _shadow_root_of(host: etree._Element) -> etree._Element | None:
    """The ``<template>`` child that becomes ``host``'s declarative shadow root (the first), or None."""
    tag = host.tag if isinstance(host.tag, str) else ""
    if tag not in _SHADOW_HOSTS and "-" not in tag:
        return None
    for child in host:
        if child.tag == "template":
            mode = (child.get("shadowrootmode") or child.get("shadowroot") or "").strip().lower()
            if mode in ("open", "closed"):
                return child
    return None


def _usable_slots(shadow: etree._Element) -> tuple[bool, frozenset[str]]:
    """Whether ``shadow`` has a default slot that shows what it takes, and the names of its named ones."""
    if next(shadow.iter("style", "link"), None) is not None:
        return False, frozenset()
    default, named = False, set()
    for slot in shadow.iter("slot"):
        path = [slot]
        for ancestor in slot.iterancestors():
            if ancestor is shadow:
                break
            path.append(ancestor)
        if any(a.get(name) is not None for a in path for name in _SLOT_HIDERS) or any(
                a.tag in UA_HIDDEN or a.tag in ("template", "dialog", "details") for a in path):
            continue
        name = slot.get("name") or ""
        if name:
            named.add(name)
        else:
            default = True
    return default, frozenset(named)


def _shadow_unslotted(root: etree._Element) -> tuple[set[etree._Element], set[etree._Element]]:
    """The shadow hosts whose own text no slot takes, and the host children no slot takes."""
    hosts_text: set[etree._Element] = set()
    children: set[etree._Element] = set()
    seen: set[etree._Element] = set()
    for template in root.iter("template"):
        host = template.getparent()
        if host is None or host in seen:
            continue
        seen.add(host)
        shadow = _shadow_root_of(host)
        if shadow is None:
            continue
        default, named = _usable_slots(shadow)
        if not default:
            hosts_text.add(host)
        for child in host:
            if child is shadow or not isinstance(child.tag, str):
                continue
            name = child.get("slot")
            if not (name in named if name else default):
                children.add(child)
    return hosts_text, children


# Elements that hide or colour by themselves.
_SPECIAL = {"template": True, "dialog": True, "font": True, "body": True, "mark": True, "option": True,
            **dict.fromkeys(UA_HIDDEN, True), **dict.fromkeys(("input", "textarea", "select", "button"), True)}
# Form controls paint their own box (the user-agent sheet, chromium 156, 2026-12-04): a field (``input``,
# ``textarea``, ``select``) ``background-color: Field; color: FieldText``, a button (``button``, an input of type
# submit, reset or button) ``ButtonFace``/``ButtonText`` -- white text in a field on a white page shows nothing,
# a field on a black paragraph shows black on white. System colours: a dark scheme darkens them.
_BUTTON_INPUTS = frozenset({"submit", "reset", "button"})
# The properties this reader evaluates (other declarations are not kept).
RELEVANT = frozenset({
    "display", "visibility", "content-visibility", "opacity", "font-size", "font", "color",
    "-webkit-text-fill-color", "background", "background-color", "background-image", "text-shadow",
    "-webkit-text-stroke", "-webkit-text-stroke-color", "-webkit-text-stroke-width", "position", "left", "right", "top", "bottom", "inset",
    "margin", "margin-left", "margin-top", "text-indent", "translate", "transform", "scale", "zoom", "clip",
    "clip-path", "width", "height", "max-width", "max-height", "overflow", "overflow-x", "overflow-y", "filter",
    "rotate", "contain", "letter-spacing", "word-spacing", "backface-visibility", "-webkit-backface-visibility",
    "mix-blend-mode", "mask-size", "-webkit-mask-size", "-webkit-line-clamp", "line-clamp", "-webkit-box-orient", "float",
    "-webkit-text-security", *_MASK_PROPERTIES, *_PUSHING, "padding", "border", "border-left", "border-top",
    "border-width", "line-height", "vertical-align", "font-size-adjust", "color-scheme", "font-family",
    # what sizes a size-contained box (``_size_contained_empty``)
    "min-width", "min-height", "padding-right", "padding-bottom", "writing-mode", "contain-intrinsic-size",
    "contain-intrinsic-width", "contain-intrinsic-height", "contain-intrinsic-block-size",
})


# Elements a browser lays out as blocks by default (the HTML standard's rendering section), and the displays that
# keep a box on the line.
_BLOCK_TAGS = frozenset({
    "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dialog", "dir", "div", "dl",
    "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
    "hgroup", "hr", "html", "legend", "li", "listing", "main", "menu", "nav", "ol", "p", "plaintext", "pre",
    "search", "section", "summary", "table", "caption", "thead", "tbody", "tfoot", "tr", "td", "th", "ul", "xmp",
})
_INLINE_DISPLAYS = frozenset({"inline", "inline-block", "inline-flex", "inline-grid", "inline-table",
                              "-webkit-inline-box", "contents"})


def _line_clamp(values: dict[str, list]) -> int | None:
    """The number of lines an element is clamped to, with what is past them clipped: ``-webkit-line-clamp: N``
    on a ``display: -webkit-box`` (or ``-webkit-inline-box``) with ``-webkit-box-orient: vertical`` -- the
    only form chromium clamps -- or the standard ``line-clamp: N`` (fail closed: a browser that clamps
    block containers shows no more), either with ``overflow: hidden|clip`` or paint containment (checked
    in chromium: without them the further lines are drawn below the box). None otherwise (0 is invalid)."""
    def number(name: str) -> int | None:
        tokens = _tokens(values.get(name, []))
        if len(tokens) == 1 and tokens[0].type == "number" and tokens[0].is_integer and tokens[0].int_value > 0:
            return tokens[0].int_value
        return None

    overflow = {_keyword(_tokens(values.get(name, []))) for name in ("overflow-x", "overflow-y")}
    contained = any(t.type == "ident" and t.lower_value in ("paint", "strict", "content")
                    for t in _tokens(values.get("contain", [])))
    if not (overflow & {"hidden", "clip"} or contained):
        return None
    webkit = number("-webkit-line-clamp")
    if webkit is not None and _keyword(_tokens(values.get("display", []))) in ("-webkit-box", "-webkit-inline-box") \
            and _keyword(_tokens(values.get("-webkit-box-orient", []))) == "vertical":
        return webkit
    return number("line-clamp")


def _out_of_flow(values: dict[str, list]) -> bool:
    return _keyword(_tokens(values.get("float", []))) in ("left", "right", "inline-start", "inline-end") or \
        _keyword(_tokens(values.get("position", []))) in ("absolute", "fixed")


def _reason(state: _State) -> str | None:
    if state.gone:
        return state.gone
    if state.invisible:
        return "visibility: hidden"
    if state.masked:
        return "letters drawn as bullets (-webkit-text-security)"
    if state.font_px * state.scale * state.adjust * state.face < MIN_FONT_PX:
        return "a font too small to read"
    if state.color is not None and state.blend is not None and not state.outlined:
        mode, outside = state.blend
        if outside is not None and _blends_in_group(state.color, mode, outside, state.group_backdrop):
            return "text blended into its background (mix-blend-mode)"
        return None
    if state.color is not None and state.backdrop is not None and not state.outlined \
            and _blends_in(state.color, state.backdrop):
        return "text coloured like its background"
    return None


class Visibility:
    """Text visibility of every element of an lxml HTML tree (computed once, top down)."""

    def __init__(self, root: etree._Element, *, screen_rules: list | None = None, either_scheme: bool = False,
                 light: bool = False, prefers_dark: bool = False, at_rules: _AtRules | None = None) -> None:
        """``screen_rules``: this is the second pass, cascading the rules as a desktop screen applies them (a
        colour under a condition that holds there too); a page whose conditional rules bring such declarations
        is judged by both passes: text hidden in either is hidden, so the second pass never un-hides.
        ``either_scheme``: the page is not shown by a browser that follows its colour scheme (an e-mail, which
        Apple Mail shows in the scheme it asks for and Gmail does not; Markdown, whose viewer keeps its own): one
        that asks for a dark scheme is judged in the light one too. ``light``: that light reading (every colour
        scheme the page sets ignored). ``prefers_dark``: the dark pass -- the page as a reader who prefers a dark
        colour scheme sees it (``prefers-color-scheme: dark`` holds, ``color-scheme: light dark`` is dark); a page
        whose sheets, ``style`` attributes or ``<meta>`` name a colour scheme is judged in it too, hidden in any pass
        is hidden. ``at_rules``: what the page's ``@property`` and ``@font-face`` rules say (read with its sheets;
        given to the other passes)."""
        self.root = root
        self._light_only = light
        self._prefers_dark = prefers_dark
        self._meta_dark = not light and _meta_scheme_dark(root, prefers_dark)
        self._light: Visibility | None = None
        self._states: dict[etree._Element, _State] = {}
        self._ids: dict[str, etree._Element] | None = None  # the page's ids (:meth:`_svg_reference`), read once
        # Declarative shadow roots: the hosts whose own text no slot shows, the children no slot shows.
        self._host_text_unslotted, self._unslotted = _shadow_unslotted(root)
        self._reasons: dict[int, str | None] = {}  # by id of a state (each kept alive in _states)
        self._expanded: dict[int, tuple[_Declaration, list]] = {}  # by id of a declaration: its longhands
        # The rules matching each element: (specificity, order, declarations); one XPath run per selector.
        self._matched: dict[etree._Element, list[tuple[tuple, int, list[_Declaration]]]] = {}
        self._scopes: dict[_Scope, tuple] = {}  # by @scope: its roots, its limits, the memo of proximities
        self._index: tuple | None = None  # the page's elements, by class, id and tag (:meth:`_matching`)
        self._column_cells: dict[etree._Element, dict[etree._Element, str]] = {}  # by table: cells not drawn
        self._grid_budget = [MAX_GRID_STEPS]  # what placing cells may still cost on this page (:func:`_collapsed_cells`)
        # A link's colour: the browser's own (:link { color: #0000EE }, not inherited), or the <body link> hint.
        body = next(root.iter("body"), None)
        hint = _legacy_color(body.get("link")) if body is not None else None
        self._link_token = _ColorToken(hint or LINK_COLOR)  # (LinkText: the dark scheme's when the browser's own)
        self._ua_link = hint is None
        self._link_color = ((False, 1 if hint else 0, (0, 0, 0), 0), [self._link_token])
        self._mark = {"background-color": ((False, 0, (0, 0, 0), 0), [_ColorToken(MARK_BACKGROUND)]),
                      "color": ((False, 0, (0, 0, 0), 0), [_ColorToken(_BLACK)])}
        self._field = {"background-color": ((False, 0, (0, 0, 0), 0), [_ident("field")]),
                       "color": ((False, 0, (0, 0, 0), 0), [_ident("fieldtext")])}
        self._button = {"background-color": ((False, 0, (0, 0, 0), 0), [_ident("buttonface")]),
                        "color": ((False, 0, (0, 0, 0), 0), [_ident("buttontext")])}
        self._second: Visibility | None = None
        self._dark: Visibility | None = None
        if screen_rules is None:
            for element in root.iter("*"):
                style = element.get("style")
                if style and len(style) > MAX_CSS_BRACKETS:
                    _brackets_checked(style, element.sourceline, "a style attribute")
            sheets = _style_sheets(root)
            rules = sheets.rules
            at_rules = sheets.at_rules
            if sheets.screen_differs:
                self._second = Visibility(root, screen_rules=sheets.screen_rules, either_scheme=either_scheme,
                                          light=light, at_rules=at_rules)
            if not light and (sheets.schemes or _names_a_scheme(root)):
                # The dark pass (2026-12-04): the rules as a desktop screen of a reader who prefers dark applies them.
                dark = _style_sheets(root, dark=True)
                self._dark = Visibility(root, screen_rules=dark.screen_rules, either_scheme=either_scheme,
                                        prefers_dark=True, at_rules=dark.at_rules)
        else:
            rules = screen_rules
        at_rules = at_rules or _AtRules()
        registered = at_rules.properties if screen_rules is None else at_rules.screen_properties
        self._registered = {name: initial for name, (_, initial) in registered.items() if initial is not None}
        self._not_inherited = {name: initial for name, (inherits, initial) in registered.items() if not inherits}
        self._faces = at_rules.faces
        self._keyframes = at_rules.keyframes
        self._keyframes_line = at_rules.keyframes_line
        self._animated_states: dict[tuple, tuple] = {}  # an animated element's state, memoised as in _compute
        self._frame_count = 0  # keyframe states computed (:data:`MAX_ANIMATED_FRAMES`)
        if rules:
            for order, (matcher, specificity, declarations, needs) in enumerate(rules):
                found = self._matching(matcher, needs)
                scope = specificity[2] if isinstance(specificity[2], _Scope) else None
                for element in found:
                    key = specificity
                    if scope is not None:  # its proximity for this element; out of the scope: not applied
                        distance = self._proximity(scope, element)
                        if distance is None:
                            continue
                        key = (specificity[0], specificity[1], -distance)
                    self._matched.setdefault(element, []).append((key, order, declarations))
        self._compute()
        if either_scheme and self.page_dark:  # the light reading too (its own second pass included)
            self._light = Visibility(root, screen_rules=screen_rules, light=True, at_rules=at_rules)

    def _svg_reference(self, tokens: list, kind: str) -> etree._Element | None:
        """The page's element of tag ``kind`` (``clippath``, ``mask``, ``filter``) that a value made of one
        ``url(#id)`` names (the first element of that id, as ``getElementById``), else None: an id of the page's
        own SVG. A reference to nothing or to another kind of element is ignored by the browser (drawn)."""
        tokens = [t for t in tokens if t.type not in ("whitespace", "comment")]
        if len(tokens) != 1:
            return None
        token = tokens[0]
        if token.type == "url":
            target = token.value
        elif token.type == "function" and token.lower_name == "url":
            strings = [t.value for t in token.arguments if t.type == "string"]
            target = strings[0] if len(strings) == 1 else ""
        else:
            return None
        if not target.startswith("#"):
            return None  # a sheet elsewhere: not fetched, not evaluated
        if self._ids is None:
            self._ids = {}
            for element in self.root.iter("*"):
                name = element.get("id")
                if name:
                    self._ids.setdefault(name, element)
        element = self._ids.get(target[1:].strip())
        return element if element is not None and element.tag == kind else None

    def _svg_masked(self, tokens: list) -> bool:
        """Whether every layer of a ``mask``/``mask-image`` value is a ``url()`` of this page alone -- ``url(#id)`` or
        an empty ``url()`` (found attacking hidden text, twenty-fifth session). Naming the page's SVG ``<mask>`` (a
        mask of a black rectangle, an empty one, a white one sized by a zero-sized ``<svg>``'s viewport: chromium
        draws none of the text), it is removed fail closed: this reader does not lay out the mask's geometry. Naming
        nothing, or an element that is no mask, it is an image that can never load, and a mask image that does not
        load shows nothing of the element (chromium 156). A mask image elsewhere (a file, a ``data:`` image) is judged
        visible, as before: it may load."""
        def local(layer: list) -> bool:
            images = [t for t in layer if t.type == "url" or (t.type == "function" and t.lower_name == "url")]
            if len(images) != 1:
                return False
            token = images[0]
            if token.type == "url":
                target = token.value
            else:
                strings = [t.value for t in token.arguments if t.type == "string"]
                target = strings[0] if len(strings) == 1 else ("" if not strings else None)
            return target is not None and (not target.strip() or target.strip().startswith("#"))

        return bool(tokens) and all(local(layer) for layer in _layers(tokens))

    def _proximity(self, scope: _Scope, element: etree._Element) -> float | None:
        """How many generations ``element`` is below the nearest root of ``scope`` (0: a root itself), None when it
        is in none of its roots' scopes (no root above it, or a limit on the way: a limit element is out too).
        Memoised along the way up, so each element is walked once for each scope. A root selector this reader does
        not understand puts every element at 0 (fail closed: the rule applies)."""
        entry = self._scopes.get(scope)
        if entry is None:
            entry = self._scopes[scope] = (self._selected(scope.root),
                                           self._selected(scope.limit) if scope.limit else set(), {})
        roots, limits, memo = entry
        if roots is None:
            return 0.0
        path = []
        node = element
        distance = math.inf
        while node is not None:
            if node in memo:
                distance = memo[node]
                break
            if node in roots:
                distance = 0.0
                break
            if limits and node in limits:
                break
            path.append(node)
            node = node.getparent()
        if node is not None:
            memo[node] = distance
        for steps, passed in enumerate(reversed(path), 1):
            memo[passed] = distance + steps
        found = memo[element]
        return None if math.isinf(found) else found

    def _selected(self, selector: str) -> set | None:
        """The elements a selector matches (None: not understood)."""
        compiled = _compile(selector)
        if compiled is None:
            return None
        found: set[etree._Element] = set()
        for _, _, matcher, needs in compiled:
            found.update(self._matching(matcher, needs))
        return found

    def _matching(self, matcher, needs: tuple) -> list[etree._Element]:
        """The elements a compiled selector matches: a chain right to left from the elements that have what its
        subject needs (its classes, id, tag: from an index of the page, made once), as browsers do; an XPath run."""
        if self._index is None:
            every: list[etree._Element] = []
            by_class: dict[str, list[etree._Element]] = {}
            by_id: dict[str, list[etree._Element]] = {}
            by_tag: dict[str, list[etree._Element]] = {}
            for element in self.root.iter(etree.Element):
                every.append(element)
                by_tag.setdefault(element.tag, []).append(element)
                for name in (element.get("class") or "").split():
                    by_class.setdefault(name, []).append(element)
                if element.get("id"):
                    by_id.setdefault(element.get("id"), []).append(element)
            self._index = (every, by_class, by_id, by_tag)
        every, by_class, by_id, by_tag = self._index
        need_classes, need_id, need_tag = needs
        pools = [by_class.get(name, []) for name in need_classes]
        if need_id:
            pools.append(by_id.get(need_id, []))
        if need_tag:
            pools.append(by_tag.get(need_tag, []))
        candidates = min(pools, key=len) if pools else every
        if not candidates:
            return []  # its subject is on no element of this page
        if isinstance(matcher, list):
            seen: dict = {}
            return [element for element in candidates if _compound_matches(element, matcher[0][1])
                    and _chain_matches(element, matcher, 1, seen)]
        return [element for element in matcher(self.root) if isinstance(element, etree._Element)]

    # -- queries --------------------------------------------------------------------------------------

    def text_hidden(self, element: etree._Element) -> str | None:
        """Why text directly inside ``element`` is not shown, or None when it is (in either pass)."""
        reason = self._text_hidden(element)
        if reason is None and self._second is not None:
            reason = self._second._text_hidden(element)
        if reason is None and self._light is not None:
            reason = self._light.text_hidden(element)
        if reason is None and self._dark is not None:
            reason = self._dark.text_hidden(element)
        return reason

    def _text_hidden(self, element: etree._Element) -> str | None:
        if element in self._host_text_unslotted and not self.subtree_hidden(element):
            return UNSLOTTED
        state = self._states.get(element)
        if state is None:
            return None if element is not None and not isinstance(element.tag, str) else "outside the page"
        key = id(state)
        if key not in self._reasons:
            self._reasons[key] = _reason(state)
        return self._reasons[key]

    @property
    def hides_anything(self) -> bool:
        """Whether any element's text is hidden (most pages: none, and then nothing needs checking)."""
        if self._host_text_unslotted or self._unslotted:
            return True
        distinct = {id(state): state for state in self._states.values()}
        return any(self._reasons.setdefault(key, _reason(state)) is not None for key, state in distinct.items()) \
            or (self._second is not None and self._second.hides_anything) \
            or (self._light is not None and self._light.hides_anything) \
            or (self._dark is not None and self._dark.hides_anything)

    def subtree_hidden(self, element: etree._Element) -> str | None:
        """Why nothing inside ``element`` is shown (display: none and the like), or None (in either pass)."""
        state = self._states.get(element)
        if state is not None and state.gone:
            return state.gone
        if self._second is not None and (reason := self._second.subtree_hidden(element)):
            return reason
        if self._light is not None and (reason := self._light.subtree_hidden(element)):
            return reason
        if self._dark is not None:
            return self._dark.subtree_hidden(element)
        return None

    # -- the cascade ----------------------------------------------------------------------------------

    def _page_dark(self) -> bool:
        """Whether the page's colour scheme is dark (checked in chromium 156, docs/security.md): the root's
        ``color-scheme`` when it names ``light`` or ``dark`` (``var()`` resolved), else -- no value, ``normal`` --
        the first ``<meta name="color-scheme">``. A list naming ``light`` is light (the reader prefers light;
        ``light dark`` follows the reader's preference, not evaluated); one naming ``dark`` alone is dark. Only
        the root's: ``color-scheme`` on the body or below leaves the canvas as it is."""
        if self._light_only:
            return False
        values = self._cascade(self.root)
        value = values.get("color-scheme")
        if value is not None and _has_var(value):
            custom = {name: v for name, v in values.items() if name.startswith("--")} or None
            value = _substitute(value, custom, element=self.root)
        scheme = _scheme_dark(_tokens(value), self._prefers_dark) if value else None
        return self._meta_dark if scheme is None else scheme

    def _compute(self) -> None:
        self.page_dark = self._page_dark()
        # A dark page: the canvas #121212, its default text white (CanvasText).
        initial = _State(color=_WHITE, backdrop=(DARK_CANVAS,), dark=True) if self.page_dark else _State()
        if self._registered:  # registered custom properties (@property) start at their initial values
            initial = replace(initial, custom=dict(self._registered))
        states = self._states
        memo: dict[tuple, tuple[_State, tuple]] = {}
        clamped: set[etree._Element] = set()  # elements that start past a line clamp's last line
        chosen = _chosen_options(self.root)
        for element in self.root.iter(etree.Element):
            parent = element.getparent()
            inherited = states.get(parent, initial) if parent is not None else initial
            if element in chosen:  # drawn in its closed select's box, as the select's own text
                states[element] = states.get(chosen[element], initial)
                continue
            if inherited.gone:
                states[element] = inherited  # nothing below display: none (or the like) is shown
                continue
            if element in clamped:
                states[element] = replace(inherited, gone="past the last line of a line clamp")
                continue
            if element in self._unslotted:
                states[element] = replace(inherited, gone=UNSLOTTED)
                continue
            if element.tag in ("td", "th") and (reason := self._collapsed_column(element)):
                states[element] = replace(inherited, gone=reason)
                continue
            values = self._cascade(element)
            if values and (lines := _line_clamp(values)):
                clamped.update(self._past_lines(element, lines))
            aria = element.get("aria-hidden")
            if not values and not _SPECIAL.get(element.tag) and aria is None:
                states[element] = inherited  # the common case: it changes nothing
                continue
            # The same inherited state, element kind and winning declarations (shared objects: a rule's,
            # or a repeated style attribute's) give the same state: computed once.
            key = (id(inherited), element.tag, aria, tuple((name, id(value)) for name, value in values.items()),
                   id(element) if any(_has_attr(value) for value in values.values()) else None)  # attr(): its own
            entry = memo.get(key)
            if entry is None:
                # The values are kept with the state: while they live, no other object takes their ids.
                entry = memo[key] = (self._state(element, inherited, values), tuple(values.values()))
            states[element] = entry[0]
            if self._keyframes and "animation-name" in values:
                states[element] = self._animated(element, inherited, values, entry[0])

    # -- animations ---------------------------------------------------------------------------------------------

    def _animated(self, element: etree._Element, inherited: _State, values: dict[str, list], state: _State) -> _State:
        """An animated element's state: the first keyframe it can rest in (:func:`_rest_offsets`) that hides its text
        or everything in it -- that keyframe's declarations over the element's own, but not over an ``!important``
        one, as a browser cascades an animation -- else its own ``state`` (a keyframe never un-hides). Each state
        a keyframe makes counts against :data:`MAX_ANIMATED_FRAMES`."""
        if _reason(state) is not None:
            return state
        key = (id(inherited), element.tag, element.get("aria-hidden"),
               tuple((name, id(value)) for name, value in values.items()),
               id(element) if any(_has_attr(value) for value in values.values()) else None)
        entry = self._animated_states.get(key)  # (the same element kind, inherited state and values: the same)
        if entry is None:
            entry = self._animated_states[key] = (self._framed(element, inherited, values, state),
                                                  tuple(values.values()))
        return entry[0]

    def _framed(self, element: etree._Element, inherited: _State, values: dict[str, list], state: _State) -> _State:
        frames = self._frames(element, inherited, values)
        if not frames:
            return state
        important: set[str] = set()
        self._cascade(element, important)
        for declarations in frames:
            self._frame_count += 1
            if self._frame_count > MAX_ANIMATED_FRAMES:
                raise ParseError(f"a page's animations make more than {MAX_ANIMATED_FRAMES:,} keyframe states to "
                                 "judge", line=self._keyframes_line)
            framed = dict(values)
            for declaration in declarations:
                cached = self._expanded.get(id(declaration))
                if cached is None:
                    cached = self._expanded[id(declaration)] = (declaration, _expand(declaration))
                for name, value in cached[1]:
                    if name not in important:
                        framed[name] = value
            framed_state = self._state(element, inherited, framed)
            if _reason(framed_state) is not None:
                return framed_state
        return state

    def _frames(self, element: etree._Element, inherited: _State, values: dict[str, list]) -> list[list]:
        """The declarations of each keyframe the element's animations can rest in (``var()`` in their values
        resolved as in any declaration)."""
        custom = inherited.custom
        if any(name.startswith("--") for name in values):
            custom = {**(custom or {}), **{name: value for name, value in values.items() if name.startswith("--")}}

        def resolved(name: str) -> list | None:
            value = values.get(name)
            if value is None or value is _FROM_SHORTHAND or not _has_var(value):
                return value
            return _substitute(value, custom, element=element)

        frames: list[list] = []
        for animation in _animations({name: resolved(name) for name in ("animation", *_ANIMATION_LONGHANDS)},
                                     self._keyframes):
            rest = _rest_offsets(animation)
            if rest is not None and not rest:
                continue
            for name in animation.names:
                keyframes = self._keyframes.get(name, {})
                for offset, declarations in keyframes.items():
                    if declarations and (rest is None or offset is None or offset in rest):
                        frames.append(declarations)
        return frames

    def _collapsed_column(self, cell: etree._Element) -> str | None:
        """Why table cell ``cell`` is not drawn because every column it spans is collapsed, or None."""
        row = cell.getparent()
        table = row.getparent() if row is not None else None
        if table is not None and table.tag in ("thead", "tbody", "tfoot"):
            table = table.getparent()
        if row is None or row.tag != "tr" or table is None or table.tag != "table":
            return None
        if table not in self._column_cells:
            self._column_cells[table] = _collapsed_cells(table, self._column_visibility, self._grid_budget)
        return self._column_cells[table].get(cell)

    def _column_visibility(self, element: etree._Element) -> str | None:
        """The ``visibility`` keyword a ``<col>``/``<colgroup>`` sets itself (None: inherited), a ``var()`` (and
        ``env()``, ``attr()``) in it replaced as in any declaration: by the custom properties the element inherits
        and sets (found attacking hidden text, 2026-12-03: ``visibility: var(--v)`` on a ``<col>`` was no keyword
        here, so its cells' text reached the model); one that resolves to nothing leaves it unset."""
        values = self._cascade(element)
        value = values.get("visibility", [])
        if _has_var(value):
            parent = element.getparent()
            inherited = self._states.get(parent) if parent is not None else None
            custom = {**((inherited.custom if inherited is not None else None) or {}),
                      **{name: v for name, v in values.items() if name.startswith("--")}}
            value = _substitute(value, custom, element=element) or []
        return _keyword(_tokens(value))

    def _display(self, element: etree._Element) -> str:
        """An element's ``display`` keyword (its tag's default when no rule sets one this reader reads)."""
        keyword = _keyword(_tokens(self._cascade(element).get("display", [])))
        if keyword in (None, "inherit", "initial", "unset", "revert"):
            return "block" if element.tag in _BLOCK_TAGS else "inline"
        return keyword

    def _past_lines(self, container: etree._Element, lines: int) -> list[etree._Element]:
        """The elements inside a line-clamped ``container`` that start on line ``lines + 1`` or later, counted
        from forced breaks only (``<br>``, the edges of block-level boxes): wrapping only adds lines, so these
        are past the clamp at any width. Text of the container itself after a break is not judged (kept)."""
        past: list[etree._Element] = []
        line, content = 0, bool((container.text or "").strip())

        def visit(element: etree._Element) -> None:
            nonlocal line, content
            if not isinstance(element.tag, str):  # a comment
                content = content or bool((element.tail or "").strip())
                return
            display = self._display(element)
            if display == "none" or _out_of_flow(self._cascade(element)):
                pass  # draws no line here (a float or a positioned box is not counted: fewer lines, never more)
            elif element.tag == "br":
                line, content = line + 1, False
            elif display in _INLINE_DISPLAYS:
                if line >= lines:
                    past.append(element)
                elif display == "inline":
                    content = content or bool((element.text or "").strip())
                    for child in element:
                        visit(child)
                else:
                    content = True  # an inline block: one box on the line, its own lines not counted
            else:  # block-level: it ends the line before it and its own last line
                if content:
                    line, content = line + 1, False
                if line >= lines:
                    past.append(element)
                else:
                    content = bool((element.text or "").strip())
                    for child in element:
                        visit(child)
                    if content:
                        line, content = line + 1, False
            content = content or bool((element.tail or "").strip())

        for child in container:
            visit(child)
        return past

    def _cascade(self, element: etree._Element, important: set[str] | None = None) -> dict[str, list]:
        """The winning value of each property for ``element``: (important, origin, specificity, order).
        ``important``: the names whose winner is ``!important`` are added to it (an animation does not override
        them)."""
        winners: dict[str, tuple[tuple, list]] = {}

        expanded = self._expanded

        def offer(declaration: _Declaration, origin: int, specificity: tuple, order: int) -> None:
            priority = (declaration.important, origin, specificity, order)
            entry = expanded.get(id(declaration))
            if entry is None:  # the declaration kept with its longhands: its id stays its own
                entry = expanded[id(declaration)] = (declaration, _expand(declaration))
            for name, value in entry[1]:
                if name not in winners or priority >= winners[name][0]:
                    winners[name] = (priority, value)

        tag = element.tag
        matched = self._matched.get(element)
        link = tag in _LINKS and element.get("href") is not None
        if not (matched or element.get("style") or element.get("hidden") is not None
                or element.get("bgcolor") or _SPECIAL.get(tag) or link):
            return winners  # nothing to cascade
        # An option with a label shows the label instead of its text (checked in chromium 156, 2026-12-04: closed and
        # open): its text is drawn nowhere.
        labelled = tag == "option" and bool(element.get("label"))  # even blank: then nothing shows
        if (element.get("hidden") is not None or (tag == "dialog" and element.get("open") is None) or tag in UA_HIDDEN
                or labelled):
            offer(_Declaration("display", [_ident("none")], False), 0, (0, 0, 0), 0)
        hint_color = _legacy_color(element.get("color")) if tag == "font" else None
        if tag == "body" and element.get("text"):
            hint_color = _legacy_color(element.get("text"))
        if hint_color is not None:
            winners["color"] = ((False, 1, (0, 0, 0), 0), [_ColorToken(hint_color)])
        if link:  # one token for every link: their states are memoised together
            winners["color"] = self._link_color
        if tag == "mark":  # the user-agent sheet: yellow behind black text, under any author rule
            winners.update(self._mark)
        elif tag in ("input", "textarea", "select", "button"):  # the control's own box, under any author rule
            button = tag == "button" or (tag == "input" and (element.get("type") or "").strip().lower() in _BUTTON_INPUTS)
            winners.update(self._button if button else self._field)
        background = _legacy_color(element.get("bgcolor"))
        if background is not None:
            winners["background-color"] = ((False, 1, (0, 0, 0), 0), [_ColorToken(background)])
        for specificity, order, declarations in matched or ():
            for declaration in declarations:
                offer(declaration, 2, specificity, order)
        style = element.get("style")
        if style:
            for declaration in _style_attribute(style):
                offer(declaration, 3, (1, 0, 0), 0)
        if important is not None:
            important.update(name for name, (priority, _) in winners.items() if priority[0] is True)
        return {name: value for name, (_, value) in winners.items()}

    def _state(self, element: etree._Element, parent: _State, values: dict[str, list]) -> _State:
        state = parent
        font_px = parent.font_px
        gone = parent.gone
        if element.tag == "template":
            gone = gone or "a template"
        if (element.get("aria-hidden") or "").strip().lower() == "true":
            gone = gone or "aria-hidden"
        custom = parent.custom
        if self._not_inherited:  # a registered property that does not inherit starts at its initial value
            custom = {**(custom or {}), **self._not_inherited}
        if any(name.startswith("--") for name in values):
            custom = {**(custom or {}), **{name: value for name, value in values.items() if name.startswith("--")}}
        tokens = {}
        for name, value in values.items():
            if name.startswith("--"):
                continue
            substituted = _substitute(value, custom, element=element) if _has_var(value) else value
            if substituted is not None:  # a var() that resolves to nothing: the property is unset
                tokens[name] = _tokens(substituted)
        dark = parent.dark
        if "color-scheme" in tokens and not self._light_only:
            scheme = _scheme_dark(tokens["color-scheme"], self._prefers_dark)
            if scheme is not None:
                dark = scheme
            elif _keyword(tokens["color-scheme"]) == "normal":
                dark = self._meta_dark
        if dark:  # system colours and light-dark() as a dark scheme paints them
            for name in _SCHEMED.intersection(tokens):
                tokens[name] = _in_dark(tokens[name], self._link_token if self._ua_link else None)
        display = _keyword(tokens.get("display", []))
        if display == "none":
            gone = gone or "display: none"
        if _keyword(tokens.get("content-visibility", [])) == "hidden":
            gone = gone or "content-visibility: hidden"
        visibility = _keyword(tokens.get("visibility", []))
        invisible = parent.invisible if visibility is None or visibility in ("inherit", "unset") else (
            visibility in ("hidden", "collapse"))
        security = _keyword(tokens.get("-webkit-text-security", []))
        masked = parent.masked if security is None or security in ("inherit", "unset") else security in TEXT_SECURITY
        if "font-size" in tokens:
            size = _font_size(tokens["font-size"], parent.font_px)
            font_px = size if size is not None else font_px
        elif "font" in tokens:
            size = _font_shorthand_size(tokens["font"], parent.font_px)
            font_px = size if size is not None else font_px
        adjust = parent.adjust
        if "font-size-adjust" in tokens:
            adjust = _font_size_adjust(tokens["font-size-adjust"], parent.adjust)
        face = parent.face
        if self._faces and ("font-family" in tokens or "font" in tokens):
            face = _face_scale(tokens.get("font-family") or _shorthand_families(tokens["font"]), self._faces,
                               parent.face)
        scale = parent.scale
        if "zoom" in tokens and len(tokens["zoom"]) == 1:
            factor = _number(tokens["zoom"][0])
            scale *= factor if factor is not None and factor >= 0 else 1.0
        far = False
        if "transform" in tokens:
            factor, far = _transform(tokens["transform"], font_px)
            scale *= factor
        if "scale" in tokens:
            factors = [_number(t) for t in tokens["scale"]]
            if factors and all(f is not None for f in factors):
                scale *= min(abs(f) for f in factors[:2])  # type: ignore[type-var]
        if "rotate" in tokens:
            scale *= _rotate_property(tokens["rotate"])
        opacity = parent.opacity
        if "opacity" in tokens and len(tokens["opacity"]) == 1:
            value = _number(tokens["opacity"][0])
            opacity *= min(max(value, 0.0), 1.0) if value is not None else 1.0
        if opacity < MIN_OPACITY:
            gone = gone or "opacity"
        position = _keyword(tokens.get("position", []))
        positioned = position in ("absolute", "fixed", "relative", "sticky")
        offsets = ("left", "right", "top", "bottom", "inset") if positioned else ()
        if far or any(_offset_far(tokens.get(name, []), font_px)
                      for name in (*offsets, "margin-left", "margin-top", "text-indent", "translate")):
            gone = gone or "positioned off screen"
        if any(_pushes_far(tokens.get(name, []), font_px) for name in _PUSHING) \
                or _line_off_screen(tokens, font_px):
            gone = gone or "pushed off screen (a padding, border, line height or vertical-align)"
        if any(_clip_gone(name, tokens.get(name, []), font_px) for name in ("clip", "clip-path")):
            gone = gone or "clipped"
        if any(_mask_gone(tokens.get(name, [])) for name in _MASK_PROPERTIES):
            gone = gone or "masked"
        if _mask_of_no_size(tokens, font_px):
            gone = gone or "masked (a mask of no size)"
        if self._svg_reference(tokens.get("clip-path", []), "clippath") is not None:
            gone = gone or "clipped (by an SVG clip path)"
        if any(self._svg_masked(tokens.get(name, [])) for name in _MASK_PROPERTIES):
            gone = gone or "masked (by an SVG mask)"
        if any(_svg_filter_hides(self._svg_reference([token], "filter"), font_px)
               for token in tokens.get("filter", [])):
            gone = gone or "filtered (by an SVG filter)"
        overflow = {_keyword(tokens.get(name, [])) for name in ("overflow", "overflow-x", "overflow-y")}
        # Paint containment clips what overflows the box, as overflow: hidden does.
        contained = any(t.type == "ident" and t.lower_value in ("paint", "strict", "content")
                        for t in tokens.get("contain", []))
        if overflow & {"hidden", "clip"} or contained:
            sizes = {}
            for name in _BOX_PROPERTIES:
                value = tokens.get(name, [])
                size = _length_px(value[0], font_px) if len(value) == 1 else None
                if size is not None:
                    sizes[name] = size
            width = min((sizes[n] for n in ("width", "max-width") if n in sizes), default=None)
            height = min((sizes[n] for n in ("height", "max-height") if n in sizes), default=None)
            if _too_small(width, height):
                gone = gone or "a box too small to show it"
            elif _size_contained_empty(tokens, font_px, block=element.tag in _BLOCK_TAGS):
                gone = gone or "a size-contained box too small to show it"
        spacing = tokens.get("letter-spacing", [])
        if len(spacing) == 1 and (gap := _length_px(spacing[0], font_px, basis=font_px)) is not None \
                and gap <= -OVERLAID_LETTERS * font_px:
            gone = gone or "letters drawn over one another"
        if len(spacing) == 1 and (gap := _length_px(spacing[0], font_px, basis=font_px)) is not None \
                and gap >= OFF_SCREEN_PX:
            gone = gone or "letters spaced off the screen"
        spacing = tokens.get("word-spacing", [])
        if len(spacing) == 1 and (gap := _length_px(spacing[0], font_px, basis=font_px)) is not None \
                and gap <= -OVERLAID_WORDS * font_px:
            gone = gone or "words drawn over one another"
        if len(spacing) == 1 and (gap := _length_px(spacing[0], font_px, basis=font_px)) is not None \
                and gap >= OFF_SCREEN_PX:
            gone = gone or "words spaced off the screen"
        backface = tokens.get("backface-visibility") or tokens.get("-webkit-backface-visibility") or []
        if _keyword(backface) == "hidden" and _faces_away(tokens):
            gone = gone or "a face turned away (backface-visibility: hidden)"
        filters = parent.filters
        own_filters: tuple = ()
        if "filter" in tokens:
            own_filters, blurred, filter_opacity = _filters(tokens["filter"], font_px)
            if blurred:
                gone = gone or "blurred"
            if filter_opacity < 1:
                opacity *= filter_opacity
                if opacity < MIN_OPACITY:
                    gone = gone or "opacity"
        color = parent.color
        own_color = False
        for name in ("color", "-webkit-text-fill-color"):
            value = tokens.get(name)
            if not value:
                continue
            parsed = _color(value[0]) if len(value) == 1 else None
            if parsed == "currentcolor":
                continue
            color = parsed if isinstance(parsed, tuple) else (None if _keyword(value) not in ("inherit", "unset")
                                                              else color)
            own_color = isinstance(parsed, tuple)
        if color is not None:
            if own_color:  # painted inside every filtered ancestor
                color = _filtered(color, filters + own_filters)
            elif own_filters:  # inherited: already through the ancestors' filters, now this one's too
                color = _filtered(color, own_filters)
        filters = filters + own_filters
        backdrop = parent.backdrop
        blend, group_backdrop, painted = parent.blend, parent.group_backdrop, parent.painted
        mode = _keyword(tokens.get("mix-blend-mode") or [])
        if mode in BLEND_MODES and painted:  # a new group, blended with the backgrounds behind this element
            blend, group_backdrop = (mode, backdrop), None
        # (Over the bare canvas -- no background anywhere above -- a browser blends with nothing: the text
        # shows in its own colour, as the rule without blending judges it. Checked in chromium.)
        image = tokens.get("background-image")
        if image and _keyword(image) != "none":
            colors = _colors_in(image)
            has_url = any(t.type == "url" or (t.type == "function" and t.lower_name == "url") for t in image)
            backdrop = None if has_url or not colors else tuple(
                _over(c, backdrop[0]) if backdrop else c for c in colors)
            painted = True
            if blend is not None:  # inside a blended group: an image is unknown, a gradient its first colour
                blend = (blend[0], None) if backdrop is None else blend
                group_backdrop = _over_any(colors[0], group_backdrop) if colors else group_backdrop
        elif "background-color" in tokens:
            value = tokens["background-color"]
            parsed = _color(value[0]) if len(value) == 1 else None
            if parsed == "currentcolor":
                parsed = color
            if isinstance(parsed, tuple):
                if parsed[3] > 0:
                    parsed = _filtered(parsed, filters)  # a background painted inside filtered elements
                    backdrop = tuple(_over(parsed, behind) for behind in backdrop) if backdrop else None
                    painted = True
                    if blend is not None:
                        group_backdrop = _over_any(parsed, group_backdrop)
            elif _keyword(value) not in ("inherit", "unset", "initial"):
                backdrop = None  # a colour this reader cannot compare
        shadowed, stroked, stroke_px = parent.shadowed, parent.stroked, parent.stroke_px
        if "text-shadow" in tokens:
            shadowed = any(self._outline(shadow, backdrop) for shadow in _layers(tokens["text-shadow"])
                           if not _offset_far(_lengths(shadow)[:2], font_px))  # one drawn off the screen shows nothing
        # A stroke draws only at a width above 0: the shorthand without one sets it to 0, as its initial value is
        # (checked in chromium: -webkit-text-stroke: black, or the colour alone, draws nothing).
        shorthand = tokens.get("-webkit-text-stroke")
        for value in (shorthand, tokens.get("-webkit-text-stroke-width")):
            if value is not None and _keyword(value) not in ("inherit", "unset"):
                stroke_px = _stroke_width(value, font_px)
        stroke = shorthand or tokens.get("-webkit-text-stroke-color")
        if stroke:
            stroked = self._outline(stroke, backdrop)
        outlined = shadowed or (stroked and stroke_px > 0)
        return replace(state, gone=gone, invisible=invisible, masked=masked, font_px=font_px, scale=scale,
                       adjust=adjust, face=face, color=color,
                       backdrop=backdrop, outlined=outlined, shadowed=shadowed, stroked=stroked, stroke_px=stroke_px,
                       opacity=opacity, custom=custom, filters=filters, blend=blend, group_backdrop=group_backdrop,
                       painted=painted, dark=dark)

    @staticmethod
    def _outline(tokens: list, backdrop: tuple[Color, ...] | None) -> bool:
        if _keyword(tokens) == "none":
            return False
        colors = _colors_in(tokens)
        if backdrop is None:
            return bool(colors)
        return any(not _blends_in(color, backdrop) for color in colors)


# A table's grid, as the HTML standard's table model forms it, only to find the cells of collapsed columns:
# spans clamped as browsers clamp them, and the placing bounded on a page (hostile tables of huge spans): past
# MAX_GRID_STEPS the cells left are taken as not drawn (fail closed; only tables with a collapsed column).
MAX_COLSPAN, MAX_ROWSPAN, MAX_GRID_STEPS = 1000, 65534, 200_000
def _chosen_options(root: etree._Element) -> dict[etree._Element, etree._Element]:
    """The option each closed select shows, and the select (checked in chromium 156, fourteenth session): a select
    without ``multiple`` and of ``size`` 1 or none draws its chosen option's text in its own box, in its own colours
    and font, whatever the option's or its group's styles say -- ``hidden``, ``display: none``, white, ``font-size:
    0``, ``opacity: 0`` on the option were all drawn (cut before: visible text lost). The chosen option is the last
    with ``selected``, else the first not disabled (a hidden one too). One with a ``label`` shows the label instead:
    its text stays hidden. A list box (``multiple``, ``size`` over 1) draws each option as itself."""
    chosen = {}
    for select in root.iter("select"):
        size = (select.get("size") or "").strip()
        if select.get("multiple") is not None or (size.isdigit() and int(size) > 1):
            continue
        options = list(select.iter("option"))
        picked = next((option for option in reversed(options) if option.get("selected") is not None), None)
        if picked is None:
            picked = next((option for option in options if option.get("disabled") is None and not any(
                group.tag == "optgroup" and group.get("disabled") is not None
                for group in option.iterancestors("optgroup"))), None)
        if picked is not None and not picked.get("label"):
            chosen[picked] = select
    return chosen


COLLAPSED_COLUMN = "a collapsed table column (visibility: collapse on its <col>)"
_TOO_LARGE = "a table too large to place against its collapsed columns"


def _span(element: etree._Element, name: str, high: int, zero: int | None = None) -> int:
    try:
        value = int((element.get(name) or "1").strip())
    except ValueError:
        return 1
    if value == 0 and zero is not None:
        return zero
    return min(max(value, 1), high)


def _collapsed_cells(table: etree._Element, visibility, budget: list[int]) -> dict[etree._Element, str]:
    """The cells of ``table`` whose every column is collapsed (``visibility: collapse`` on its ``<col>``, or on its
    ``<colgroup>`` unless the ``<col>`` sets another; chromium draws none of them -- found attacking hidden text,
    2026-12-03), each with why. ``visibility``: an element's own ``visibility`` keyword. Rows of each row group
    placed as the HTML table model places them (``colspan``, ``rowspan``, ``rowspan=0`` to the group's end);
    ``budget``: the page's steps left (one element list, spent here)."""
    collapsed: set[int] = set()
    column = 0
    for group in table:
        if group.tag == "col":
            groups = [(group, None)]
        elif group.tag == "colgroup":
            cols = [c for c in group if c.tag == "col"]
            groups = [(c, group) for c in cols] if cols else [(None, group)]
        else:
            continue
        for col, colgroup in groups:
            own = visibility(col) if col is not None else None
            if own in (None, "inherit", "unset") and colgroup is not None:
                own = visibility(colgroup)
            width = _span(col if col is not None else colgroup, "span", MAX_COLSPAN)
            if own == "collapse":
                collapsed.update(range(column, column + width))
            column += width
    if not collapsed:
        return {}
    bodies: list[list[etree._Element]] = []
    loose: list[etree._Element] = []
    for child in table:
        if child.tag == "tr":
            loose.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            if loose:
                bodies.append(loose)
                loose = []
            bodies.append([row for row in child if row.tag == "tr"])
    if loose:
        bodies.append(loose)
    hidden: dict[etree._Element, str] = {}
    steps = MAX_GRID_STEPS - budget[0]
    for rows in bodies:
        occupied: dict[int, int] = {}  # column -> the last row of the group a rowspan above holds it through
        for number, row in enumerate(rows):
            column = 0
            for cell in row:
                if cell.tag not in ("td", "th"):
                    continue
                steps += 1
                while occupied.get(column, -1) >= number and steps <= MAX_GRID_STEPS:
                    column += 1
                    steps += 1
                width = _span(cell, "colspan", MAX_COLSPAN)
                height = _span(cell, "rowspan", MAX_ROWSPAN, zero=len(rows) - number)
                steps += width
                if steps > MAX_GRID_STEPS:
                    hidden[cell] = _TOO_LARGE
                    continue
                if all(c in collapsed for c in range(column, column + width)):
                    hidden[cell] = COLLAPSED_COLUMN
                if height > 1:
                    for c in range(column, column + width):
                        occupied[c] = number + height - 1
                column += width
    budget[0] = max(0, MAX_GRID_STEPS - steps)
    return hidden


def _filters(tokens: list, font_px: float) -> tuple[tuple, bool, float]:
    """A ``filter``'s colour operations (``invert``, ``brightness``, ``contrast``, ``grayscale``), whether
    it blurs text past reading (a radius of half the font size), and its ``opacity()``."""
    operations = []
    blurred = False
    opacity = 1.0
    for token in tokens:
        if token.type != "function":
            continue
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        name = token.lower_name
        if name == "blur":
            radius = _length_px(arguments[0], font_px) if arguments else 0.0
            blurred = blurred or (radius is not None and radius >= font_px / 2)
            continue
        amount = _number(arguments[0]) if arguments else 1.0
        if amount is None:
            continue
        if name == "opacity":
            opacity *= min(max(amount, 0.0), 1.0)
        elif name in ("invert", "brightness", "contrast", "grayscale"):
            operations.append((name, amount))
    return tuple(operations), blurred, opacity


# An SVG filter's result that is the element's own text drawn again (twenty-fifth session): a drop shadow, a merge or
# composite that draws the source graphic last, over whatever came before. Any other last primitive -- a flood, an
# offset, a colour matrix, a lighting, an image -- may paint over the text or move it away (chromium 156: a white
# ``feFlood``, an ``feColorMatrix`` of zeros, an ``feOffset`` of 5,000 px all hide it), and is not evaluated here.
_SOURCE = "sourcegraphic"


def _svg_filter_hides(element: etree._Element | None, font_px: float) -> bool:
    """Whether the page's SVG ``<filter>`` ``element`` (None: none named) may hide the text it filters: its last
    primitive (its result) is not one that draws the text itself -- an
    ``feDropShadow``, an ``feMerge`` whose last node is ``SourceGraphic``, an ``feComposite`` (``over``) or
    ``feBlend`` (``normal``) of ``SourceGraphic`` over something, or a blur under half the font size of it alone.
    A filter of no primitive is drawn as it is (chromium). Fail closed: the rest is judged hiding."""
    if element is None:
        return False
    primitives = [child for child in element if isinstance(child.tag, str) and child.tag.startswith("fe")]
    if not primitives:
        return False
    last = primitives[-1]
    source = (last.get("in") or (_SOURCE if len(primitives) == 1 else "")).strip().lower()
    if last.tag == "fedropshadow":
        return False
    if last.tag == "femerge":
        nodes = [node for node in last if node.tag == "femergenode"]
        return not nodes or (nodes[-1].get("in") or "").strip().lower() != _SOURCE
    if last.tag == "fecomposite":
        return source != _SOURCE or (last.get("operator") or "over").strip().lower() != "over"
    if last.tag == "feblend":
        return source != _SOURCE or (last.get("mode") or "normal").strip().lower() != "normal"
    if last.tag == "fegaussianblur" and len(primitives) == 1 and source == _SOURCE:
        deviations = [_float_or_none(v) for v in (last.get("stddeviation") or "0").replace(",", " ").split()]
        return None in deviations or max(deviations, default=0.0) >= font_px / 2  # type: ignore[type-var]
    return True


def _float_or_none(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _filtered(color: Color, operations: tuple) -> Color:
    red, green, blue, alpha = color
    for name, amount in operations:
        if name == "invert":
            amount = min(max(amount, 0.0), 1.0)
            red, green, blue = (c * (1 - amount) + (1 - c) * amount for c in (red, green, blue))
        elif name == "brightness":
            red, green, blue = (c * amount for c in (red, green, blue))
        elif name == "contrast":
            red, green, blue = ((c - 0.5) * amount + 0.5 for c in (red, green, blue))
        elif name == "grayscale":
            gray = 0.2126 * red + 0.7152 * green + 0.0722 * blue
            amount = min(max(amount, 0.0), 1.0)
            red, green, blue = (c * (1 - amount) + gray * amount for c in (red, green, blue))
        red, green, blue = (min(max(c, 0.0), 1.0) for c in (red, green, blue))
    return (red, green, blue, alpha)


# Functions replaced by a value before a declaration is read: custom properties, environment variables, an
# attribute's value, an anchor's position or size (``_substitute``).
_SUBSTITUTED = frozenset({"var", "env", "attr", "anchor", "anchor-size"})
# The environment variables a browser defines: on a desktop page all zero (no notch, no keyboard, no title bar).
_ENV_ZERO = re.compile(r"(safe-area-(max-)?inset|keyboard-inset|titlebar-area|viewport-segment)-", re.IGNORECASE)


def _has_var(value: list) -> bool:
    return any(token.type == "function" and (token.lower_name in _SUBSTITUTED or _has_var(token.arguments))
               for token in value)


def _has_attr(value: list) -> bool:
    return any(token.type == "function" and (token.lower_name == "attr" or _has_attr(token.arguments))
               for token in value)


def _replacement(function, custom: dict | None, element: etree._Element | None) -> list | None:
    """What ``var()``, ``env()``, ``attr()``, ``anchor()`` or ``anchor-size()`` stands for (tokens), None for
    nothing: a custom property's value, else the fallback; an environment variable a browser defines as 0
    (its value on a desktop page), another one's fallback; the element's attribute read as the type or unit
    named (``attr(data-o type(<number>), 0)``, ``attr(data-w px)``), else the fallback (an attribute without
    a type is a string, no value of the properties read here); an anchor's fallback (whether the anchor
    exists is not evaluated: a fallback that hides counts, fail closed)."""
    arguments = function.arguments
    comma = next((i for i, t in enumerate(arguments) if t.type == "literal" and t.value == ","), None)
    fallback = arguments[comma + 1 :] if comma is not None else None
    head = _tokens(arguments[:comma] if comma is not None else arguments)
    name = head[0].value if head and head[0].type == "ident" else None
    kind = function.lower_name
    if kind == "var":
        found = (custom or {}).get(name) if name else None
        return found if found is not None else fallback
    if kind == "env":
        if name and _ENV_ZERO.match(name):
            return [tinycss2.ast.NumberToken(0, 0, 0, 0, "0")]
        return fallback
    if kind == "attr":
        raw = element.get(name) if element is not None and name else None
        if raw is None or len(head) < 2:
            return fallback
        _brackets_checked(raw, element.sourceline, f"an attribute a style reads ({name})")
        parsed = _tokens(tinycss2.parse_component_value_list(_NOT_XML_SAFE_RE.sub("", raw)))
        kind_token = head[1]
        if kind_token.type == "ident" and len(parsed) == 1 and parsed[0].type == "number":  # attr(data-w px)
            unit = kind_token.lower_value
            if unit == "number":
                return parsed
            if unit == "percent" or unit == "%":
                return [tinycss2.ast.PercentageToken(0, 0, parsed[0].value, parsed[0].int_value,
                                                     parsed[0].representation)]
            return [tinycss2.ast.DimensionToken(0, 0, parsed[0].value, parsed[0].int_value,
                                                parsed[0].representation, kind_token.value)]
        if kind_token.type == "function" and kind_token.lower_name == "type" and parsed:
            return parsed
        return fallback
    return fallback  # anchor(), anchor-size()


_NOT_XML_SAFE_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _substitute(value: list, custom: dict | None, depth: int = 0, element: etree._Element | None = None
                ) -> list | None:
    """``value`` with every ``var(--name[, fallback])`` replaced by the custom property's value (or the
    fallback), and ``env()``, ``attr()``, ``anchor()``, ``anchor-size()`` by theirs (:func:`_replacement`);
    None when one resolves to nothing (the declaration is then invalid: unset)."""
    if depth > 16:
        return None
    out = []
    for token in value:
        if token.type != "function":
            out.append(token)
            continue
        if token.lower_name in _SUBSTITUTED:
            replacement = _replacement(token, custom, element)
            if replacement is None:
                return None
            resolved = _substitute(replacement, custom, depth + 1, element)
            if resolved is None:
                return None
            out.extend(resolved)
        elif _has_var(token.arguments):
            arguments = _substitute(token.arguments, custom, depth + 1, element)
            if arguments is None:
                return None
            out.append(tinycss2.ast.FunctionBlock(token.source_line, token.source_column, token.name, arguments))
        else:
            out.append(token)
    return out


def _ident(value: str):
    return tinycss2.ast.IdentToken(0, 0, value)


class _ColorToken:
    """A colour already parsed (from a legacy attribute), standing in for a token."""

    type = "color"

    def __init__(self, color: Color) -> None:
        self.color = color


def _scheme_dark(tokens: list, prefers_dark: bool = False) -> bool | None:
    """A ``color-scheme`` value's scheme for a reader who prefers light: False when it names ``light``, True when
    it names ``dark`` (and not ``light``), None otherwise (``normal``, ``inherit``, nothing this reader knows).
    For a reader who prefers dark (``prefers_dark``): True when it names ``dark`` (``light dark`` too), False when
    it names ``light`` alone (checked in chromium 156: ``light dark`` paints the canvas #121212 for that reader)."""
    names = {t.lower_value for t in tokens if getattr(t, "type", None) == "ident"}
    if prefers_dark:
        return True if "dark" in names else False if "light" in names else None
    return False if "light" in names else True if "dark" in names else None


def _meta_scheme_dark(root: etree._Element, prefers_dark: bool = False) -> bool:
    """Whether the page's first ``<meta name="color-scheme">`` (anywhere, any case) asks for a dark scheme only
    (``prefers_dark``: names a dark one, which a reader who prefers dark then gets)."""
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() == "color-scheme":
            names = set((meta.get("content") or "").lower().split())
            return "dark" in names and (prefers_dark or "light" not in names)
    return False


def _names_a_scheme(root: etree._Element) -> bool:
    """Whether a ``<meta name="color-scheme">`` or a ``style`` attribute of the page names a colour scheme (its
    style sheets are asked by :attr:`_Sheets.schemes`): the page may look otherwise to a reader who prefers dark."""
    for element in root.iter(etree.Element):
        if element.tag == "meta" and (element.get("name") or "").strip().lower() == "color-scheme":
            return True
        style = element.get("style")
        if style and "color-scheme" in style.lower():
            return True
    return False


def _in_dark(tokens: list, link: _ColorToken | None) -> list:
    """``tokens`` with the system colours, the browser's own link colour (``link``) and ``light-dark()`` as a dark
    colour scheme paints them (``light-dark()``: its second colour; inside other functions too)."""
    out = []
    for token in tokens:
        kind = getattr(token, "type", None)
        if kind == "ident" and token.lower_value in _DARK_SYSTEM_COLORS:
            token = _ColorToken(_DARK_SYSTEM_COLORS[token.lower_value])
        elif link is not None and token is link:
            token = _ColorToken(_DARK_SYSTEM_COLORS["linktext"])
        elif kind == "function" and token.lower_name == "light-dark":
            arguments = _tokens(token.arguments)
            comma = next((i for i, t in enumerate(arguments) if t.type == "literal" and t.value == ","), None)
            second = [t for t in arguments[comma + 1:]] if comma is not None else []
            token = _in_dark(second, link)[0] if second else _ColorToken(_UNJUDGED)
        elif kind == "function":
            token = tinycss2.ast.FunctionBlock(token.source_line, token.source_column, token.name,
                                               _in_dark(token.arguments, link))
        out.append(token)
    return out


# -- animations (fourteenth session) ---------------------------------------------------------------------------------
# An animation rests in a keyframe a reader sees for longer than this (a paused one, one filled before its delay or
# after its end, one whose run lasts longer): text a keyframe it rests in hides is hidden. Shorter is on the way
# to its rest -- an ordinary fade-in of a few hundred milliseconds, a second, a delay of a second or two -- and a
# keyframe passed on the way hides nothing (docs/security.md, the animations row).
ANIMATION_REST_S = 3.0
# Keyframe states a page's animated elements may make (each costs as much as an element's own state): past it the
# page fails with the line of the sheet of its first ``@keyframes`` (an element times keyframes, both from the
# page's size, would grow as its square).
MAX_ANIMATED_FRAMES = 20_000
_ANIMATION_LONGHANDS = ("animation-name", "animation-duration", "animation-delay", "animation-iteration-count",
                        "animation-direction", "animation-fill-mode", "animation-play-state", "animation-timeline")
_ANIMATION_PROPERTIES = frozenset({"animation", *_ANIMATION_LONGHANDS})
_FROM_SHORTHAND: list = []  # a longhand's value where the ``animation`` shorthand set it
_NOT_A_NAME = frozenset({"none", "initial", "inherit", "unset", "default", "revert", "revert-layer"})
_DIRECTIONS = frozenset({"normal", "reverse", "alternate", "alternate-reverse"})
_FILLS = frozenset({"forwards", "backwards", "both"})


@dataclass
class _Animation:
    """One animation of an element: the names it may run (a shorthand's every identifier that names keyframes: which
    one a browser takes is not evaluated) and its timing; None: a time this reader cannot evaluate (taken as long)."""

    names: list[str] = field(default_factory=list)
    duration: float | None = 0.0  # seconds
    delay: float | None = 0.0
    count: float = 1.0  # math.inf: infinite
    direction: str = "normal"  # "?": not a direction this reader knows (either way)
    fill: str = "none"  # "both" where not known
    paused: bool = False
    timeline: bool = False  # another timeline than the document's (scroll(), view(), none): progress not evaluated


def _keyframe_offsets(prelude: list) -> list[float | None]:
    """A keyframe selector's offsets (percent); None for one this reader does not place (a timeline range such as
    ``entry 10%``: it may hold anywhere); [] when an offset is past 0% to 100% (the browser drops the keyframe)."""
    offsets: list[float | None] = []
    for item in _comma_items(_tokens(prelude)):
        if len(item) == 1 and item[0].type == "ident" and item[0].lower_value in ("from", "to"):
            offsets.append(0.0 if item[0].lower_value == "from" else 100.0)
        elif len(item) == 1 and item[0].type == "percentage":
            if not 0 <= item[0].value <= 100:
                return []
            offsets.append(float(item[0].value))
        elif item:
            offsets.append(None)
    return offsets


def _comma_items(tokens: list) -> list[list]:
    """Tokens split at their top-level commas (whitespace dropped)."""
    items: list[list] = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            items.append([])
        elif token.type not in ("whitespace", "comment"):
            items[-1].append(token)
    return items


def _time(token) -> tuple[bool, float | None]:
    """(whether ``token`` is a time, its seconds: None for a math function this reader does not evaluate)."""
    if token.type == "dimension" and token.lower_unit in ("s", "ms"):
        return True, token.value / (1000 if token.lower_unit == "ms" else 1)
    if token.type == "function" and token.lower_name in _MATH:
        return True, None
    return False, None


def _single_animation(tokens: list, known: dict) -> _Animation:
    """One animation of the ``animation`` shorthand: its first time the duration, its second the delay; every
    identifier or string that names keyframes may be its name (fail closed: ``forwards`` names an animation
    ``@keyframes forwards`` defines, and fills it too)."""
    animation = _Animation()
    times = []
    for token in tokens:
        is_time, seconds = _time(token)
        if is_time:
            times.append(seconds)
        elif token.type == "number" and token.value >= 0:
            animation.count = float(token.value)
        elif token.type == "string":
            animation.names.append(token.value)
        elif token.type == "ident":
            keyword = token.lower_value
            if keyword == "infinite":
                animation.count = math.inf
            elif keyword in _DIRECTIONS:
                animation.direction = keyword
            elif keyword in _FILLS:
                animation.fill = keyword
            elif keyword == "paused":
                animation.paused = True
            if token.value in known:
                animation.names.append(token.value)
    if times:
        animation.duration = times[0]
    if len(times) > 1:
        animation.delay = times[1]
    return animation


def _animations(values: dict[str, list | None], known: dict) -> list[_Animation]:
    """An element's animations from its ``animation`` shorthand and longhands (``values``: each one's winning value,
    :data:`_FROM_SHORTHAND` where the shorthand set it; None: unset or a ``var()`` that resolves to nothing). The
    longhands' lists repeat to the names' length, as a browser repeats them."""
    shorthand = values.get("animation")
    singles = [_single_animation(item, known) for item in _comma_items(shorthand)] if shorthand else []

    def longhand(name: str, attribute: str, parse) -> list:
        value = values.get(name)
        if value is _FROM_SHORTHAND:
            return [getattr(single, attribute) for single in singles] or [getattr(_Animation(), attribute)]
        if not value:
            return [getattr(_Animation(), attribute)]
        return [parse(item) for item in _comma_items(value)]

    def name(item: list) -> list[str]:
        return [item[0].value] if len(item) == 1 and item[0].type in ("ident", "string") else []

    def seconds(item: list) -> float | None:
        is_time, value = _time(item[0]) if len(item) == 1 else (False, None)
        return value if is_time else None

    def count(item: list) -> float:
        if len(item) == 1 and item[0].type == "number" and item[0].value >= 0:
            return float(item[0].value)
        return math.inf  # infinite, or what this reader cannot evaluate

    def keyword(known_words: frozenset, unknown: str):
        return lambda item: _keyword(item) if _keyword(item) in known_words else unknown

    names = longhand("animation-name", "names", name)
    durations = longhand("animation-duration", "duration", seconds)
    delays = longhand("animation-delay", "delay", seconds)
    counts = longhand("animation-iteration-count", "count", count)
    directions = longhand("animation-direction", "direction", keyword(_DIRECTIONS, "?"))
    fills = longhand("animation-fill-mode", "fill", keyword(_FILLS | {"none"}, "both"))
    paused = longhand("animation-play-state", "paused", lambda item: _keyword(item) != "running")
    timelines = longhand("animation-timeline", "timeline", lambda item: _keyword(item) != "auto")
    return [_Animation(names=candidates, duration=durations[i % len(durations)], delay=delays[i % len(delays)],
                       count=counts[i % len(counts)], direction=directions[i % len(directions)],
                       fill=fills[i % len(fills)], paused=paused[i % len(paused)],
                       timeline=timelines[i % len(timelines)])
            for i, candidates in enumerate(names) if any(n in known for n in candidates)]


def _rest_offsets(animation: _Animation) -> set[float] | None:
    """The keyframe offsets an animation can rest in (None: any of its keyframes), as chromium 156 runs it
    (checked with scripts/hidden_text_render_check.py --animations): its start keyframe (0%; 100% when it runs in
    reverse) when paused at the start or filled backwards through a delay longer than :data:`ANIMATION_REST_S`;
    its end keyframe when filled forwards after a finite run; any keyframe when its run -- duration times
    iterations, less a negative delay -- lasts longer than that (a slow fade stays near its first keyframe, an
    endless loop comes back to each), when it is paused mid-way (a negative delay), ends mid-iteration, or follows
    another timeline. What this reader cannot evaluate counts as long."""
    start = {0.0} if animation.direction in ("normal", "alternate") else {100.0} \
        if animation.direction in ("reverse", "alternate-reverse") else {0.0, 100.0}
    delay, duration, count = animation.delay, animation.duration, animation.count
    if animation.timeline or delay is None or duration is None:
        return None
    if animation.paused:
        if delay < 0:
            return None
        return start if delay == 0 or animation.fill in ("backwards", "both") else set()
    rest: set[float] = set()
    if delay > ANIMATION_REST_S and animation.fill in ("backwards", "both"):
        rest |= start
    active = 0.0 if duration == 0 or count == 0 else duration * count
    if active + min(delay, 0.0) > ANIMATION_REST_S:
        return None
    if animation.fill in ("forwards", "both"):
        if math.isinf(count) or count != int(count):
            return None
        turns = animation.direction in ("alternate", "alternate-reverse") and int(count) % 2 == 0
        rest |= (start if turns or count == 0 else {100.0 - offset for offset in start}) \
            if animation.direction != "?" else {0.0, 100.0}
    return rest


def _expand(declaration: _Declaration) -> list[tuple[str, list]]:
    """The longhand values a declaration sets (the shorthands that matter here split up)."""
    name, value = declaration.name, declaration.value
    tokens = _tokens(value)
    if name == "background":
        # currentColor too: the text's own colour behind it (found attacking the demo: dropped, so transparent).
        colors = [t for t in tokens if t.type in ("hash", "ident", "function")
                  and (isinstance(_color(t), tuple) or _color(t) == "currentcolor")]
        images = [t for t in tokens if t.type == "url" or (t.type == "function" and (
            t.lower_name == "url" or t.lower_name.endswith("gradient")))]
        return [("background-color", colors[-1:] or [_ident("transparent")]),
                ("background-image", images or [_ident("none")])]
    if name == "animation":  # every longhand reset, read from the shorthand's value (:meth:`Visibility._frames`)
        return [("animation", value), *((longhand, _FROM_SHORTHAND) for longhand in _ANIMATION_LONGHANDS)]
    if name == "margin":
        parts = tokens[:4]
        if not parts:
            return []
        top = parts[0]
        left = parts[3] if len(parts) == 4 else parts[1] if len(parts) >= 2 else parts[0]
        return [("margin-top", [top]), ("margin-left", [left])]
    if name == "overflow":
        return [("overflow-x", tokens[:1]), ("overflow-y", tokens[-1:])]
    if name in ("padding", "border-width"):
        parts = tokens[:4]
        if not parts:
            return []
        left = parts[3] if len(parts) == 4 else parts[1] if len(parts) >= 2 else parts[0]
        suffix = "" if name == "padding" else "-width"
        side = name.split("-")[0]
        return [(f"{side}-top{suffix}", [parts[0]]), (f"{side}-left{suffix}", [left])]
    if name in ("border", "border-left", "border-top"):
        # The width among a style and a colour (any style counted: fail closed, a border of style none is 0 wide).
        widths = [t for t in tokens if t.type in ("dimension", "number") or (t.type == "function" and t.lower_name in
                                                                             _MATH)]
        width = widths[:1] or [_ident("medium")]
        sides = ("top", "left") if name == "border" else (name.split("-")[1],)
        return [(f"border-{side}-width", width) for side in sides]
    return [(name, value)]
