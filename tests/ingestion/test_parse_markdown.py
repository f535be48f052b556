"""Markdown parser: structure, access markers (fail closed), tables, lists, code, robustness."""

from __future__ import annotations

import textwrap

import pytest

from accounts.policy import Policy as AccessPolicy
from ingestion.parsers.markdown import parse_markdown
from ingestion.structure import ParseError, resolve_policies
from tests.ingestion.doc_invariants import assert_well_formed

UPLOAD_DEFAULT = AccessPolicy("internal")


def parse(source: str):
    doc = parse_markdown(textwrap.dedent(source).lstrip("\n").encode("utf-8"))
    assert_well_formed(doc)
    return resolve_policies(doc, UPLOAD_DEFAULT)


def texts(doc, section):
    return [doc.text[b.start : b.end] for b in section.blocks]


def by_path(doc, *path, kind="heading"):
    matches = [s for s in doc.sections if s.heading_path == path and s.kind == kind]
    assert len(matches) == 1, [(s.heading_path, s.kind) for s in doc.sections]
    return matches[0]


# Every kind of marker in one short policy document: front matter, a heading marker whose
# sub-headings inherit it, and a region inside a section (docs/formats.md).
SECURITY_POLICY_EXAMPLE = """
    ---
    title: Security policy
    access: internal
    groups: []
    tags: [security]
    ---
    # Security policy
    Intro, internal.

    ## Incident response <!-- access: restricted; groups: security-team -->
    Only the security team. Sub-headings inherit this.

    ### Triage
    Also restricted.

    ## Reporting
    Everyone with internal clearance.

    <!-- access: confidential -->
    A confidential region inside "Reporting": its own section, its own chunks.
    <!-- /access -->

    Back to internal.
"""


def test_security_policy_example():
    doc = parse(SECURITY_POLICY_EXAMPLE)
    assert doc.title == "Security policy"
    assert doc.tags == ("security",)
    assert doc.default_policy == AccessPolicy("internal")
    assert [(s.kind, s.heading_path) for s in doc.sections] == [
        ("document", ()),
        ("heading", ("Security policy",)),
        ("heading", ("Security policy", "Incident response")),
        ("heading", ("Security policy", "Incident response", "Triage")),
        ("heading", ("Security policy", "Reporting")),
        ("region", ("Security policy", "Reporting")),
    ]
    incident = by_path(doc, "Security policy", "Incident response")
    assert incident.title == "Incident response"
    assert incident.line == 10
    assert incident.policy == AccessPolicy("restricted", ("security-team",))
    triage = by_path(doc, "Security policy", "Incident response", "Triage")
    assert triage.policy is None and triage.effective == incident.policy
    reporting = by_path(doc, "Security policy", "Reporting")
    assert texts(doc, reporting) == ["Everyone with internal clearance.", "Back to internal."]
    assert reporting.effective == AccessPolicy("internal")
    region = by_path(doc, "Security policy", "Reporting", kind="region")
    assert region.parent == reporting.key and region.line == 19
    assert region.effective == AccessPolicy("confidential")
    assert texts(doc, region) == ['A confidential region inside "Reporting": its own section, its own chunks.']
    assert doc.text[region.start : region.end].startswith("<!-- access: confidential -->")
    assert doc.text[region.start : region.end].endswith("<!-- /access -->")
    assert doc.groups_used() == {"security-team"}


def test_heading_paths_and_spans():
    doc = parse(
        """
        Preamble.

        # Billing
        ## Refunds
        Text.
        ### Enterprise exceptions
        More.
        ## Invoices
        Setext
        ------
        Body.
        """
    )
    assert [s.heading_path for s in doc.sections] == [
        (),
        ("Billing",),
        ("Billing", "Refunds"),
        ("Billing", "Refunds", "Enterprise exceptions"),
        ("Billing", "Invoices"),
        ("Billing", "Setext"),  # a setext "---" heading is level 2
    ]
    assert texts(doc, doc.root) == ["Preamble."]
    refunds = doc.sections[2]
    assert doc.text[refunds.start : refunds.end] == "## Refunds\nText.\n### Enterprise exceptions\nMore."
    assert [s.depth for s in doc.sections] == [0, 1, 2, 3, 2, 2]
    assert [s.key for s in doc.sections] == ["0", "1", "2", "3", "4", "5"]
    assert doc.title == "Billing"


def test_inline_markup_is_removed_from_titles():
    doc = parse("# The **bold** `code` [link](http://x)\n")
    assert doc.sections[1].title == "The bold code link"


def test_nested_regions():
    doc = parse(
        """
        # A
        <!-- access: confidential -->
        outer
        <!-- access: restricted; groups: legal, hr -->
        inner
        <!-- /access -->
        outer again
        <!-- /access -->
        after
        """
    )
    a, outer, inner = doc.sections[1:]
    assert (outer.kind, outer.parent, inner.parent) == ("region", a.key, outer.key)
    assert texts(doc, a) == ["after"]
    assert texts(doc, outer) == ["outer", "outer again"]
    assert texts(doc, inner) == ["inner"]
    assert inner.effective == AccessPolicy("restricted", ("hr", "legal"))
    assert doc.groups_used() == {"hr", "legal"}


