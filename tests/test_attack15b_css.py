"""Found attacking hidden text, fourteenth session (attack15b): brackets nested thousands deep in a page's CSS -- a
``@media`` condition, an ``:is()`` selector, a declaration's value, a ``style`` attribute, an attribute that
``attr()`` reads -- overflowed the stack in tinycss2's serializer: a RecursionError, which ingestion reports as an
"internal error" with a logged traceback, where a malformed page is an error naming its line
(``ingestion.parsers.css_visibility.MAX_CSS_BRACKETS``)."""

from __future__ import annotations

import pytest

from ingestion.parsers import parse
from ingestion.parsers.css_visibility import MAX_CSS_BRACKETS
from ingestion.structure import ParseError

DEEP = 3000


def _cases(n: int) -> dict[str, str]:
    """Each on line 4 of its page, its brackets ``n`` deep."""
    return {
        "media": f"<style>@media {'(' * n}width>1px{')' * n}{{.x{{display:none}}}}</style><p class=x>secret</p>",
        "selector": f"<style>{':is(' * n}.x{')' * n}{{display:none}}</style><p class=x>secret</p>",
        "value": f"<style>.x{{color:{'a(' * n}1{')' * n}}}</style><p class=x>secret</p>",
        "style attribute": f"<p class=x style=\"color:{'a(' * n}1{')' * n}\">secret</p>",
        "attr()": (f"<style>.x{{color:attr(data-v type(<color>), red)}}</style>"
                   f"<p class=x data-v=\"{'a(' * n}1{')' * n}\">secret</p>"),
    }


CASES = _cases(DEEP)


def _page(body: str) -> bytes:
    return f"<html>\n<head></head>\n<body>\n{body}\n<p>The north gate opens at seven.</p>\n</body></html>".encode()


@pytest.mark.parametrize("name", sorted(CASES))
def test_brackets_nested_too_deep_fail_the_page_with_its_line(name):
    with pytest.raises(ParseError) as raised:
        parse(_page(CASES[name]), content_type="text/html", filename="page.html")
    assert raised.value.line == 4 and f"more than {MAX_CSS_BRACKETS} deep" in str(raised.value), str(raised.value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_brackets_nested_within_the_bound_are_read(name):
    """The same pages a hundred brackets deep are read as before (the value and attributes are colours no browser
    knows: the text stays; the condition holds and the selector matches: it is hidden)."""
    page = _cases(100)[name]
    parsed = parse(_page(page), content_type="text/html", filename="page.html")
    assert "north gate" in parsed.text
    assert ("secret" in parsed.text) is (name not in ("media", "selector")), name
