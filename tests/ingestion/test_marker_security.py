"""Access markers fail closed and only narrow: regressions for a security review.

Findings covered (each test failed on the parser before the fix):

* #3  YAML alias bombs, anchors, merge keys, huge or deeply nested front matter;
* #6  HTML: content the tree builder moves out of a ``data-access`` element
      (``<p data-access>`` around a list) must not lose the policy;
* #7  markers in formats that have none (Markdown sniffed or uploaded as plain
      text, CSV, code, transcripts, e-mail, PDF, DOCX) fail the document instead of
      being ignored; Markdown content-type aliases reach the Markdown parser;
* #8  a marker can only narrow what encloses it (upload default, front matter,
      parent section); a widening one is a ParseError naming its line;
* #9  near-miss markers (``Access:``, ``<!-- accesss:``, invisible characters,
      ``data-acess``, duplicate front matter keys) fail the document with the line,
      while ordinary prose ("Access control", "accessibility") does not.

The Hypothesis test at the end generates Markdown with nested narrowing, widening
and near-miss markers under a random upload default.
"""

from __future__ import annotations

import io
import textwrap
import time
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from accounts.policy import LEVEL_NAMES as ACCESS_LEVELS
from accounts.policy import Policy as AccessPolicy
from ingestion.parsers import parse
from ingestion.parsers.html import parse_html
from ingestion.parsers.markdown import parse_markdown
from ingestion.parsers.section_tree import LineIndex
from ingestion.structure import ParseError, resolve_policies

INTERNAL = AccessPolicy("internal")
RESTRICTED = AccessPolicy("restricted")
SECRET_SEC = AccessPolicy("restricted", ("sec",))
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"]


def md(source: str, default: AccessPolicy = INTERNAL):
    return resolve_policies(parse_markdown(textwrap.dedent(source).lstrip("\n").encode()), default)


def html(markup: str, default: AccessPolicy = INTERNAL):
    return resolve_policies(parse_html(markup.encode()), default)


def policies_of(doc, needle: str) -> set[AccessPolicy]:
    """Effective policies of every block whose text contains ``needle``."""
    found = {s.effective for s in doc.sections for b in s.blocks if needle in doc.text[b.start : b.end]}
    assert found, f"{needle!r} is in no block"
    return found


