"""Whether a CSS condition can hold on the screen this reader assumes: ``@media`` query lists, ``@supports``
conditions (pure, tinycss2 tokens).

Found attacking hidden text (fourteenth session): the conditions were read with regular expressions that knew the
level-3 syntax only; a level-4 ``or``, ``not (...)``, a range like ``(width >= 0)``, nested parentheses, an
``@supports selector(...)`` or ``not (...)`` were taken as not holding, so the colours they set were never applied --
chromium applies them, and white text under them reached the model.

Each condition is evaluated to the set of truth values it may have on that screen (:data:`TRUE`, :data:`FALSE`,
:data:`MAYBE`) by its grammar (Media Queries 4, CSS Conditional 4): ``not``, ``and``, ``or`` and parentheses at any
depth combine the sets of their parts. What this reader cannot evaluate -- a media feature or a value it does not
know, a function (``calc()``), a property whose support it cannot tell, ``selector()`` with a pseudo-class,
``font-tech()``, a condition it cannot parse -- may be either (:data:`MAYBE`): a rule applies when its condition
*may* hold (fail closed: a colour under a condition a browser might apply is applied, and text hidden in either
cascade pass is hidden, so applying never un-hides). Surely false are only what this reader knows to be false on a
desktop screen: a phone-sized width, ``print``, a dark scheme for a reader who prefers light, a feature's value that
differs from the screen's. Parentheses nested deeper than :data:`MAX_CONDITION_DEPTH` may be either.
"""

from __future__ import annotations

import re

import tinycss2
import tinycss2.color4

TRUE = frozenset({True})
FALSE = frozenset({False})
MAYBE = frozenset({True, False})
# Parentheses nested deeper than this in a condition are not read: the condition may hold (the work stays linear).
MAX_CONDITION_DEPTH = 32

# The screen (2026-12-04): a desktop browser window of 1280 x 720 px, a light colour scheme, a mouse, colour, 1 dppx,
# no user preference (chromium 156, headless, answers the same for each feature below but those it does not know).
VIEWPORT_WIDTH = 1280.0
VIEWPORT_HEIGHT = 720.0
_RANGE_FEATURES = {
    "width": ("length", VIEWPORT_WIDTH), "height": ("length", VIEWPORT_HEIGHT),
    "device-width": ("length", VIEWPORT_WIDTH), "device-height": ("length", VIEWPORT_HEIGHT),
    "aspect-ratio": ("ratio", VIEWPORT_WIDTH / VIEWPORT_HEIGHT),
    "device-aspect-ratio": ("ratio", VIEWPORT_WIDTH / VIEWPORT_HEIGHT),
    "resolution": ("resolution", 1.0), "-webkit-device-pixel-ratio": ("number", 1.0),
    "color": ("integer", 8.0), "color-index": ("integer", 0.0), "monochrome": ("integer", 0.0),
}
_DISCRETE_FEATURES = {
    "orientation": "landscape", "prefers-color-scheme": "light", "prefers-reduced-motion": "no-preference",
    "prefers-contrast": "no-preference", "prefers-reduced-transparency": "no-preference",
    "prefers-reduced-data": "no-preference", "forced-colors": "none", "inverted-colors": "none", "hover": "hover",
    "any-hover": "hover", "pointer": "fine", "any-pointer": "fine", "scripting": "enabled", "update": "fast",
    "display-mode": "browser", "color-gamut": "srgb", "dynamic-range": "standard", "video-dynamic-range": "standard",
    "overflow-block": "scroll", "overflow-inline": "scroll", "grid": "0",
}
# A discrete feature alone, ``(hover)``, holds unless its value is one of these.
_FALSE_IN_BOOLEAN = frozenset({"none", "no-preference", "0"})
_ALWAYS = frozenset({"-webkit-transform-3d"})  # chromium: ``(-webkit-transform-3d)`` holds
_SCREEN_TYPES = frozenset({"screen", "all"})
_RESERVED = frozenset({"not", "only", "and", "or", "layer"})  # never a media type: the query is malformed
_LENGTHS = {"px": 1.0, "pt": 4 / 3, "pc": 16.0, "in": 96.0, "cm": 96 / 2.54, "mm": 96 / 25.4, "q": 96 / 101.6,
            "em": 16.0, "rem": 16.0, "vw": VIEWPORT_WIDTH / 100, "vh": VIEWPORT_HEIGHT / 100,
            "vmin": VIEWPORT_HEIGHT / 100, "vmax": VIEWPORT_WIDTH / 100}
