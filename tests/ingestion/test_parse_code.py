"""Python source parser: a real stdlib module (golden), sections per def/class, context, fallback.

Golden files are regenerated only with ``BULKHEAD_REGENERATE_GOLDEN=1`` (see golden_files.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from ingestion.parsers import parse
from ingestion.parsers.code import parse_python
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.golden_files import assert_matches_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "code"
TEXTWRAP = FIXTURES / "textwrap.py"

SOURCE = b'''"""Billing helpers."""
import os
import re
from decimal import Decimal as D

RATE = D("0.2")


# Refunds are capped per plan.
@cache
@other(
    "arg",
)
def refund(amount, plan="basic"):
    # the cap
    cap = D(os.environ.get("CAP", "100"))

    if amount > cap:
        return cap
    return amount


class Invoice(Base, metaclass=Meta):
    """An invoice."""

    currency = "EUR"

    def total(self):
        return sum(self.lines)

    async def send(self, to): await to.push(self)

    class Line:
        def price(self):
            return re.sub("x", "", self.raw)


if __name__ == "__main__":
    print(refund(3))
'''


def test_real_module_matches_golden_and_invariants():
    doc = parse_python(TEXTWRAP.read_bytes(), filename="textwrap.py")
    assert_well_formed(doc)
    assert_matches_golden(doc, TEXTWRAP)
    assert doc.text == TEXTWRAP.read_text(encoding="utf-8")  # offsets point into the file itself


def test_sections_per_definition_with_heading_paths_and_kinds():
    doc = parse(SOURCE, filename="billing.py")
    assert_well_formed(doc)
    paths = [(s.kind, s.heading_path) for s in doc.sections[1:]]
    assert paths == [
        ("function", ("billing.py", "refund")),
        ("class", ("billing.py", "Invoice")),
        ("function", ("billing.py", "Invoice", "total")),
        ("function", ("billing.py", "Invoice", "send")),
        ("class", ("billing.py", "Invoice", "Line")),
        ("function", ("billing.py", "Invoice", "Line", "price")),
    ]
    by_title = {s.title: s for s in doc.sections}
    assert by_title["total"].parent == by_title["Invoice"].key
    assert by_title["price"].parent == by_title["Line"].key


def test_headers_are_headings_and_bodies_split_on_statements():
    doc = parse_python(SOURCE, filename="billing.py")
    refund = next(s for s in doc.sections if s.title == "refund")
    # Decorators and the (multi-line) def belong to the section but to no block.
    assert doc.text[refund.start :].startswith("@cache\n@other(")
    bodies = [doc.text[b.start : b.end] for b in refund.blocks]
    assert bodies == ['# the cap\n    cap = D(os.environ.get("CAP", "100"))',
                      "if amount > cap:\n        return cap", "return amount"]
    assert all(b.kind == "code" for b in refund.blocks)


def test_context_has_used_imports_and_signatures():
    doc = parse_python(SOURCE, filename="billing.py")
    by_title = {s.title: s for s in doc.sections}
    assert by_title["refund"].context == (
        "import os\nfrom decimal import Decimal as D\ndef refund(amount, plan=\"basic\"):")
    assert by_title["total"].context == "class Invoice(Base, metaclass=Meta):\ndef total(self):"
    assert by_title["price"].context == (
        "import re\nclass Invoice(Base, metaclass=Meta):\nclass Line:\ndef price(self):")
    # A one-liner keeps its whole line as its block, its header in the context.
    send = by_title["send"]
    assert send.context.endswith("async def send(self, to):")
    assert [doc.text[b.start : b.end] for b in send.blocks] == ["async def send(self, to): await to.push(self)"]


def test_module_level_code_stays_in_the_root():
    doc = parse_python(SOURCE, filename="billing.py")
    root_text = [doc.text[b.start : b.end] for b in doc.root.blocks]
    assert root_text[0] == '"""Billing helpers."""'
    assert 'RATE = D("0.2")' in root_text
    assert "# Refunds are capped per plan." in root_text
    assert root_text[-1] == 'if __name__ == "__main__":\n    print(refund(3))'
    assert not any("def " in t or "class " in t for t in root_text)


def test_every_line_of_code_is_in_a_block_or_a_header():
    doc = parse_python(TEXTWRAP.read_bytes(), filename="textwrap.py")
    covered = [False] * len(doc.text)
    for section in doc.sections:
        for block in section.blocks:
            covered[block.start : block.end] = [True] * (block.end - block.start)
    tree = ast.parse(doc.text)
    headers = {line for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)
               for line in range(n.lineno, n.body[0].lineno)}
    offset = 0
    for number, line in enumerate(doc.text.splitlines(keepends=True), start=1):
        stripped = line.strip()
        if stripped and number not in headers:
            first = offset + line.index(stripped[0])
            assert covered[first], f"line {number} is in no block: {line!r}"
        offset += len(line)


def test_syntax_error_falls_back_to_line_blocks():
    data = b"def broken(:\n    pass\n\n\nprint('still indexed')\nx = 1\n"
    doc = parse_python(data, filename="broken.py")
    assert_well_formed(doc)
    assert len(doc.sections) == 1
    assert [doc.text[b.start : b.end] for b in doc.root.blocks] == [
        "def broken(:\n    pass", "print('still indexed')\nx = 1"]
    assert doc.metadata["syntax_error"].startswith("SyntaxError") and doc.metadata["syntax_error_line"] == 1


def test_python2_source_and_null_bytes_fall_back_too():
    assert parse_python(b'print "hello"\n').metadata["syntax_error"]
    doc = parse_python(b"x = 1\n")
    assert "syntax_error" not in doc.metadata


def test_coding_cookie_is_honoured():
    data = "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n".encode("latin-1")
    doc = parse_python(data, filename="legacy.py")
    assert "café" in doc.text