def assert_fails(call, line: int | None, *fragments: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        call()
    assert caught.value.line == line, str(caught.value)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    return caught.value


# --------------------------------------------------------------------------- #6 HTML tree builder


@pytest.mark.parametrize(
    ("markup", "line"),
    [
        ('<p data-access="restricted">Keys:<ul><li>secret</li></ul></p>', 1),
        ('<p data-access="restricted">Keys:<ul><li>secret</li></ul>', 1),
        ("<h1>Vault</h1>\n<p>Open.</p>\n<p data-access='restricted'>Keys:\n<ul><li>secret</li></ul>\n</p>", 3),
        ('<p data-access="restricted">Intro<div>secret</div></p>', 1),
        ('<p data-access="restricted">Intro<table><tr><td>secret</td></tr></table></p>', 1),
        ('<p data-access="restricted">Intro<blockquote>secret</blockquote></p>', 1),
        ('<p data-access="restricted">Intro<p>secret</p></p>', 1),
        ('<p data-access="restricted">Intro<h3>secret</h3></p>', 1),
        ('<div>\n<p data-access="restricted" data-groups="sec">Intro<pre>secret</pre></p></div>', 2),
    ],
)
def test_block_content_moved_out_of_a_data_access_element_fails_closed(markup, line):
    assert_fails(lambda: parse_html(markup.encode()), line, "data-access")


def test_unclosed_list_item_with_data_access_is_refused():
    # As written the second item is inside the first; HTML makes it a sibling, without the policy.
    assert_fails(lambda: parse_html(b"<ul>\n<li data-access='restricted'>secret<li>also secret?</ul>"), 2,
                 "Close the element explicitly")


def test_second_body_tag_with_data_access_is_refused():
    # libxml2 drops a second <body> start tag, and its attributes with it.
    assert_fails(lambda: parse_html(b"<body><p>x</p>\n<body data-access='restricted'><p>secret</p></body>"), 2,
                 "not kept as written")


def test_duplicate_data_access_attribute_is_refused():
    # HTML keeps the first of two equal attributes: here the permissive one.
    assert_fails(lambda: parse_html(b"<p>x</p>\n<div data-access='public' data-access='restricted'>secret</div>"), 2,
                 "more than once")


@pytest.mark.parametrize("container", ["p", "span", "a", "b", "em", "label", "li", "dt", "dd", "font", "div"])
@pytest.mark.parametrize("inner", ["ul", "ol", "div", "table", "p", "h3", "blockquote", "pre", "dl", "section"])
@pytest.mark.parametrize("closed", [True, False])
def test_no_block_content_escapes_a_data_access_element(container, inner, closed):
    """Whatever the tree builder does with block content inside a policy element: refused, or still protected."""
    body = {"ul": "<li>secret</li>", "ol": "<li>secret</li>", "table": "<tr><td>secret</td></tr>",
            "dl": "<dt>secret</dt><dd>secret</dd>"}.get(inner, "secret")
    wrapper = {"li": "ul", "dt": "dl", "dd": "dl"}.get(container)
    markup = f"<{container} data-access='restricted'>Intro <{inner}>{body}</{inner}> more secret"
    markup += f"</{container}>" if closed else ""
    if wrapper:
        markup = f"<{wrapper}>{markup}</{wrapper}>"
    markup = f"<p>Open.</p>{markup}<p>Open again.</p>"
    try:
        doc = html(markup)
    except ParseError as exc:
        assert exc.line == 1
        return
    assert policies_of(doc, "secret") == {RESTRICTED}


def test_valid_data_access_elements_are_kept():
    doc = html(
        "<p>Open.</p>\n"
        "<div data-access='restricted'><p>Keys:</p><ul><li>secret one</li></ul></div>\n"
        "<p>Before <span data-access='confidential'>the <b>inline</b> secret</span> after.</p>\n"
        "<ul><li>open item</li><li data-access='confidential'>closed item</li></ul>\n"
        "<section data-access='restricted' data-groups='sec'><h2>Vault</h2><p>vault secret</p></section>\n"
        "<p data-access='restricted'></p>\n"  # explicitly empty; '<p .../>' is refused (F5)
        "<p>Open again.</p>"
    )
    assert policies_of(doc, "secret one") == {RESTRICTED}
    assert policies_of(doc, "inline") == {AccessPolicy("confidential")}
    assert policies_of(doc, "closed item") == {AccessPolicy("confidential")}
    assert policies_of(doc, "vault secret") == {SECRET_SEC}
    assert policies_of(doc, "Open again") == {INTERNAL}


def test_attribute_names_are_case_insensitive_in_html():
    # HTML attribute names have no case: data-Access is data-access (honoured, not ignored).
    doc = html("<p>open</p><div data-Access='restricted' DATA-GROUPS='sec'>secret</div>")
    assert policies_of(doc, "secret") == {SECRET_SEC}


# --------------------------------------------------------------------------- #7 formats without markers

MARKDOWN = b"# Notes\n\nOpen part.\n\n## Keys <!-- access: restricted; groups: sec -->\n\nsecret\n"


@pytest.mark.parametrize(
    ("content_type", "filename"),
    [(None, None), (None, "notes"), ("text/plain", None), (None, "notes.txt"), ("text/plain", "notes.md"),
     ("application/octet-stream", "notes.txt"), ("text/x-rst", None), ("text/x-log", None)],
)
def test_markdown_markers_in_plain_text_fail(content_type, filename):
    assert_fails(lambda: parse(MARKDOWN, content_type=content_type, filename=filename), 5,
                 "only read in Markdown and HTML", "text/markdown")


@pytest.mark.parametrize(
    ("content_type", "filename"),
    [("text/md", None), ("text/x-markdown", None), ("text/x-md", None), ("text/markdown; charset=utf-8", None),
     ("TEXT/MD", None), ("application/x-markdown", None), (None, "notes.mdown"), (None, "notes.mkd")],
)
def test_markdown_aliases_reach_the_markdown_parser(content_type, filename):
    doc = resolve_policies(parse(MARKDOWN, content_type=content_type, filename=filename), INTERNAL)
    assert policies_of(doc, "secret") == {SECRET_SEC}
    assert policies_of(doc, "Open part") == {INTERNAL}


def _docx(*paragraphs: str) -> bytes:
    import docx

    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def _pdf(*lines: str) -> bytes:
    """A one-page PDF showing ``lines`` (Helvetica, one text object)."""
    content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


M = "<!-- access: restricted -->"
NON_MARKER_FORMATS = {
    "csv": (f'name,note\nx,"{M}"\ny,secret\n'.encode(), "text/csv", None),
    "tsv": (f"name\tnote\nx\t{M}\ny\tsecret\n".encode(), "text/tab-separated-values", None),
    "python": (f'"""Module."""\n\n# {M}\nSECRET = 1\n'.encode(), "text/x-python", None),
    "webvtt": (f"WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n{M}\n\n00:00:01.000 --> 00:00:02.000\nsecret\n".encode(),
               "text/vtt", None),
    "srt": (f"1\n00:00:00,000 --> 00:00:01,000\n{M}\n\n2\n00:00:01,000 --> 00:00:02,000\nsecret\n".encode(),
            None, "talk.srt"),
    "transcript": (f"Alice: hello\nBob: {M}\nAlice: secret\n".encode(), "text/x-transcript", None),
    "eml": (f"From: a@example.com\nTo: b@example.com\nSubject: S\n\n{M}\nsecret\n".encode(), "message/rfc822", None),
    "eml-html": (f"From: a@example.com\nSubject: S\nContent-Type: text/html\n\n<p>hi</p>{M}<p>secret</p>\n".encode(),
                 "message/rfc822", None),
    "mbox": (f"From a@example.com Mon Jan  1 00:00:00 2024\nFrom: a@example.com\nSubject: S\n\n{M}\nsecret\n".encode(),
             "application/mbox", None),
    "docx": (_docx("Intro", M, "secret"), None, "notes.docx"),
    "pdf": (_pdf("Intro text.", M, "secret"), None, None),
    "html-fragment-as-text": (b"<p>Open</p>\n<div data-access='restricted'>secret</div>\n", "text/plain", None),
    "front-matter-as-text": (b"---\ntitle: Keys\naccess: restricted\n---\nsecret\n", None, "keys.txt"),
    "near-miss-as-text": (b"Open.\n\n<!-- acess: restricted -->\nsecret\n", "text/plain", None),
    "invisible-as-text": ("Open.\n\n<!-- ac\u200bcess: restricted -->\nsecret\n".encode(), "text/plain", None),
}


@pytest.mark.parametrize("name", sorted(NON_MARKER_FORMATS))
def test_markers_in_formats_without_markers_fail(name):
    data, content_type, filename = NON_MARKER_FORMATS[name]
    with pytest.raises(ParseError) as caught:
        parse(data, content_type=content_type, filename=filename)
    assert caught.value.line is not None
    assert "only read in Markdown and HTML" in caught.value.message


@pytest.mark.parametrize(
    ("data", "content_type"),
    [
        (b"Access control is enforced per section.\nThe accessibility review was accessed twice.\n"
         b"<!-- a plain comment -->\nAccess: granted to everyone.\n", "text/plain"),
        (b"access = request.user.access\ndata_access = load()\ngroups = []\n", "text/x-python"),
        (b"name,access,groups\nalice,restricted,sec\n", "text/csv"),
        (b"if a<b and access: pass\nList<String> groups = x;\n", "text/plain"),
    ],
)
def test_ordinary_text_in_formats_without_markers_passes(data, content_type):
    doc = parse(data, content_type=content_type)
    # Kept as text, every line of it, and read as no marker: no section or document policy.
    for line in data.decode().splitlines():
        assert line in doc.text
    assert doc.default_policy is None
    assert all(s.policy is None and s.effective is None for s in doc.sections)


# --------------------------------------------------------------------------- #8 markers only narrow


def test_front_matter_cannot_widen_the_upload_default():
    source = "---\ntitle: Keys\naccess: public\n---\n# Keys\n\nsecret\n"
    error = assert_fails(lambda: md(source, SECRET_SEC), 3, "would widen access", "markers can only narrow")
    assert str(error) == (
        "line 3: front matter 'access: public' would widen access from the upload's 'restricted (groups: sec)' "
        "-- markers can only narrow"
    )


@pytest.mark.parametrize(
    "front_matter",
    ["access: restricted", "access: restricted\ngroups: [sec, legal]", "access: confidential\ngroups: [sec]",
     "access: restricted\ngroups: [legal]"],
)
def test_front_matter_cannot_widen_groups(front_matter):
    assert_fails(lambda: md(f"---\n{front_matter}\n---\nsecret\n", SECRET_SEC), 2, "would widen access")


def test_heading_marker_cannot_widen_its_parent():
    source = """
        # Vault <!-- access: restricted; groups: sec -->

        secret

        ## Lobby <!-- access: public -->

        leaked?
    """
    error = assert_fails(lambda: md(source), 5)
    assert str(error) == ("line 5: marker 'access: public' would widen access from 'restricted (groups: sec)' "
                          "-- markers can only narrow")


def test_nested_region_cannot_widen_the_outer_region():
    source = """
        Open.

        <!-- access: restricted; groups: sec -->
        secret
        <!-- access: restricted; groups: sec, legal -->
        leaked to legal?
        <!-- /access -->
        <!-- /access -->
    """
    assert_fails(lambda: md(source), 5, "would widen access from 'restricted (groups: sec)'")


def test_top_level_marker_cannot_widen_the_upload_default():
    assert_fails(lambda: md("Open.\n\n<!-- access: internal -->\nx\n<!-- /access -->\n", AccessPolicy("confidential")),
                 3, "would widen access from 'confidential'")
    assert_fails(lambda: md("# T <!-- access: restricted -->\n\nx\n", SECRET_SEC), 1, "would widen")


def test_marker_cannot_widen_front_matter():
    source = "---\naccess: confidential\n---\n# T\n\n## U <!-- access: internal -->\n\nx\n"
    assert_fails(lambda: md(source), 6, "would widen access from 'confidential'")


def test_html_data_access_cannot_widen_its_parent():
    markup = "<p>open</p>\n<div data-access='restricted'>\n<p>secret</p>\n<p data-access='public'>leak?</p>\n</div>"
    assert_fails(lambda: html(markup), 4, "would widen access from 'restricted'")


def test_narrowing_and_equal_markers_are_allowed():
    source = """
        ---
        access: confidential
        groups: [sec, legal]
        ---
        # Top <!-- access: confidential; groups: sec, legal -->

        top

        ## Legal <!-- access: restricted; groups: legal -->

        legal only

        <!-- access: restricted; groups: legal -->
        same again
        <!-- /access -->
    """
    doc = md(source, AccessPolicy("internal"))
    assert doc.default_policy_line == 2
    assert policies_of(doc, "top") == {AccessPolicy("confidential", ("legal", "sec"))}
    assert policies_of(doc, "legal only") == {AccessPolicy("restricted", ("legal",))}
    assert policies_of(doc, "same again") == {AccessPolicy("restricted", ("legal",))}
    by_title = {s.title: s for s in doc.sections}
    assert by_title["Legal"].line == 9
    region = next(s for s in doc.sections if s.kind == "region")
    assert region.line == 13


# --------------------------------------------------------------------------- #9 near misses


@pytest.mark.parametrize(
    "key", ["Access", "ACCESS", "acces", "accesss", "acess", "aсcess", "ac\u200bcess", "access_level", "accessLevel"]
)
def test_near_miss_front_matter_access_key_fails(key):
    source = f"---\ntitle: Keys\n{key}: restricted\n---\nsecret\n"
    assert_fails(lambda: md(source), 3, repr(key))


@pytest.mark.parametrize("key", ["Groups", "group", "GROUPS", "grups"])
def test_near_miss_front_matter_groups_key_fails(key):
    source = f"---\naccess: restricted\n{key}: [sec]\n---\nsecret\n"
    assert_fails(lambda: md(source, RESTRICTED), 3, repr(key))


@pytest.mark.parametrize(
    "marker",
    ["<!-- accesss: restricted -->", "<!-- acess: restricted -->", "<!-- acces: restricted -->",
     "<!-- Acess: restricted -->", "<!--ACCES:restricted-->", "<!-- aсcess: restricted -->"]
    + [f"<!-- ac{char}cess: restricted -->" for char in INVISIBLE]
    + [f"<!--{char} access: restricted -->" for char in INVISIBLE]
    + [f"<!-- access: restricted{char} -->" for char in INVISIBLE],
)
def test_near_miss_region_marker_fails(marker):
    source = f"# Notes\n\nOpen.\n\n{marker}\nsecret\n<!-- /access -->\n"
    assert_fails(lambda: md(source), 5)


@pytest.mark.parametrize(
    "marker", ["<!-- acess: restricted -->", "<!-- access\u200b: restricted -->", "<!-- ACCESSS: restricted -->"]
)
def test_near_miss_heading_marker_fails(marker):
    source = f"# Notes\n\nOpen.\n\n## Keys {marker}\n\nsecret\n"
    assert_fails(lambda: md(source), 5)


@pytest.mark.parametrize(
    "marker", ["<!\u2014 access: restricted \u2014>", "<!\u2013access: restricted\u2013>", "<!--- access: restricted -->",
               "<!- access: restricted ->"],
)
def test_dash_variants_of_a_marker_fail(marker):
    # Word processors turn "<!--" into "<!—": no longer a comment, so the marker would be plain text.
    assert_fails(lambda: md(f"# Notes\n\nOpen.\n\n{marker}\nsecret\n"), 5)
    assert_fails(lambda: md(f"# Notes\n\nOpen.\n\n## Keys {marker}\n\nsecret\n"), 5)
    assert_fails(lambda: parse(f"Open.\n{marker}\nsecret\n".encode(), content_type="text/plain"), 2)


# Padding between "<!--" and the marker's first word, longer than the window a marker's word was
# once looked for in (80 characters from the opener): the marker was then read as a plain comment.
PADDINGS = [" " * 90, "\t" * 81, " " * 79 + "\t" * 40, "&nbsp;" * 20, "\u200b" * 81, "-" * 100]


@pytest.mark.parametrize("padding", PADDINGS)
def test_a_padded_marker_is_applied_or_fails_but_never_ignored(padding):
    heading = f"# Handbook\n\nintro\n\n## Merger <!--{padding}access: restricted -->\n\nsecret\n"
    region = f"# Handbook\n\nintro\n\n<!--{padding}access: restricted -->\nsecret\n<!--{padding}/access -->\n"
    for source, line in ((heading, 5), (region, 5)):
        try:
            doc = md(source)
        except ParseError as error:
            assert error.line == line, (padding, error)
        else:
            assert policies_of(doc, "secret") == {RESTRICTED}, padding
    # Where markers are not read, a padded one fails the document as an unpadded one does.
    assert_fails(lambda: parse(f"open\n<!--{padding}access: restricted -->\nsecret\n".encode(),
                               content_type="text/plain"), 2)
    assert_fails(lambda: parse_html(f"<p>open</p>\n<!--{padding}access: restricted --><p>secret</p>".encode()), 2)


def test_near_miss_closing_marker_fails():
    source = "<!-- access: restricted -->\nsecret\n<!-- /acess -->\n<!-- /access -->\n"
    assert_fails(lambda: md(source), 3)


def test_near_miss_in_a_paragraph_fails():
    assert_fails(lambda: md("Open text <!-- acess: restricted --> more.\n"), 1)


@pytest.mark.parametrize(
    "attribute",
    ["data-acess", "data-accesss", "data-aces", "data-acces", "data_access", "access", "acess",
     "data-access-level", "data-ac\u200bcess"],
)
def test_near_miss_html_access_attribute_fails(attribute):
    markup = f"<p>open</p>\n<div {attribute}='restricted'>secret</div>"
    assert_fails(lambda: parse_html(markup.encode()), 2, "looks like an access attribute")


@pytest.mark.parametrize("attribute", ["data-group", "data-grups", "groups", "group", "data-groups-allowed"])
def test_near_miss_html_groups_attribute_fails(attribute):
    markup = f"<p>open</p>\n<div data-access='restricted' {attribute}='sec'>secret</div>"
    assert_fails(lambda: parse_html(markup.encode()), 2, "looks like an access attribute")


@pytest.mark.parametrize("comment", ["<!-- acess: restricted -->", "<!-- ac\u200bcess: restricted -->"])
def test_near_miss_html_comment_fails(comment):
    assert_fails(lambda: parse_html(f"<p>a</p>\n{comment}\n<p>b</p>".encode()), 2, "use the data-access attribute")


def test_near_miss_attribute_in_markdown_raw_html_fails():
    assert_fails(lambda: md("# A\n\n<div data-acess='restricted'>\nsecret\n</div>\n"), 3, "do nothing in Markdown")


def test_duplicate_front_matter_key_fails():
    source = "---\naccess: restricted\ntitle: Keys\naccess: public\n---\nsecret\n"
    assert_fails(lambda: md(source), 4, "duplicate key 'access'")


@pytest.mark.parametrize("value", ["3", "yes", "[restricted]", "{level: restricted}", "", "null"])
def test_front_matter_access_must_be_a_string(value):
    assert_fails(lambda: md(f"---\naccess: {value}\n---\nsecret\n"), 2)


@pytest.mark.parametrize("prefix", ["\n", "\u200b", " \n\n", "\ufeff\n"])
def test_front_matter_not_on_the_first_line_with_an_access_key_fails(prefix):
    source = f"{prefix}---\naccess: restricted\n---\n# Keys\n\nsecret\n"
    with pytest.raises(ParseError) as caught:
        parse_markdown(source.encode())
    assert caught.value.line == LineIndex(source).line_of(source.index("access")) + 1


def test_ordinary_prose_is_not_a_near_miss():
    source = """
        ---
        title: Access control
        accessibility: AA
        tags: [access, groups]
        ---
        # Access control

        Access control is enforced per section. The accessibility audit accessed
        every page; acces and acess are typos in prose, not markers.

        Access: granted.

        <!-- accessibility notes: none -->
        <!-- TODO: review -->

        ```
        <!-- acess: restricted -->
        ```

        Inline `<!-- accesss: x -->` is code.
    """
    doc = md(source)
    assert {s.effective for s in doc.sections} == {INTERNAL}


def test_ordinary_html_attributes_are_not_near_misses():
    doc = html("<form><input accept='image/*' accesskey='s'></form>"
               "<div data-action='x' data-grid='y' class='access' title='groups'>fine</div>")
    assert policies_of(doc, "fine") == {INTERNAL}


def test_edit_distance():
    from ingestion.parsers.access_markers import edit_distance

    assert edit_distance("access", "access") == 0
    assert edit_distance("acess", "access") == 1
    assert edit_distance("acecss", "access") == 1  # transposition
    assert edit_distance("aces", "access") == 2
    assert edit_distance("accessibility", "access") == 3  # capped at limit + 1


# --------------------------------------------------------------------------- #3 YAML front matter


def _laughs(depth: int) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, depth):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "---\n" + "\n".join(lines) + "\n---\n# Doc\n"