_RESOLUTIONS = {"dppx": 1.0, "x": 1.0, "dpi": 1 / 96, "dpcm": 2.54 / 96}


def _not(values: frozenset) -> frozenset:
    return frozenset(not value for value in values)


def _and(left: frozenset, right: frozenset) -> frozenset:
    return frozenset(a and b for a in left for b in right)


def _or(left: frozenset, right: frozenset) -> frozenset:
    return frozenset(a or b for a in left for b in right)


def _significant(tokens: list) -> list:
    return [token for token in tokens if token.type not in ("whitespace", "comment")]


def _is_ident(token, *words: str) -> bool:
    return token.type == "ident" and (not words or token.lower_value in words)


def _tokens_of(condition) -> list:
    return tinycss2.parse_component_value_list(condition) if isinstance(condition, str) else condition


# -- @media ------------------------------------------------------------------------------------------


def media_values(condition, dark: bool = False) -> frozenset:
    """The truth values a media query list (a string or tinycss2 tokens) may have on the screen; ``dark``: the
    screen of a reader who prefers a dark colour scheme. An empty list holds (``@media {}`` applies)."""
    queries: list[list] = [[]]
    for token in _tokens_of(condition):
        if token.type == "literal" and token.value == ",":
            queries.append([])
        else:
            queries[-1].append(token)
    significant = [_significant(query) for query in queries]
    if len(significant) == 1 and not significant[0]:
        return TRUE
    result = FALSE
    for query in significant:
        result = _or(result, _media_query(query, dark))
    return result


def media_may_hold(condition, dark: bool = False) -> bool:
    """Whether a media query list may hold on the screen (fail closed: what this reader cannot evaluate may)."""
    return True in media_values(condition, dark)


def _media_query(tokens: list, dark: bool) -> frozenset:
    if not tokens:
        return MAYBE  # an empty query in a list: malformed (a browser drops it); not read
    if tokens[0].type != "ident" or _is_ident(tokens[0], "not") and len(tokens) > 1 and tokens[1].type != "ident":
        return _condition(tokens, dark, 0, allow_or=True)
    negated = _is_ident(tokens[0], "not")
    rest = tokens[1:] if negated or _is_ident(tokens[0], "only") else tokens
    if not rest or rest[0].type != "ident" or rest[0].lower_value in _RESERVED:
        return MAYBE
    values = TRUE if rest[0].lower_value in _SCREEN_TYPES else FALSE  # print, speech, tv, an unknown type: none
    if len(rest) > 1:
        if not _is_ident(rest[1], "and") or len(rest) == 2:
            return MAYBE
        values = _and(values, _condition(rest[2:], dark, 0, allow_or=False))
    return _not(values) if negated else values


def _condition(tokens: list, dark: bool, depth: int, *, allow_or: bool) -> frozenset:
    """``not <in-parens>`` | ``<in-parens> [and <in-parens>]*`` | ``<in-parens> [or <in-parens>]*``."""
    if not tokens:
        return MAYBE
    if _is_ident(tokens[0], "not"):
        return _not(_in_parens(tokens[1], dark, depth)) if len(tokens) == 2 else MAYBE
    values = _in_parens(tokens[0], dark, depth)
    joiner = None
    index = 1
    while index < len(tokens):
        word = tokens[index]
        if not _is_ident(word, "and", "or") or index + 1 >= len(tokens) or (joiner and word.lower_value != joiner) \
                or (word.lower_value == "or" and not allow_or):
            return MAYBE  # ``and`` and ``or`` mixed, a dangling word: malformed
        joiner = word.lower_value
        right = _in_parens(tokens[index + 1], dark, depth)
        values = _and(values, right) if joiner == "and" else _or(values, right)
        index += 2
    return values


