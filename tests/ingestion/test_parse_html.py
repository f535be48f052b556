"""HTML parser: extracted text, structure, data-access policies (fail closed), tables, lists, robustness."""

from __future__ import annotations

import pytest

from accounts.policy import Policy as AccessPolicy
from ingestion.parsers.html import parse_html
from ingestion.structure import ParseError, resolve_policies
from tests.ingestion.doc_invariants import assert_well_formed


def parse(markup: str, encoding: str = "utf-8"):
    doc = parse_html(markup.encode(encoding))
    assert_well_formed(doc)
    return resolve_policies(doc, AccessPolicy("internal"))


def texts(doc, section):
    return [doc.text[b.start : b.end] for b in section.blocks]


PAGE = """<!doctype html>
<html><head><title>Security policy</title><style>p {}</style><script>var x;</script></head>
<body>
<header>Site banner</header><nav><a>Home</a></nav>
<h1>Security policy</h1>
<p>Intro, <b>internal</b>
  text.</p>
<section data-access="restricted" data-groups="security-team">
  <h2>Incident response</h2>
  <p>Only the security team.</p>
  <h3>Triage</h3>
  <p>Also restricted.</p>
</section>
<h2>Reporting</h2>
<p>Everyone.</p>
<div data-access="confidential"><p>A confidential region.</p></div>
<p>Back to internal.</p>
<footer>Copyright</footer>
</body></html>
"""


def test_structure_and_policies():
    doc = parse(PAGE)
    assert doc.title == "Security policy"
    assert "Site banner" not in doc.text and "Home" not in doc.text and "var x" not in doc.text
    assert "Copyright" not in doc.text
    assert [(s.kind, s.heading_path) for s in doc.sections] == [
        ("document", ()),
        ("heading", ("Security policy",)),
        ("heading", ("Security policy", "Incident response")),
        ("heading", ("Security policy", "Incident response", "Triage")),
        ("heading", ("Security policy", "Reporting")),
        ("region", ("Security policy", "Reporting")),
    ]
    top, incident, triage, reporting, region = doc.sections[1:]
    assert texts(doc, top) == ["Intro, internal text."]
    assert incident.policy == AccessPolicy("restricted", ("security-team",))
    assert incident.line == 8  # the <section> that the heading names
    assert triage.effective == incident.policy
    assert texts(doc, reporting) == ["Everyone.", "Back to internal."]
    assert region.effective == AccessPolicy("confidential") and texts(doc, region) == ["A confidential region."]
    assert reporting.effective == AccessPolicy("internal")
    assert doc.text[top.start : top.start + len("Security policy")] == "Security policy"
    assert doc.groups_used() == {"security-team"}


def test_policy_on_heading_covers_its_section():
    doc = parse("<h2 data-access='confidential'>Secret</h2><p>s</p><h3>Deeper</h3><p>d</p><h2>Open</h2><p>o</p>")
    secret, deeper, open_ = doc.sections[1:]
    assert secret.policy == AccessPolicy("confidential")
    assert deeper.effective == AccessPolicy("confidential")
    assert open_.effective == AccessPolicy("internal")


def test_inline_policy_splits_the_paragraph():
    doc = parse("<p>Before <span data-access='restricted'>the secret</span> after.</p>")
    assert texts(doc, doc.root) == ["Before", "after."]
    region = doc.sections[1]
    assert texts(doc, region) == ["the secret"] and region.effective == AccessPolicy("restricted")


def test_nested_regions():
    doc = parse(
        "<div data-access='confidential'><p>outer</p>"
        "<div data-access='restricted' data-groups='legal hr'><p>inner</p></div><p>outer again</p></div>"
    )
    outer, inner = doc.sections[1:]
    assert inner.parent == outer.key
    assert texts(doc, outer) == ["outer", "outer again"]
    assert inner.effective == AccessPolicy("restricted", ("hr", "legal"))


def test_headings_inside_a_container_stay_inside():
    doc = parse("<article><h2>A</h2><p>a</p><h2>B</h2><p>b</p></article><p>after</p>")
    article, b = doc.sections[1:]
    assert article.title == "A" and article.kind == "heading"
    assert b.parent == article.key and b.heading_path == ("A", "B")
    assert texts(doc, doc.root) == ["after"]