def test_yaml_alias_bomb_is_refused_fast():
    # Depth 6 is ~500k strings before the fix (depth 9 was a MemoryError); refused outright now.
    started = time.monotonic()
    assert_fails(lambda: parse_markdown(_laughs(6).encode()), 2, "YAML aliases are not allowed in front matter")
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize(
    ("front_matter", "line", "message"),
    [
        ("title: &t Keys\naccess: internal", 2, "aliases are not allowed"),
        ("base: {access: public}\nother: *x", 3, "aliases are not allowed"),
        ("<<: {access: public}\naccess: restricted", 2, "merge keys"),
        ("tags:\n  - a\n  - &b b", 4, "aliases are not allowed"),
    ],
)
def test_yaml_anchors_aliases_and_merge_keys_are_refused(front_matter, line, message):
    assert_fails(lambda: parse_markdown(f"---\n{front_matter}\n---\nx\n".encode()), line, message)


def test_front_matter_size_is_bounded():
    source = "---\ntitle: big\nnotes: " + "x" * (70 * 1024) + "\n---\n# Doc\n"
    assert_fails(lambda: parse_markdown(source.encode()), 1, "larger than 64 KB")


def test_deeply_nested_front_matter_is_refused():
    source = "---\nx: " + "[" * 5000 + "]" * 5000 + "\n---\n# Doc\n"
    assert_fails(lambda: parse_markdown(source.encode()), 2, "nested deeper")


