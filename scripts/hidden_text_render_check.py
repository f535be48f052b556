"""Render each HTML case of the hidden-text tests in chromium and say whether a reader sees the payload.

    .venv/bin/python scripts/hidden_text_render_check.py [-k PYTEST_EXPRESSION] [--all] [--animations MS]

It runs ``tests/ingestion/test_hidden_text.py`` (narrowed by ``-k`` as pytest's own option) with the
registry's ``parse`` wrapped, so every HTML page a test parses (a ``.html`` file: what the test builds,
byte for byte) is recorded with the test's id. Each page holding the payload (``Zanzibarpayload``,
the tests' ``PAYLOAD``) is then opened in chromium (headless, 1280 x 720, Debian's ``/usr/bin/chromium``
or the one ``BULKHEAD_CHROMIUM`` names, through Playwright) twice: as written, and with the payload
written backwards (the same letters: the same width in a proportional font, so a hidden
payload that still sizes its box -- a select is as wide as its longest option -- moves nothing). The two full-page screenshots are compared:
when not one pixel differs, nothing of the payload is drawn anywhere on the page (hidden); when
pixels differ, it is drawn (the count of pixels and the largest channel difference say how much: a
difference of a few levels is text of nearly the background's colour). Layout is the same in both
(same letters, same markup), so the difference is the payload's glyphs alone. No screenshot is kept.

Each page is reported with what the parser did with the payload (kept in the document text or not)
and a verdict: ``agree``, ``LEAK?`` (the parser keeps what chromium does not draw) or ``LOST?`` (the
parser cuts what chromium draws). By default only disagreements are listed; ``--all`` lists every page.
A test may parse a page where the payload is visible on purpose (a "kept" case): its verdict is
``agree`` when the parser keeps it. What the browser scrolls out of the page (off the left or top edge)
is not drawn and counts as hidden; what a reader reaches by scrolling the page is in the full-page
screenshot. Not a test of the suite: it needs chromium and takes minutes (two screenshots a page).
Exit status 1 when any page disagrees.

By default the screenshots are taken with animations and transitions disabled (Playwright's
``animations="disabled"``: a finite one jumps to its end, an infinite one is cancelled), so a page looks as it
rests. ``--animations MS`` keeps them running instead and takes each screenshot ``MS`` milliseconds after the
page loaded -- what a reader sees that long after opening it (the ``@keyframes`` cases: a long, paused or
filled animation holds its frame; an ordinary fade-in of a few hundred milliseconds is over).
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")

PAYLOAD = "Zanzibarpayload"
SWAPPED = PAYLOAD[::-1]  # the same letters in another order: the same width in any font (kerning aside)
TEST_FILE = "tests/ingestion/test_hidden_text.py"


class _Recorder:
    """A pytest plugin: the HTML pages the tests parse, with the id of the test parsing each."""

    def __init__(self) -> None:
        self.pages: list[tuple[str, bytes, bool]] = []  # (test id, page, the parser kept the payload)
        self.current = ""

    def pytest_runtest_setup(self, item) -> None:
        self.current = item.nodeid.split("::", 1)[-1]

    def pytest_sessionstart(self, session) -> None:
        import tests.ingestion.hidden_payloads as payloads

        original = payloads.parse

        def recording(raw: bytes, *, filename: str | None = None, **kwargs):
            doc = original(raw, filename=filename, **kwargs)
            if filename and filename.endswith(".html") and PAYLOAD.encode() in raw:
                self.pages.append((self.current, raw, PAYLOAD in doc.text))
            return doc

        payloads.parse = recording


def _drawn(page, html: bytes, animations_ms: int | None = None) -> tuple[int, int]:
    """(pixels that differ, largest channel difference) between the page and the page with the payload swapped;
    ``animations_ms``: animations kept running, each screenshot taken that many milliseconds after the load."""
    from PIL import Image, ImageChops

    shots = []
    for markup in (html, html.replace(PAYLOAD.encode(), SWAPPED.encode())):
        page.set_content(markup.decode("utf-8", errors="replace"), wait_until="load")
        if animations_ms is None:
            shot = page.screenshot(full_page=True, animations="disabled")
        else:
            page.wait_for_timeout(animations_ms)
            shot = page.screenshot(full_page=True, animations="allow")
        shots.append(Image.open(io.BytesIO(shot)).convert("RGB"))
    if shots[0].size != shots[1].size:
        return -1, 255
    difference = ImageChops.difference(*shots)
    box = difference.getbbox()
    if box is None:
        return 0, 0
    changed = sum(1 for pixel in difference.crop(box).get_flattened_data() if pixel != (0, 0, 0))
    return changed, max(band[1] for band in difference.getextrema())


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("-k", default="", help="pytest -k expression narrowing the tests")
    arguments.add_argument("--all", action="store_true", help="list every page, not only disagreements")
    arguments.add_argument("--animations", type=int, metavar="MS", default=None,
                           help="keep animations running and screenshot MS milliseconds after the load")
    options = arguments.parse_args()

    import pytest
    from playwright.sync_api import sync_playwright

    recorder = _Recorder()
    pytest_args = ["-q", "-p", "no:cacheprovider", "-m", "not db", TEST_FILE] + (["-k", options.k] if options.k else [])
    pytest.main(pytest_args, plugins=[recorder])
    seen: set[bytes] = set()
    disagreements = 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=os.environ.get("BULKHEAD_CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        print(f"chromium {browser.version}: {len(recorder.pages)} pages hold the payload")
        for test_id, html, kept in recorder.pages:
            if html in seen:
                continue
            seen.add(html)
            changed, level = _drawn(page, html, options.animations)
            visible = changed != 0
            verdict = "agree" if visible == kept else ("LEAK?" if kept else "LOST?")
            disagreements += verdict != "agree"
            if options.all or verdict != "agree":
                print(f"{verdict:6} {'drawn' if visible else 'hidden':6} pixels={changed:<6} max={level:<3} "
                      f"parser={'kept' if kept else 'cut'}  {test_id}")
        browser.close()
    print(f"{len(seen)} distinct pages, {disagreements} disagreements")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
