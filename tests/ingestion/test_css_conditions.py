"""CSS conditions against a browser: what ``css_conditions`` says of ``@media`` queries and ``@supports`` conditions
(fourteenth session, docs/security.md: the level-4 condition rows).

Each case below was asked of chromium 156 (headless, 1280 x 720, a light scheme: ``matchMedia(q).matches``,
``CSS.supports(c)``) and its answer is written beside it. The reader may say a condition may hold where the browser
says it does not (fail closed: its rules are applied in the second pass); it must never say one surely does not hold
where the browser applies it. Where it is sure, it must agree with the browser (but for three media features chromium
156 does not know -- ``inverted-colors``, ``prefers-reduced-data``, ``video-dynamic-range`` -- which the reader takes
at their no-preference values: holding more, never less).
"""

from __future__ import annotations

import pytest

from ingestion.parsers.css_conditions import (
    FALSE,
    MAX_CONDITION_DEPTH,
    MAYBE,
    TRUE,
    media_values,
    supports_values,
)

CHROMIUM_MEDIA = [
    ('(min-width: 1px) or (max-width: 2px)', True),
    ('not (max-width: 600px)', True),
    ('(width >= 0)', True),
    ('((min-width: 1px))', True),
    ('((width > 0) and (height > 0))', True),
    ('(unknown-feature: 1)', False),
    ('not (unknown-feature: 1)', False),
    ('(unknown-feature) or (width > 0)', True),
    ('screen and ((min-width: 1px) or (foo))', True),
    ('screen and not (max-width: 1px)', True),
    ('not screen and (min-width: 1px)', False),
    ('(hover: hover)', True),
    ('(pointer: fine)', True),
    ('(any-hover: hover)', True),
    ('(scripting: enabled)', True),
    ('(min-width: 1px) and (max-width: 2px) or (width)', False),
    ('(400px < width < 2000px)', True),
    ('(width > 0px)', True),
    ('(width >= 0)', True),
    ('(0 <= width)', True),
    ('(width: 1280px)', True),
    ('(aspect-ratio > 1/1)', True),
    ('(min-aspect-ratio: 16/9)', True),
    ('(aspect-ratio: 16/9)', True),
    ('(orientation: landscape)', True),
    ('(display-mode: browser)', True),
    ('(prefers-color-scheme: light)', True),
    ('(-webkit-min-device-pixel-ratio: 1)', True),
    ('(device-pixel-ratio: 1)', False),
    ('(min-resolution: 1dppx)', True),
    ('(color)', True),
    ('(monochrome)', False),
    ('(grid)', False),
    ('(update)', True),
    ('tv', False),
    ('handheld', False),
    ('all and (min-width: 1px)', True),
    ('not all and (monochrome)', True),
    ('screen, print', True),
    ('(min-width: calc(1px + 1px))', True),
    ('(width > calc(100px))', True),
    ('(width >= 10em)', True),
    ('(width < 100vw)', False),
    ('(min-width: 1px) or', False),
    ('only screen', True),
    ('(min-width: 1PX)', True),
    ('(MIN-WIDTH: 1px)', True),
    ('SCREEN', True),
    ('not (not (min-width: 1px))', True),
    ('(not (min-width: 1px))', False),
    ('not (min-width: 1px) or (max-width: 1px)', False),
    ('(forced-colors: none)', True),
    ('(inverted-colors: none)', False),
    ('(prefers-reduced-data: no-preference)', False),
    ('(prefers-reduced-transparency: no-preference)', True),
    ('(dynamic-range: standard)', True),
    ('(color-gamut: srgb)', True),
    ('(overflow-block: scroll)', True),
    ('(device-posture: continuous)', True),
    ('(horizontal-viewport-segments: 1)', True),
    ('(hover)', True),
    ('(pointer)', True),
    ('(any-pointer: coarse)', False),
    ('(min-color: 1)', True),
    ('(color-index)', False),
    ('(resolution: 1x)', True),
    ('(min-device-width: 1px)', True),
    ('(width)', True),
    ('(height)', True),
    ('(display-mode: standalone)', False),
    ('(orientation)', True),
    ('(min-width: 0)', True),
    ('(min-width: 1)', False),
    ('(width > 1)', False),
    ('(1px < width)', True),
    ('(width = 1280px)', True),
    ('(width == 1280px)', False),
    ('screen and (width)', True),
    ('screen and (color), projection', True),
    ('(max-width: 600px), (min-width: 601px)', True),
    ('speech', False),
    ('print', False),
    ('not print', True),
    ('not speech', True),
    ('not tv', True),
    ('(update: fast)', True),
    ('(scan: progressive)', False),
    ('(environment-blending: opaque)', False),
    ('(nav-controls: back)', False),
    ('(prefers-contrast: no-preference)', True),
    ('(prefers-contrast)', False),
    ('(prefers-reduced-motion)', False),
    ('(prefers-color-scheme)', True),
    ('(width <= 1279.5px)', False),
    ('(height > 719px)', True),
    ('(device-aspect-ratio: 16/9)', True),
    ('(min-device-aspect-ratio: 1/1)', True),
    ('(video-dynamic-range: standard)', False),
    ('(inverted-colors)', False),
    ('(forced-colors)', False),
    ('(-webkit-transform-3d)', True),
    ('(transform-3d)', False),
    ('(min--moz-device-pixel-ratio: 1)', False),
    ('(-webkit-device-pixel-ratio: 1)', True),
    ('(shape: rect)', False),
    ('(stuck: top)', False),
    ('general(enclosed)', False),
    ('not general(enclosed)', False),
    ('(width > 0) or general(x)', True),
    ('screen and (min-width: 1px) and (not (hover: none))', True),
]
CHROMIUM_SUPPORTS = [
    ('not (foo)', True),
    ('(foo)', False),
    ('not foo(x)', True),
    ('foo(x)', False),
    ('(display: grid) or (foo)', True),
    ('not ((display: grid))', False),
    ('((display: grid))', True),
    ('selector(:has(a))', True),
    ('not selector(:has(a))', False),
    ('selector(a > b)', True),
    ('selector(ns|a)', False),
    ('selector(a, b)', False),
    ('selector(.--a)', True),
    ('selector(a[x!=y])', False),
    ('font-tech(color-COLRv1)', True),
    ('font-format(woff2)', True),
    ('not font-tech(foo)', True),
    ('(display: grod)', False),
    ('(display: grid) and (not (display: inline-grid))', False),
    ('(color: red) and (color: nonsense)', False),
    ('(--x: anything)', True),
    ('(--x:)', True),
    ('(color:)', False),
    ('(display: block flow)', True),
    ('(display: inline-block)', True),
    ('(display: contents)', True),
    ('(display: flow-root)', True),
    ('(opacity: 50%)', True),
    ('(opacity: 0.5)', True),
    ('(opacity: a)', False),
    ('(color: rgb(1 2 3))', True),
    ('(color: currentcolor)', True),
    ('(color: light-dark(white, black))', True),
    ('(color: color-mix(in srgb, red, blue))', True),
    ('(DISPLAY: GRID)', True),
    ('(display: grid !important)', True),
    ('(display:grid)', True),
    ('not (display: grid) or (color: red)', False),
    ('(display: grid) and (color: red) or (opacity: 1)', False),
    ('display: grid', True),
    ('(color: red) (display: grid)', False),
    ('not not (color: red)', False),
    ('(position: sticky)', True),
    ('(visibility: collapse)', True),
    ('(width: 10px)', True),
    ('(transform: rotate(10deg))', True),
]
NOT_KNOWN_TO_CHROMIUM = ("inverted-colors", "prefers-reduced-data", "video-dynamic-range")