# --------------------------------------------------------------------------- property test

GROUPS = ["sec", "legal", "hr"]
POLICIES = st.builds(
    AccessPolicy,
    level=st.sampled_from(ACCESS_LEVELS),
    groups=st.lists(st.sampled_from(GROUPS), max_size=2, unique=True).map(tuple),
)
NEAR_MISS_WORDS = ["accesss", "acess", "acces", "Acess", "ACCES", "aсcess"] + [f"ac{c}cess" for c in INVISIBLE]
NEAR_MISS_KEYS = ["Access", "ACCESS", "acess", "accesss", "access_level", "ac\u200bcess"]
PROSE = st.sampled_from([
    "Access control is enforced.", "The accessibility review.", "Files were accessed.", "Access: for everyone.",
    "groups of people", "alpha beta", "refund policy", "acces is a typo here",
])


def spec(policy: AccessPolicy) -> str:
    return f"{policy.level}; groups: {', '.join(policy.groups)}" if policy.groups else policy.level


@dataclass
class Generated:
    upload_default: AccessPolicy
    lines: list[str] = field(default_factory=list)
    first_near_miss: int | None = None  # 1-based line
    first_widening: int | None = None  # 1-based line
    expected: dict[int, AccessPolicy] = field(default_factory=dict)  # 0-based content line -> policy

    def add(self, line: str, *, policy: AccessPolicy | None = None) -> int:
        if policy is not None:
            self.expected[len(self.lines)] = policy
        self.lines.append(line)
        return len(self.lines)  # its 1-based number

    def near_miss(self, line: int) -> None:
        if self.first_near_miss is None:
            self.first_near_miss = line

    def widening(self, line: int) -> None:
        if self.first_widening is None:
            self.first_widening = line