def _in_parens(token, dark: bool, depth: int) -> frozenset:
    if token.type != "() block" or depth >= MAX_CONDITION_DEPTH:
        return MAYBE  # a function (general-enclosed), a bare word, too deep: not read
    inner = _significant(token.content)
    if inner and (inner[0].type in ("() block", "function") or _is_ident(inner[0], "not") and len(inner) == 2):
        return _condition(inner, dark, depth + 1, allow_or=True)
    return _feature(inner, dark)


_OPERATORS = ("<", ">", "=")


def _feature(tokens: list, dark: bool) -> frozenset:
    """A media feature: ``(name)``, ``(name: value)``, or a range ``(name < value)``, ``(v1 < name <= v2)``."""
    if len(tokens) == 1 and tokens[0].type == "ident":
        return _boolean(tokens[0].lower_value)
    if len(tokens) >= 3 and tokens[0].type == "ident" and tokens[1].type == "literal" and tokens[1].value == ":":
        return _plain(tokens[0].lower_value, tokens[2:], dark)
    # A range: split at the comparison operators (``<=`` is two tokens).
    parts: list[list] = [[]]
    operators: list[str] = []
    for token in tokens:
        if token.type == "literal" and token.value in _OPERATORS:
            if parts[-1] or not operators or operators[-1] not in ("<", ">") or token.value != "=":
                operators.append(token.value)
                parts.append([])
            else:
                operators[-1] += "="
        else:
            parts[-1].append(token)
    if len(operators) not in (1, 2) or any(not part for part in parts):
        return MAYBE
    if len(operators) == 1:
        left, right = parts
        if len(left) == 1 and left[0].type == "ident":
            return _compare(left[0].lower_value, operators[0], right, value_first=False)
        if len(right) == 1 and right[0].type == "ident":
            return _compare(right[0].lower_value, operators[0], left, value_first=True)
        return MAYBE
    low, name, high = parts
    if len(name) != 1 or name[0].type != "ident" or {operators[0][0], operators[1][0]} not in ({"<"}, {">"}):
        return MAYBE
    return _and(_compare(name[0].lower_value, operators[0], low, value_first=True),
                _compare(name[0].lower_value, operators[1], high, value_first=False))


def _boolean(name: str) -> frozenset:
    if name in _RANGE_FEATURES:
        return TRUE if _RANGE_FEATURES[name][1] != 0 else FALSE
    if name in _DISCRETE_FEATURES:
        return FALSE if _DISCRETE_FEATURES[name] in _FALSE_IN_BOOLEAN else TRUE
    return TRUE if name in _ALWAYS else MAYBE


def _plain(name: str, value: list, dark: bool) -> frozenset:
    if name.startswith(("min-", "max-", "-webkit-min-", "-webkit-max-")):
        prefix = "min-" if "min-" in name[:12] else "max-"
        base = name.replace(prefix, "", 1)
        if base not in _RANGE_FEATURES:
            return MAYBE
        return _compare(base, ">=" if prefix == "min-" else "<=", value, value_first=False)
    if name in _RANGE_FEATURES:
        return _compare(name, "=", value, value_first=False)
    if name in _DISCRETE_FEATURES and len(value) == 1 and value[0].type in ("ident", "number"):
        actual = "dark" if dark and name == "prefers-color-scheme" else _DISCRETE_FEATURES[name]
        given = value[0].lower_value if value[0].type == "ident" else value[0].representation
        return TRUE if given == actual else FALSE
    return MAYBE


