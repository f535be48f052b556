"""The console's ``highlight`` filter: query words marked, everything else escaped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from console.templatetags.console import highlight


def test_words_are_marked_and_markup_is_escaped():
    assert highlight("Tom & Jerry <b>", "jerry") == "Tom &amp; <mark>Jerry</mark> &lt;b&gt;"


def test_a_query_word_never_lands_inside_an_entity():
    # Escaping first and marking after would give "&<mark>amp</mark>;", shown as "&amp;".
    assert highlight("R&D", "amp lt gt quot") == "R&amp;D"
    assert highlight("a < b", "lt") == "a &lt; b"


@given(st.text(max_size=60), st.text(max_size=20))
def test_removing_the_marks_gives_the_escaped_text(text, query):
    from django.utils.html import escape

    marked = str(highlight(text, query))
    assert marked.replace("<mark>", "").replace("</mark>", "") == escape(text)


def test_stop_words_are_never_marked():
    # Full-text search leaves them out of a query: marking "of" pointed at nothing that matched.
    assert highlight("the map of the world", "map of the world") == "the <mark>map</mark> of the <mark>world</mark>"
    assert highlight("of and to", "of and to") == "of and to"