@st.composite
def marker_policy(draw: st.DrawFn, outer: AccessPolicy) -> AccessPolicy:
    """Mostly narrower-or-equal policies, sometimes any (which may widen)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(POLICIES)
    level = draw(st.sampled_from(ACCESS_LEVELS[ACCESS_LEVELS.index(outer.level) :]))
    pool = list(outer.groups) or GROUPS
    groups = draw(st.lists(st.sampled_from(pool), min_size=1 if outer.groups else 0, max_size=2, unique=True))
    return AccessPolicy(level, tuple(groups))


@st.composite
def documents(draw: st.DrawFn) -> Generated:
    doc = Generated(upload_default=draw(POLICIES))
    default = doc.upload_default
    if draw(st.booleans()):
        doc.add("---")
        doc.add("title: Generated")
        if draw(st.integers(0, 4)) == 0:
            doc.near_miss(doc.add(f"{draw(st.sampled_from(NEAR_MISS_KEYS))}: restricted"))
        else:
            policy = draw(marker_policy(doc.upload_default))
            line = doc.add(f"access: {policy.level}")
            doc.add(f"groups: [{', '.join(policy.groups)}]")
            if not policy.implies(doc.upload_default):
                doc.widening(line)
            default = policy
        doc.add("---")
    stack: list[tuple[str, int, AccessPolicy | None]] = []

    def effective() -> AccessPolicy:
        return next((policy for _, _, policy in reversed(stack) if policy is not None), default)

    def heading_level() -> int:
        return next((level for kind, level, _ in reversed(stack) if kind == "heading"), 0)

    def floor() -> int:
        return next((level for kind, level, _ in reversed(stack) if kind == "region"), 0)

    def word() -> tuple[str, bool]:
        if draw(st.integers(0, 9)) == 0:
            return draw(st.sampled_from(NEAR_MISS_WORDS)), True
        return "access", False

    for number in range(draw(st.integers(1, 20))):
        choice = draw(st.sampled_from(["heading", "prose", "prose", "region", "close", "code"]))
        if choice == "heading" and floor() < 6:
            level = draw(st.integers(floor() + 1, 6))
            while stack and stack[-1][0] == "heading" and stack[-1][1] >= level:
                stack.pop()
            policy = draw(st.none() | marker_policy(effective()))
            suffix, near = "", False
            if policy is not None:
                name, near = word()
                suffix = f" <!-- {name}: {spec(policy)} -->"
            line = doc.add(f"{'#' * level} Heading {number}{suffix}")
            if near:
                doc.near_miss(line)
            elif policy is not None and not policy.implies(effective()):
                doc.widening(line)
            stack.append(("heading", level, policy))
        elif choice == "prose":
            doc.add(f"p{number} {draw(PROSE)}", policy=effective())
        elif choice == "code":
            doc.add("```")
            doc.add(f"<!-- {draw(st.sampled_from(NEAR_MISS_WORDS))}: public -->")
            doc.add("```")
        elif choice == "region":
            policy = draw(marker_policy(effective()))
            name, near = word()
            line = doc.add(f"<!-- {name}: {spec(policy)} -->")
            if near:
                doc.near_miss(line)
            elif not policy.implies(effective()):
                doc.widening(line)
            stack.append(("region", heading_level(), policy))
        elif choice == "close" and any(kind == "region" for kind, _, _ in stack):
            while stack[-1][0] != "region":
                stack.pop()
            stack.pop()
            name, near = word()
            line = doc.add(f"<!-- /{name} -->")
            if near:
                doc.near_miss(line)
        doc.add("")
    while any(kind == "region" for kind, _, _ in stack):
        while stack[-1][0] != "region":
            stack.pop()
        stack.pop()
        doc.add("<!-- /access -->")
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_markers_fail_closed_or_only_narrow(generated: Generated):
    source = "\n".join(generated.lines) + "\n"
    event("near miss" if generated.first_near_miss else "widening" if generated.first_widening else "valid")
    try:
        doc = resolve_policies(parse_markdown(source.encode()), generated.upload_default)
    except ParseError as exc:
        assert exc.line is not None, str(exc)
        expected_line = generated.first_near_miss or generated.first_widening
        assert expected_line is not None, f"unexpected error {exc} in\n{source}"
        assert exc.line == expected_line, f"{exc} (expected line {expected_line}) in\n{source}"
        if generated.first_near_miss is None:
            assert "would widen access" in exc.message
        return
    assert generated.first_near_miss is None, f"near miss on line {generated.first_near_miss} accepted:\n{source}"
    assert generated.first_widening is None, f"widening on line {generated.first_widening} accepted:\n{source}"
    by_key = {s.key: s for s in doc.sections}
    assert doc.root.effective.implies(generated.upload_default)
    for section in doc.sections[1:]:
        assert section.effective.implies(by_key[section.parent].effective), (section.key, source)
    lines = LineIndex(doc.text)
    for section in doc.sections:
        for block in section.blocks:
            for line in range(lines.line_of(block.start), lines.line_of(block.end - 1) + 1):
                if line in generated.expected:
                    assert section.effective == generated.expected[line], (line + 1, source)


# --------------------------------------------------------------------------- demo attack F4..F7


@pytest.mark.parametrize(
    "source",
    [
        '+++\naccess = "restricted"\n+++\nsecret\n',
        "--- # meta\naccess: restricted\n---\nsecret\n",
        "----\naccess: restricted\n----\nsecret\n",
        "+++ toml\ngroups = [\"sec\"]\n+++\nsecret\n",
        "---  meta\nAccess: restricted\n---\nsecret\n",
    ],
)
def test_f4_unrecognised_front_matter_with_an_access_key_fails(source):
    assert_fails(lambda: md(source), 2, "front matter must be YAML between lines of exactly '---'")


@pytest.mark.parametrize(
    ("front_matter", "line"),
    [
        ("meta:\n  access: restricted\n", 3),
        ("title: Keys\nmeta:\n  deeper:\n    groups: [sec]\n", 5),
        ("items:\n  - name: x\n    Access: restricted\n", 4),
        ("meta: {access: restricted}\n", 2),
    ],
)
def test_f4_nested_access_key_in_front_matter_fails(front_matter, line):
    assert_fails(lambda: md(f"---\n{front_matter}---\nsecret\n"), line)


def test_f4_valid_front_matter_still_works():
    doc = md("---\ntitle: Keys\nmeta:\n  owner: ops\naccess: restricted\n---\nsecret\n")
    assert policies_of(doc, "secret") == {RESTRICTED}
    assert policies_of(md("----\n\nsecret\n"), "secret") == {INTERNAL}


@pytest.mark.parametrize(
    "markup",
    [
        '<div data-access="restricted"/><p>SECRET</p>',
        '<section data-access="restricted" /><p>SECRET</p></section>',
        '<p>x</p>\n<span data-groups="sec" data-access="restricted"/>SECRET',
    ],
)
def test_f5_self_closing_policy_element_fails(markup):
    line = markup[: markup.index("data-")].count("\n") + 1
    assert_fails(lambda: html(markup), line, "self-closing", "close the element explicitly")


@pytest.mark.parametrize("markup", ['<img data-access="restricted" src="x.png"><p>SECRET</p>',
                                    '<br data-access="restricted"/>SECRET', '<hr data-access="restricted">'])
def test_f5_policy_on_a_void_element_fails(markup):
    assert_fails(lambda: html(markup), 1, "holds no text")


@pytest.mark.parametrize(
    "marker",
    [
        "<!-&#45; access: restricted -->",
        "<!&#45;&#45; access: restricted -->",
        "<!-&#x2d; access: restricted -->",
        "<!-&dash; access: restricted -->",
        "&lt;!-- access: restricted -->",
        "<![CDATA[ access: restricted ]]>",
        "\uff1c!-- access: restricted --\uff1e",
        "\uff1c\uff01-- access: restricted --\uff1e",
    ],
)
def test_f6_encoded_and_full_width_marker_look_alikes_fail(marker):
    source = f"# Keys\n\n{marker}\nSECRET\n"
    assert_fails(lambda: md(source), 3)


def test_f6_ordinary_prose_with_entities_is_not_a_marker():
    doc = md("# Keys\n\nAT&amp;T access &lt;b&gt; and &#45; dashes; <![CDATA[ x < y ]]>\n\nfull\uff1cwidth\n")
    assert policies_of(doc, "AT&amp;T") == {INTERNAL}


@pytest.mark.parametrize(
    "markup",
    [
        '<launch-code-4821 data-access="restricted" data-access="public">x</launch-code-4821>',
        '<launch-code-4821 data-groups="sec">x</launch-code-4821>',
        '<launch-code-4821 data-access="restricted"/>x',
        '<p data-access="restricted">Keys:<launch-code-4821>x</launch-code-4821><ul><li>s</li></ul></p>',
        '<launch-code-4821 data-acess="restricted">x</launch-code-4821>',
    ],
)
def test_f7_html_errors_quote_document_tag_names(markup):
    from kb.serializers import safe_error

    with pytest.raises(ParseError) as caught:
        parse_html(markup.encode())
    safe = safe_error(str(caught.value))
    assert "launch-code" not in safe and "4821" not in safe, safe
    assert "line 1" in safe, safe


@pytest.mark.parametrize("where", ['<html data-access="restricted"><head>', '<html data-groups="sec" data-access="restricted"><head>'])
def test_an_html_title_under_a_policy_is_not_the_documents_title(where):
    """A document's title is shown to every reader of any of its sections; a <title> inside an element
    with a policy belongs to that policy (found by an attack: it was the title for everyone). A policy on
    ``<head>`` or ``<title>`` itself now fails the document (test_marker_lookalikes.py: never indexed)."""
    opened = where + ("" if where.endswith("<title data-access=\"confidential\">") else "<title>")
    doc = parse_html(f"{opened}Project Falcon layoffs</title></head><body><p>body</p></body></html>".encode())
    assert doc.title in (None, "")
    assert parse_html(b"<html><head><title>Opening hours</title></head><body><p>x</p></body></html>").title == \
        "Opening hours"


@pytest.mark.parametrize("marker", ["<!access: restricted -->", "<! -- access: restricted -->",
                                    "< !-- access: restricted -->", "<!  access: restricted -->"])
def test_a_marker_without_its_dashes_or_with_spaces_in_its_opener_fails(marker):
    """Not comments in Markdown (shown as text, or as nothing: HTML's "bogus comment"), so the marker
    would have been plain text with the upload's access (found by an attack)."""
    assert_fails(lambda: md(f"# Notes\n\nOpen.\n\n{marker}\n\nsecret\n"), 5)
    assert_fails(lambda: md(f"# Notes\n\nOpen.\n\n## Keys {marker}\n\nsecret\n"), 5)


@pytest.mark.parametrize("link", ['[a](x "<!-- access: restricted -->")', "[x](<!-- access: restricted -->)",
                                  "![<!-- access: restricted -->](x.png)", '[a](x "&lt;!-- access: restricted -->")'])
def test_a_marker_inside_link_syntax_fails(link):
    """markdown-it keeps a link's title and destination out of the inline text: a marker there was
    neither applied nor refused (found by an attack)."""
    assert_fails(lambda: md(f"# Notes\n\nOpen.\n\n## Keys {link}\n\nsecret\n"), 5)
    assert_fails(lambda: md(f"# Notes\n\nOpen {link} secret.\n"), 3)


def test_a_marker_inside_a_code_span_is_text():
    doc = md("# Notes\n\nWrite `<!-- access: restricted -->` alone on its line.\n")
    assert policies_of(doc, "alone on its line") == {INTERNAL}


@pytest.mark.parametrize("attribute", ["xml:data-access", "xlink:data-access", "data&#45;access", "svg:data-groups"])
def test_a_prefixed_or_encoded_policy_attribute_fails(attribute):
    markup = f"<p>open</p>\n<div {attribute}='restricted'>secret</div>"
    assert_fails(lambda: parse_html(markup.encode()), 2, "looks like an access attribute")


@pytest.mark.parametrize("element", ["xmp", "plaintext", "textarea"])
def test_markup_shown_as_text_holding_a_policy_fails(element):
    for inner in ('<div data-access="restricted">secret</div>', "<!-- access: restricted -->secret"):
        markup = f"<p>open</p>\n<{element}>{inner}</{element}>"
        assert_fails(lambda: parse_html(markup.encode()), 2, "shows markup as text")  # noqa: B023