def _compare(name: str, operator: str, value: list, *, value_first: bool) -> frozenset:
    """``name OPERATOR value`` (or ``value OPERATOR name``) against the screen's value of the feature."""
    if name not in _RANGE_FEATURES:
        return MAYBE
    kind, actual = _RANGE_FEATURES[name]
    number = _value(kind, value)
    if number is None:
        return MAYBE
    left, right = (number, actual) if value_first else (actual, number)
    held = {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right, "=": left == right}.get(
        operator)
    return MAYBE if held is None else TRUE if held else FALSE


def _value(kind: str, tokens: list) -> float | None:
    if kind == "ratio" and len(tokens) == 3 and tokens[1].type == "literal" and tokens[1].value == "/":
        top, bottom = tokens[0], tokens[2]
        if top.type == bottom.type == "number" and top.value >= 0 and bottom.value > 0:
            return top.value / bottom.value
        return None
    if len(tokens) != 1:
        return None
    token = tokens[0]
    if kind == "length":
        if token.type == "number" and token.value == 0:
            return 0.0
        return token.value * _LENGTHS[token.lower_unit] if token.type == "dimension" and \
            token.lower_unit in _LENGTHS else None
    if kind == "resolution":
        return token.value * _RESOLUTIONS[token.lower_unit] if token.type == "dimension" and \
            token.lower_unit in _RESOLUTIONS else None
    if kind == "integer":
        return float(token.value) if token.type == "number" and token.is_integer else None
    if token.type == "number" and (kind in ("number", "ratio")):
        return float(token.value)
    return None


# -- @supports ---------------------------------------------------------------------------------------


def supports_values(condition, *, import_form: bool = False) -> frozenset:
    """The truth values an ``@supports`` condition (a string or tinycss2 tokens) may have in a browser.
    ``import_form``: the argument of an ``@import``'s ``supports()``, which may be a bare declaration."""
    tokens = _significant(_tokens_of(condition))
    if import_form and len(tokens) >= 2 and tokens[0].type == "ident" and tokens[1].type == "literal" \
            and tokens[1].value == ":":
        return _declaration_supported(tokens)
    return _supports_condition(tokens, 0)


def supports_may_hold(condition, *, import_form: bool = False) -> bool:
    return True in supports_values(condition, import_form=import_form)


def _supports_condition(tokens: list, depth: int) -> frozenset:
    if not tokens:
        return MAYBE
    if _is_ident(tokens[0], "not"):
        return _not(_supports_in_parens(tokens[1], depth)) if len(tokens) == 2 else MAYBE
    values = _supports_in_parens(tokens[0], depth)
    joiner = None
    index = 1
    while index < len(tokens):
        word = tokens[index]
        if not _is_ident(word, "and", "or") or index + 1 >= len(tokens) or (joiner and word.lower_value != joiner):
            return MAYBE
        joiner = word.lower_value
        right = _supports_in_parens(tokens[index + 1], depth)
        values = _and(values, right) if joiner == "and" else _or(values, right)
        index += 2
    return values


def _supports_in_parens(token, depth: int) -> frozenset:
    if depth >= MAX_CONDITION_DEPTH:
        return MAYBE
    if token.type == "function":
        if token.lower_name == "selector":
            return _selector_supported(tinycss2.serialize(token.arguments).strip())
        return MAYBE  # font-tech(), font-format(), a function this reader does not know
    if token.type != "() block":
        return MAYBE
    inner = _significant(token.content)
    if len(inner) >= 2 and inner[0].type == "ident" and inner[1].type == "literal" and inner[1].value == ":":
        return _declaration_supported(inner)
    if inner and (inner[0].type in ("() block", "function") or _is_ident(inner[0], "not")):
        return _supports_condition(inner, depth + 1)
    return MAYBE


