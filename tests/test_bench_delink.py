"""bench.chunkeval.delink: link targets out of the embedded text (issue 30, eighteenth round: tried and dropped)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from bench.chunkeval.delink import without_link_targets


def test_a_link_keeps_its_text_and_an_image_its_alt():
    assert without_link_targets("See the [Migration Guide](docs/migration.md) first.") == "See the Migration Guide first."
    assert without_link_targets('Read [the docs](https://x.org/d "Docs") now') == "Read the docs now"
    assert without_link_targets("[![Build status](https://ci.example/badge.svg)](https://ci.example/job) ok") == (
        "Build status ok")
    assert without_link_targets("Chat on [gitter][gitter-url] or ![logo][logo-image]") == "Chat on gitter or logo"


def test_definition_and_target_lines_are_dropped():
    text = "Intro words.\n\n[gitter-url]: https://gitter.im/koajs/koa\n  [npm-image]: https://img.shields.io/npm/v/koa.svg\n"
    assert without_link_targets(text) == "Intro words."
    rst = ("Usage\n\n.. image:: https://badge.fury.io/py/x.svg\n.. |ci| image:: https://ci/x.svg\n"
           ".. _docs: https://x.readthedocs.io\n\nSee `the guide <https://x.io/guide>`_ here.")
    assert without_link_targets(rst) == "Usage\n\nSee the guide here."


def test_html_tags_go_and_bare_urls_keep_their_host():
    assert without_link_targets('<a href="https://opencollective.com/koajs/backer/0/website" target="_blank">'
                                '<img src="https://opencollective.com/koajs/backer/0/avatar.svg" alt="Ada"></a> '
                                "Backers") == "Ada Backers"
    assert without_link_targets("Docs live at https://www.djangoproject.com/en/5.2/topics/ for now.") == (
        "Docs live at djangoproject.com for now.")


def test_text_without_links_is_unchanged_and_a_text_of_only_links_is_kept_whole():
    plain = "def f(x):\n    return x * 2  # doubles\n\nA paragraph, with words."
    assert without_link_targets(plain) == plain.replace("    return", " return").replace("  #", " #")
    only = "[![](https://img/a.svg)](https://a)\n[![](https://img/b.svg)](https://b)"
    assert without_link_targets(only) == only


@given(st.lists(st.sampled_from(list("ab [](){}<>!:/._-\"'`|\n") + ["http://", "https://", "alt=", "img"]),
               max_size=40).map("".join))
def test_no_scheme_is_left_and_every_word_of_the_result_came_from_the_text(text):
    out = without_link_targets(text)
    if out != text:
        assert not re.search(r"(?<![A-Za-z0-9])https?://[A-Za-z0-9]", out)  # no URL with a host is left
        assert any(c.isalnum() for c in out)
        for word in re.findall(r"[^\W_]+", out):  # nothing is made up: every run of letters and digits was there
            assert word in text