def test_lists_pre_and_tables():
    doc = parse(
        "<ul><li>one<ul><li>nested</li></ul></li><li>two</li></ul>"
        "<ol><li>first</li><li>second</li></ol>"
        "<pre>\ncode\n  indented\n</pre>"
        "<table><caption>Plans</caption><thead><tr><th>Plan</th><th>Seats</th></tr></thead>"
        "<tbody><tr><td>Enterprise</td><td>unlimited</td></tr><tr><td>Free</td><td></td></tr></tbody></table>"
    )
    assert [(b.kind, doc.text[b.start : b.end]) for b in doc.root.blocks] == [
        ("list_item", "- one\n  - nested"),
        ("list_item", "- two"),
        ("list_item", "1. first"),
        ("list_item", "2. second"),
        ("code", "code\n  indented"),
    ]
    table = doc.sections[1]
    assert (table.kind, table.title, table.heading_path) == ("table", "Plans", ("Plans",))
    assert texts(doc, table) == ["Enterprise | unlimited", "Free |"]
    assert [b.embed_text for b in table.blocks] == ["Plan: Enterprise | Seats: unlimited", "Plan: Free"]
    meta = table.metadata["table"]
    assert meta["columns"] == ["Plan", "Seats"] and meta["caption"] == "Plans"
    assert doc.text[meta["start"] : meta["end"]] == "Plans\n\nPlan | Seats\n\nEnterprise | unlimited\n\nFree |"


def test_table_without_header_gets_numbered_columns():
    doc = parse("<table><tr><td>a</td><td>b</td></tr></table>")
    assert doc.sections[1].blocks[0].embed_text == "Column 1: a | Column 2: b"


def test_list_item_with_policy():
    doc = parse("<ul><li>open</li><li data-access='confidential'>closed</li></ul>")
    assert texts(doc, doc.root) == ["- open"]
    assert texts(doc, doc.sections[1]) == ["- closed"]


def test_declared_legacy_charset():
    markup = '<html><head><meta charset="windows-1252"></head><body><p>caf\u00e9</p></body></html>'
    doc = parse(markup, encoding="cp1252")
    assert texts(doc, doc.root) == ["caf\u00e9"]


@pytest.mark.parametrize(
    ("markup", "message", "line"),
    [
        ("<p>x</p>\n<div data-access='secret'>y</div>", "unknown data-access level 'secret'", 2),
        ("\n\n<div data-groups='a'>y</div>", "data-groups without data-access", 3),
        ("<div data-access='restricted' data-groups='Bad!'>y</div>", "invalid group name 'Bad!'", 1),
        ("<h2>Title <span data-access='restricted'>x</span></h2>", "inside a heading", 1),
        ("<table>\n<tr><td data-access='restricted'>x</td></tr></table>", "inside a table", 2),
        ("<pre>\n<span data-access='restricted'>x</span></pre>", "inside a pre block", 2),
        ("<p>a</p>\n<!-- access: restricted -->\n<p>b</p>", "use the data-access attribute", 2),
        ("<table><tr><td><!-- /access --></td></tr></table>", "use the data-access attribute", 1),
        ("<div data-access=''>y</div>", "unknown data-access level ''", 1),
    ],
)
def test_fail_closed(markup, message, line):
    with pytest.raises(ParseError) as caught:
        parse_html(markup.encode())
    assert message in caught.value.message
    if line is not None:
        assert caught.value.line == line


def test_empty_and_text_only():
    assert parse("").root.blocks == []
    assert texts(parse("just text"), parse("just text").root) == ["just text"]


def test_binary_is_rejected():
    with pytest.raises(ParseError, match="not a text file"):
        parse_html(b"\x00\x01\x02")


def test_deeply_nested_divs():
    depth = 1_500
    doc = parse("<div>" * depth + "deep <span data-access='restricted'>secret</span>" + "</div>" * depth
                + "<p>after</p>")
    assert texts(doc, doc.root) == ["deep", "after"]
    assert texts(doc, doc.sections[1]) == ["secret"]


@pytest.mark.parametrize("markup", ["<div>" * 10_000 + "x" + "</div>" * 10_000, "<ul><li>x" * 10_000])
def test_ten_thousand_nested_levels_fail_clearly(markup):
    # libxml2 stops at depth 2048 and would drop the rest silently: refuse instead.
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_html(markup.encode())


def test_deeply_nested_lists():
    doc = parse("<ul><li>x" * 900 + "</li></ul>" * 900 + "<p>after</p>")
    assert [b.kind for b in doc.root.blocks] == ["list_item", "prose"]


def test_heading_on_every_line():
    doc = parse("".join(f"<h{1 + i % 6}>H{i}</h{1 + i % 6}>\n" for i in range(10_000)))
    assert len(doc.sections) == 10_001


def test_five_megabyte_single_line():
    doc = parse_html(("<p>" + "word <b>bold</b> " * 300_000 + "</p>").encode())
    assert len(doc.root.blocks) == 1