def test_heading_inside_region_is_its_child():
    doc = parse(
        """
        ## Reporting
        <!-- access: confidential -->
        ### Secret
        s
        <!-- /access -->
        ### Public
        p
        """
    )
    reporting, region, secret, public = doc.sections[1:]
    assert secret.parent == region.key and secret.effective == AccessPolicy("confidential")
    assert public.parent == reporting.key and public.effective == AccessPolicy("internal")
    assert secret.heading_path == ("Reporting", "Secret")


def test_markers_in_code_are_text():
    doc = parse(
        """
        # Docs
        Write `<!-- access: restricted -->` to restrict.

        ```
        <!-- access: bogus -->
        <!-- /access -->
        ```

            <!-- access: indented -->

        ## Use `<!-- access: x -->` in headings
        """
    )
    docs = doc.sections[1]
    assert [b.kind for b in docs.blocks] == ["prose", "code", "code"]
    assert all(s.policy is None for s in doc.sections)
    assert doc.sections[2].title == "Use <!-- access: x --> in headings"


def test_table_section():
    doc = parse(
        """
        ## Plans
        Intro.

        | Plan | Seats | SLA |
        |------|------:|-----|
        | Enterprise | unlimited | 99.9% |
        | Free | 1 | |

        Outro.
        """
    )
    plans, table = doc.sections[1:]
    assert texts(doc, plans) == ["Intro.", "Outro."]
    assert (table.kind, table.parent, table.heading_path) == ("table", plans.key, ("Plans",))
    assert texts(doc, table) == ["| Enterprise | unlimited | 99.9% |", "| Free | 1 | |"]
    assert [b.embed_text for b in table.blocks] == [
        "Plan: Enterprise | Seats: unlimited | SLA: 99.9%",
        "Plan: Free | Seats: 1",
    ]
    assert all(b.kind == "table_row" and not b.joinable for b in table.blocks)
    meta = table.metadata["table"]
    assert meta["columns"] == ["Plan", "Seats", "SLA"]
    assert doc.text[meta["start"] : meta["end"]].startswith("| Plan | Seats | SLA |")
    assert doc.text[meta["start"] : meta["end"]].endswith("| Free | 1 | |")


def test_lists_code_and_quotes():
    doc = parse(
        """
        - one
          - nested
        - two

        1. first
        2. second

        > quoted
        > text

        ```python
        x = 1
        ```

            indented code
        """
    )
    assert [(b.kind, doc.text[b.start : b.end]) for b in doc.root.blocks] == [
        ("list_item", "- one\n  - nested"),
        ("list_item", "- two"),
        ("list_item", "1. first"),
        ("list_item", "2. second"),
        ("prose", "> quoted\n> text"),
        ("code", "```python\nx = 1\n```"),
        ("code", "indented code"),
    ]
    assert doc.root.blocks[5].metadata == {"language": "python"}


def test_front_matter_groups_and_no_access_markers():
    doc = parse(
        """
        ---
        access: confidential
        groups: [finance, exec]
        ---
        Body.
        """
    )
    assert doc.default_policy == AccessPolicy("confidential", ("exec", "finance"))
    assert doc.root.effective == doc.default_policy
    assert texts(doc, doc.root) == ["Body."]


def test_front_matter_values_are_json_safe():
    doc = parse("---\ndate: 2024-05-01\ntitle: T\n---\nBody\n")
    assert doc.metadata["front_matter"] == {"date": "2024-05-01", "title": "T"}


def test_policy_attribute_in_code_is_text():
    doc = parse("Use `<div data-access=\"x\">` in HTML files.\n")
    assert len(doc.root.blocks) == 1


def test_thematic_break_is_not_front_matter_when_not_first():
    doc = parse("Text\n\n---\n\nMore\n")
    assert texts(doc, doc.root) == ["Text", "More"]


def test_crlf_and_bom():
    data = "\ufeff# T\r\n\r\nBody\r\n".encode()
    doc = parse_markdown(data)
    assert doc.text == "# T\r\n\r\nBody\r\n"
    assert texts(doc, doc.sections[1]) == ["Body"]