@pytest.mark.parametrize(("query", "applies"), CHROMIUM_MEDIA)
def test_a_media_query_is_never_surely_false_where_chromium_applies_it(query, applies):
    values = media_values(query)
    if applies:
        assert True in values, query
    elif not any(name in query for name in NOT_KNOWN_TO_CHROMIUM):
        assert values != TRUE, query


@pytest.mark.parametrize(("condition", "applies"), CHROMIUM_SUPPORTS)
def test_a_supports_condition_is_never_surely_false_where_chromium_applies_it(condition, applies):
    values = supports_values(condition)
    assert (True in values) if applies else (values != TRUE), condition


@pytest.mark.parametrize(("query", "values"), [
    ("(min-width: 1px) or (max-width: 2px)", TRUE), ("not (min-width: 1px)", FALSE), ("(width >= 0)", TRUE),
    ("(400px < width < 800px)", FALSE), ("screen and (not (hover: hover))", FALSE), ("print", FALSE),
    ("(unknown-feature: 1)", MAYBE), ("(min-width: calc(1px + 1px))", MAYBE), ("(prefers-color-scheme: dark)", FALSE),
    ("", TRUE), ("(width > 0) and (hover: hover) or (color)", MAYBE),
])
def test_what_the_reader_is_sure_of_and_what_it_is_not(query, values):
    assert media_values(query) == values


def test_a_dark_preference_changes_only_the_colour_scheme():
    assert media_values("(prefers-color-scheme: dark)", dark=True) == TRUE
    assert media_values("(prefers-color-scheme: light)", dark=True) == FALSE
    assert media_values("(min-width: 1px)", dark=True) == TRUE


def test_parentheses_nested_past_the_bound_may_hold():
    deep = "(" * (MAX_CONDITION_DEPTH + 5) + "max-width: 1px" + ")" * (MAX_CONDITION_DEPTH + 5)
    shallow = "(" * 3 + "max-width: 1px" + ")" * 3
    assert media_values(deep) == MAYBE and media_values(shallow) == FALSE
    assert supports_values("(" * (MAX_CONDITION_DEPTH + 5) + "display: grod" + ")" * (MAX_CONDITION_DEPTH + 5)) == MAYBE
