"""Ask chromium what random ``@media`` and ``@supports`` conditions give, and compare with ``css_conditions``.

    .venv/bin/python scripts/css_conditions_check.py [--media N] [--supports N] [--seed S] [--dark]

Draws N conditions of each kind -- ``not``/``and``/``or`` and parentheses nested up to four deep over the media
features, media types, declarations, ``selector()`` and ``font-tech()`` tests listed below, some malformed -- and
asks chromium (headless, 1280 x 720, Debian's ``/usr/bin/chromium`` or the one ``BULKHEAD_CHROMIUM`` names, through
Playwright) for ``matchMedia(q).matches`` and ``CSS.supports(c)``, with a dark colour scheme under ``--dark`` (the
reader's dark pass). Each answer is compared with what ``css_conditions`` says the condition may be: ``leak`` counts
the conditions chromium applies but the reader says surely do not hold (a colour under them would be missed: must be
0); ``over`` those the reader says surely hold but chromium does not apply (harmless: their rules are applied in the
second pass, which only hides); T, F and M how many the reader said surely hold, surely do not, or may. Exit status 1
when any leaks. Not a test of the suite: it needs chromium (docs/benchmarks.md, "Hidden text").
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ingestion.parsers.css_conditions import FALSE, TRUE, media_values, supports_values  # noqa: E402

FEATURES = [
    "(min-width: 1px)", "(max-width: 600px)", "(width >= 0)", "(width < 100vw)", "(400px < width < 2000px)",
    "(height > 800px)", "(orientation: portrait)", "(orientation: landscape)", "(hover: none)", "(hover)",
    "(pointer: coarse)", "(prefers-color-scheme: dark)", "(prefers-color-scheme: light)", "(color)", "(monochrome)",
    "(unknown-feature)", "(foo: bar)", "(aspect-ratio > 16/9)", "(min-aspect-ratio: 1/1)", "(resolution >= 2dppx)",
    "(min-resolution: 96dpi)", "(-webkit-min-device-pixel-ratio: 2)", "(grid)", "(prefers-reduced-motion: reduce)",
    "(scripting: none)", "(width = 1280px)", "(1px <= height)", "(min-width: 1)", "(width > calc(1px))",
    "(max-height: 50em)", "(display-mode: standalone)", "(update)", "(forced-colors: active)", "(any-hover: hover)",
    "(min-color: 1)", "(dynamic-range: high)", "foo(bar)",
]
TYPES = ["screen", "all", "print", "tv", "speech"]
TESTS = [
    "(display: grid)", "(display: grod)", "(color: red)", "(color: nonsense)", "(opacity: 0.5)", "(opacity: a)",
    "(--x: 1)", "(foo: bar)", "(line-clamp: 2)", "(position: sticky)", "(visibility: collapse)", "(foo)",
    "selector(a > b)", "selector(:has(a))", "selector(:nope)", "selector(a, b)", "font-tech(color-COLRv1)",
    "font-format(woff2)", "font-tech(nope)", "(transform: rotate(1deg))", "(width: 10px)", "(display: contents)",
    "(color: transparent)", "(display: initial)", "(text-wrap: balance)", "(zoom: 2)",
]


def condition(draw: random.Random, leaves: list[str], depth: int = 0) -> str:
    roll = draw.random()
    if depth > 3 or roll < 0.35:
        return draw.choice(leaves)
    if roll < 0.5:
        return f"not ({condition(draw, leaves, depth + 1)})" if draw.random() < 0.5 else f"not {draw.choice(leaves)}"
    if roll < 0.6:
        return f"({condition(draw, leaves, depth + 1)})"
    joiner = draw.choice(["and", "or"])
    parts = []
    for _ in range(draw.randint(2, 3)):
        part = condition(draw, leaves, depth + 1)
        parts.append(part if part.startswith(("(", "selector", "font-", "foo(")) else f"({part})")
    return f" {joiner} ".join(parts)


def media_query(draw: random.Random) -> str:
    if draw.random() < 0.3:  # a media type, maybe with a condition (sometimes malformed: an ``or`` after ``and``)
        kind = f"{draw.choice(['', 'not ', 'only '])}{draw.choice(TYPES)}"
        return f"{kind} and {condition(draw, FEATURES, 1)}" if draw.random() < 0.7 else kind
    query = condition(draw, FEATURES)
    return query if draw.random() < 0.8 else f"{query}, {draw.choice(FEATURES + TYPES)}"


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--media", type=int, default=3000)
    arguments.add_argument("--supports", type=int, default=3000)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--dark", action="store_true", help="a reader who prefers a dark colour scheme")
    options = arguments.parse_args()
    from playwright.sync_api import sync_playwright

    draw = random.Random(options.seed)
    queries = [media_query(draw) for _ in range(options.media)]
    conditions = [condition(draw, TESTS) for _ in range(options.supports)]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("BULKHEAD_CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 720},
                                color_scheme="dark" if options.dark else "light")
        page.set_content("<html><body>x</body></html>")
        applied_media = page.evaluate("qs => qs.map(q => matchMedia(q).matches)", queries)
        applied_supports = page.evaluate("cs => cs.map(c => CSS.supports(c))", conditions)
        print(f"chromium {browser.version}, {'dark' if options.dark else 'light'} scheme, seed {options.seed}")
        browser.close()
    leaks = 0
    for kind, items, applied, evaluate in (
            ("@media", queries, applied_media, lambda q: media_values(q, options.dark)),
            ("@supports", conditions, applied_supports, supports_values)):
        counts = {"T": 0, "F": 0, "M": 0, "leak": 0, "over": 0}
        for item, applies in zip(items, applied, strict=True):
            values = evaluate(item)
            counts["T" if values == TRUE else "F" if values == FALSE else "M"] += 1
            if applies and True not in values:
                counts["leak"] += 1
                print(f"LEAK {kind} {item}")
            counts["over"] += not applies and values == TRUE
        leaks += counts["leak"]
        print(f"{kind}: {len(items)} conditions, {counts}")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