# -- fail closed --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "message", "line"),
    [
        ("# A\n\n## B <!-- access: secret -->\n", "unknown access level 'secret'", 3),
        ("# A\n\n<!-- access: topsecret -->\nx\n<!-- /access -->\n", "unknown access level 'topsecret'", 3),
        ("# A\n\n<!-- access confidential -->\nx\n", "malformed access marker", 3),
        ("# A\n\n<!-- access: confidential; grups: a -->\nx\n<!-- /access -->\n", "malformed access marker", 3),
        ("# A\n<!-- access: confidential\n-->\nx\n<!-- /access -->\n", "malformed access marker", 2),
        ("# A\n\n<!-- access: confidential --> text\n", "malformed access marker", 3),
        ("# A\n\ntext\n\n<!-- access: confidential -->\nx\n", "unterminated access region", 5),
        ("# A\n\ntext\n\n<!-- /access -->\n", "without an open region", 5),
        ("# A\n\n<!-- access: restricted; groups: Security Team! -->\n<!-- /access -->\n", "invalid group name", 3),
        ("## A <!-- access: restricted; groups: a,,b! -->\n", "invalid group name 'b!'", 1),
        ("# A\n\nSome text <!-- access: restricted --> inline.\n", "inside a paragraph", 3),
        ("# A\n\ntext\nmore <!-- /access -->\n", "inside a paragraph", 4),
        ("# A\n\n- item\n\n  <!-- access: restricted -->\n", "inside a list", 5),
        ("# A\n\n> <!-- access: restricted -->\n", "inside a block quote", 3),
        ("| a |\n|---|\n| <!-- access: restricted --> |\n", "inside a table", 3),
        ("## A <!-- access: restricted\n", "malformed access marker in heading", 1),
        ("## A <!-- /access -->\n", "malformed access marker in heading", 1),
        ("## A <!-- access: public --> B\n", "malformed access marker in heading", 1),
        ("## A\n<!-- access: confidential -->\nx\n## B\ny\n<!-- /access -->\n", "would close its enclosing section", 4),
        ("---\naccess: ultra\n---\nBody\n", "unknown access level in front matter 'ultra'", 2),
        ("---\ntitle: x\ngroups: [a]\n---\nBody\n", "'groups' without 'access'", 3),
        ("---\naccess: internal\ngroups: [Bad Group]\n---\n", "invalid group name 'Bad Group'", 3),
        ("---\ntitle: [unclosed\n---\n", "invalid front matter", 3),
        ("---\ntitle: x\n", "unterminated front matter", 1),
        ("# A\n\n<div data-access=\"restricted\">\nsecret\n</div>\n", "do nothing in Markdown", 3),
        ("# A\n\ntext <span data-groups='x'>s</span>\n", "do nothing in Markdown", 3),
        ("- a\n- <b data-access=restricted>s</b>\n", "do nothing in Markdown", 2),
    ],
)
def test_fail_closed(source, message, line):
    with pytest.raises(ParseError) as caught:
        parse_markdown(source.encode())
    assert message in caught.value.message
    assert caught.value.line == line


# -- robustness ---------------------------------------------------------------------


def test_empty_document_has_no_blocks():
    doc = parse("")
    assert len(doc.sections) == 1 and doc.root.blocks == []


@pytest.mark.parametrize(("data", "message"), [(b"\x00\x01binary", "not a text file"), (b"ok \xc3\x28", "byte 3")])
def test_binary_and_invalid_utf8(data, message):
    with pytest.raises(ParseError, match=message):
        parse_markdown(data)


def test_five_megabyte_single_line():
    doc = parse_markdown(("[a](b) *c* `d` " * 350_000).encode())
    assert len(doc.root.blocks) == 1


def test_five_megabyte_heading():
    doc = parse_markdown(("# " + "*a* " * 1_300_000).encode())
    assert len(doc.sections) == 2


def test_ten_thousand_nested_list_levels():
    # Beyond markdown-it's nesting limit the rest of the file stays unparsed inside
    # the top-level item: covered by its block, never lost, never recursed into.
    doc = parse_markdown(("- " * 10_000 + "deep\n\nafter\n").encode())
    assert_well_formed(doc)
    assert [b.kind for b in doc.root.blocks] == ["list_item"]
    assert doc.text[doc.root.blocks[0].start : doc.root.blocks[0].end].endswith("after")


def test_marker_after_too_deep_nesting_fails_closed():
    source = "- " * 100 + "deep\n\n<!-- access: restricted -->\nsecret\n<!-- /access -->\n"
    with pytest.raises(ParseError, match="nested deeper than") as caught:
        parse_markdown(source.encode())
    assert caught.value.line == 3


def test_moderately_nested_list_is_parsed():
    source = "".join("  " * i + "- item\n" for i in range(15)) + "\nafter\n"
    doc = parse_markdown(source.encode())
    assert [b.kind for b in doc.root.blocks] == ["list_item", "prose"]


def test_ten_thousand_nested_quotes():
    doc = parse_markdown(("> " * 10_000 + "deep\n").encode())
    assert_well_formed(doc)
    assert len(doc.root.blocks) == 1


def test_heading_on_every_line():
    doc = parse_markdown("".join(f"{'#' * (1 + i % 6)} H{i}\n" for i in range(10_000)).encode())
    assert_well_formed(doc)
    assert len(doc.sections) == 10_001


def test_ten_thousand_nested_regions():
    source = "<!-- access: confidential -->\nx\n" * 10_000 + "<!-- /access -->\n" * 10_000
    doc = parse_markdown(source.encode())
    assert_well_formed(doc)
    assert len(doc.sections) == 10_001