# Properties every browser this reader stands for supports (chromium 156 answers ``CSS.supports`` true for each
# with ``initial``), and the values this reader can tell are valid for some of them.
_KNOWN_PROPERTIES = frozenset({
    "display", "visibility", "content-visibility", "opacity", "font-size", "font", "color", "-webkit-text-fill-color",
    "background", "background-color", "background-image", "text-shadow", "-webkit-text-stroke", "position", "left",
    "right", "top", "bottom", "inset", "margin", "margin-left", "margin-top", "text-indent", "translate",
    "transform", "scale", "zoom", "clip", "clip-path", "width", "height", "max-width", "max-height", "overflow",
    "overflow-x", "overflow-y", "filter", "rotate", "contain", "letter-spacing", "word-spacing", "mix-blend-mode",
    "line-height", "vertical-align", "font-size-adjust", "color-scheme", "padding", "border", "border-width",
})
_WIDE_KEYWORDS = frozenset({"initial", "inherit", "unset", "revert", "revert-layer"})
_DISPLAY_WORDS = frozenset({
    "none", "block", "inline", "inline-block", "flex", "inline-flex", "grid", "inline-grid", "flow-root", "contents",
    "table", "inline-table", "list-item", "table-row", "table-cell", "table-row-group", "table-header-group",
    "table-footer-group", "table-column", "table-column-group", "table-caption",
})
_KEYWORD_VALUES = {
    "visibility": frozenset({"visible", "hidden", "collapse"}),
    "position": frozenset({"static", "relative", "absolute", "fixed", "sticky"}),
    "overflow": frozenset({"visible", "hidden", "clip", "scroll", "auto"}),
    "content-visibility": frozenset({"visible", "hidden", "auto"}),
}
_COLOR_PROPERTIES = frozenset({"color", "background-color", "-webkit-text-fill-color"})


def _declaration_supported(tokens: list) -> frozenset:
    """``(property: value)``: surely supported when this reader can tell the value is valid; custom properties
    always are; anything else may or may not be (a browser may not know the property, or the value)."""
    name = tokens[0].lower_value if not tokens[0].value.startswith("--") else tokens[0].value
    value = [token for token in tokens[2:]]
    if value and value[-1].type == "ident" and value[-1].lower_value == "important" and len(value) >= 2 \
            and value[-2].type == "literal" and value[-2].value == "!":
        value = value[:-2]
    if name.startswith("--"):
        return TRUE
    if name not in _KNOWN_PROPERTIES or not value:
        return MAYBE
    words = [token.lower_value for token in value if token.type == "ident"]
    if len(words) == len(value) == 1 and words[0] in _WIDE_KEYWORDS:
        return TRUE
    if name == "display" and len(words) == len(value) == 1:
        return TRUE if words[0] in _DISPLAY_WORDS else MAYBE
    if name in _KEYWORD_VALUES and len(words) == len(value) == 1:
        return TRUE if words[0] in _KEYWORD_VALUES[name] else MAYBE
    if name == "opacity" and len(value) == 1 and value[0].type in ("number", "percentage"):
        return TRUE
    if name in _COLOR_PROPERTIES and len(value) == 1 and tinycss2.color4.parse_color(value[0]) is not None:
        return TRUE
    return MAYBE


# A selector of type, class and id selectors and combinators only: every browser parses it.
_PLAIN_SELECTOR_RE = re.compile(r"(?:[a-zA-Z][\w-]*|\*)?(?:[.#]-?[a-zA-Z_][\w-]*)*"
                                r"(?:\s*[>+~]\s*|\s+)?")


def _selector_supported(selector: str) -> frozenset:
    """``selector(...)``: surely supported when it is a plain one (tags, classes, ids, combinators); anything else
    -- pseudo-classes, attributes, namespaces, a list -- may or may not be."""
    if not selector or selector[-1] in ">+~" or selector[0] in ">+~":
        return MAYBE
    position = 0
    while position < len(selector):
        match = _PLAIN_SELECTOR_RE.match(selector, position)
        if match is None or match.end() == position:
            return MAYBE
        position = match.end()
    return TRUE
