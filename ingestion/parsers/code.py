"""Python source via the ``ast`` module: one section per function and class.

The document text is the decoded file itself.  Sections:

* the root (titled with the file name) holds module-level code: imports,
  constants, ``if __name__ == "__main__":`` ... -- everything outside a
  top-level ``def``/``class``;
* each top-level function is a ``function`` section and each class a ``class``
  section; methods (and nested classes) are child sections of their class.
  Heading paths are ``("module.py", "ClassName", "method")``.  Functions nested
  inside functions stay in their function's body.

A definition's *header* (decorators and the ``def``/``class`` lines up to the
colon) is its heading: inside its span, not in a block.  The body is split into
``code`` blocks at its top-level statements (comment lines stick to the statement
below them; a blank line outside a statement also ends a block), so the chunker can
cut a long function between statements.

``Section.context`` -- repeated in every chunk's embed text -- is the import
lines the section actually uses (at most :data:`MAX_CONTEXT_IMPORTS`), then the
enclosing class's signature for a method, then the section's own signature.
``Section.context_parts`` says which section each line is text of (the imports
the root's, a signature its definition's), so that a section readable by more
people than its class or module embeds neither (:func:`~ingestion.structure.restrict_context`).

A file that does not parse (a syntax error, a newer Python) is not refused: it
becomes one root section with blank-line-separated ``code`` blocks, and
``metadata["syntax_error"]`` says why.

What a terminal hides (:func:`~ingestion.parsers.visible_text.terminal_hidden`: ANSI sequences, the text they
conceal or colour as its background, backspace overstrikes) is cut, as from plain text (2026-12-03): an editor
shows the escape character and the text after it, ``cat`` or ``less -R`` of the file shows neither -- the
model gets only what every reader sees. The tree is built on the file as uploaded (its line numbers), then the
hidden ranges are cut from the text, the spans and the context lines (imports, signatures); a definition's title
is its name as a terminal shows it (:func:`_shown_name`).
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
import unicodedata
from dataclasses import dataclass, field

from ingestion.parsers.access_markers import reject_unread_markers
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import LineIndex
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import merge_ranges, remove_ranges, shown_slice, terminal_hidden
from ingestion.structure import Block, ParsedDocument, ParseError, Section

MAX_CONTEXT_IMPORTS = 8
MAX_SIGNATURE_CHARS = 300
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# From a definition's ``col_offset``: ``def``, ``async def`` or ``class``, spaces or line continuations, and the name as
# written (up to what may follow it: a parameter list, type parameters, bases, the colon).
_CONTINUED = r"(?:[ \t\f]|\\(?:\r\n|\r|\n))+"
_DEFINED_NAME_RE = re.compile(rf"(?:async{_CONTINUED})?(?:def|class){_CONTINUED}(?P<name>[^\s(\[:\\#]+)")


@dataclass
class _Source:
    text: str
    index: LineIndex
    lines: list[str]
    hidden: list[tuple[int, int]] = field(default_factory=list)  # what a terminal hides (sorted, not overlapping)

    def shown(self, start: int, end: int) -> str:
        """The text from ``start`` to ``end`` without what a terminal hides."""
        return shown_slice(self.text, self.hidden, start, end)

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets of 0-based lines ``first..last`` (inclusive), trimmed."""
        start, end = self.index.start(first), self.index.end(last)
        while start < end and self.text[start].isspace():
            start += 1
        while end > start and self.text[end - 1].isspace():
            end -= 1
        return start, end


def _first_line(node: ast.stmt) -> int:
    """0-based first line of a statement, decorators included."""
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno, *(d.lineno for d in decorators)]) - 1


def _header_last(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, source: _Source) -> int | None:
    """0-based last line of the def/class header, None for a one-liner (body on the header line)."""
    body_first = node.body[0].lineno - 1
    if body_first <= node.lineno - 1:
        return None
    last = body_first - 1
    # Comment and blank lines just above the first body statement belong to the body.
    while last > node.lineno - 1 and (not source.lines[last].strip() or source.lines[last].lstrip().startswith("#")):
        last -= 1
    return last


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, source: _Source) -> str:
    """The def/class line(s) as one line: ``def wrap(text, width=70, **kwargs):``."""
    last = _header_last(node, source)
    if last is None:
        # A one-liner: up to the first colon outside brackets (a best guess without tokens).
        text = line = source.shown(source.index.start(node.lineno - 1), source.index.end(node.lineno - 1)).strip()
        for cut, char in enumerate(line):
            if char == ":" and line[:cut].count("(") == line[:cut].count(")"):
                text = line[: cut + 1]
                break
    else:
        text = source.shown(source.index.start(node.lineno - 1), source.index.end(last))
    text = " ".join(text.split())
    return text if len(text) <= MAX_SIGNATURE_CHARS else text[: MAX_SIGNATURE_CHARS - 3] + "..."


def _shown_name(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, source: _Source) -> str:
    """The definition's name as a terminal shows it: its title and its part of the heading paths below it. Found in
    the twentieth session (attack20): the title was ``node.name``, read on the file as written, and a definition
    concealed from a comment above it to one below (``ESC[8m`` ... ``ESC[0m``, a control string), erased or written
    over by a comment on its line reached the title and every heading path under it while ``cat`` showed none of it.
    Python reads a name in NFKC, so the name as written is compared, and shown, so read; a name not found where its
    node says (never seen) is shown only when nothing of its header is hidden."""
    if not source.hidden:
        return node.name
    line = source.lines[node.lineno - 1]
    column = len(line.encode("utf-8")[: node.col_offset].decode("utf-8", "ignore"))  # col_offset counts UTF-8 bytes
    match = _DEFINED_NAME_RE.match(source.text, source.index.start(node.lineno - 1) + column)
    if match is None or unicodedata.normalize("NFKC", match["name"]) != node.name:
        last = _header_last(node, source)
        start, end = source.index.start(node.lineno - 1), source.index.end(node.lineno - 1 if last is None else last)
        return node.name if source.shown(start, end) == source.text[start:end] else ""
    return unicodedata.normalize("NFKC", source.shown(*match.span("name"))).strip()


def _statement_blocks(source: _Source, first: int, last: int, statements: list[ast.stmt],
                      excluded: list[tuple[int, int]]) -> list[Block]:
    """``code`` blocks over lines ``first..last``: one per statement, comments attached below.

    Lines of ``excluded`` ranges (child sections) are skipped and cut blocks.
    """
    owner: dict[int, int] = {}
    for number, statement in enumerate(statements):
        for line in range(_first_line(statement), (statement.end_lineno or statement.lineno)):
            owner[line] = number
    skip = set()
    for lo, hi in excluded:
        skip.update(range(lo, hi + 1))
    blocks: list[Block] = []
    block_start: int | None = None
    block_owner: int | None = None
    previous = first - 1

    def flush(end_line: int) -> None:
        nonlocal block_start, block_owner
        if block_start is not None and end_line >= block_start:
            start, end = source.span(block_start, end_line)
            if start < end:
                blocks.append(Block(start=start, end=end, kind="code",
                                    metadata={"lines": [block_start + 1, end_line + 1]}))
        block_start, block_owner = None, None

    for line in range(first, last + 1):
        if line in skip:
            flush(previous)
            previous = line
            continue
        statement = owner.get(line)
        if statement is None:
            if not source.lines[line].strip():
                flush(previous)
            else:
                if block_owner is not None:
                    flush(previous)  # a comment after a statement belongs to what follows
                if block_start is None:
                    block_start = line
        elif statement != block_owner:
            if block_owner is not None:
                flush(previous)
            if block_start is None:
                block_start = line
            block_owner = statement
        previous = line
    flush(previous)
    return blocks


def _used_names(nodes: list[ast.AST]) -> set[str]:
    names = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Name):
                names.add(child.id)
    return names


@dataclass
class _Import:
    text: str
    names: set[str]


def _imports(tree: ast.Module, source: _Source) -> list[_Import]:
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            start, end = source.span(node.lineno - 1, (node.end_lineno or node.lineno) - 1)
            text = " ".join(source.shown(start, end).split())
            bound = {(alias.asname or alias.name).split(".")[0] for alias in node.names}
            found.append(_Import(text, bound))
    return found


def _context(imports: list[_Import], used: set[str], signatures: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``(key of the section whose text it is, line)`` per context line: the imports are the root's."""
    relevant = [("0", imp.text) for imp in imports if imp.names & used][:MAX_CONTEXT_IMPORTS]
    return (*relevant, *signatures)


class _Builder:
    def __init__(self, source: _Source, filename: str, imports: list[_Import]) -> None:
        self.source = source
        self.filename = filename
        self.imports = imports
        self.sections: list[Section] = []

    def definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, parent: Section,
                   outer_signatures: list[tuple[str, str]]) -> None:
        source = self.source
        first, last = _first_line(node), (node.end_lineno or node.lineno) - 1
        start, end = source.span(first, last)
        is_class = isinstance(node, ast.ClassDef)
        signature = _signature(node, source)
        header_last = _header_last(node, source)
        children = [n for n in node.body if isinstance(n, _DEFINITIONS)] if is_class else []
        own_statements = [n for n in node.body if n not in children]
        used = _used_names([*getattr(node, "decorator_list", []), *(getattr(node, "bases", []) or []),
                            *own_statements, *([node.args] if not is_class else []),
                            *([node.returns] if getattr(node, "returns", None) is not None else [])])
        key = str(len(self.sections))
        context = _context(self.imports, used, [*outer_signatures, (key, signature)])
        title = _shown_name(node, source)
        section = Section(
            key=key,
            parent=parent.key,
            title=title,
            heading_path=(*parent.heading_path, title) if parent.parent is not None else (self.filename, title),
            kind="class" if is_class else "function",
            depth=parent.depth + 1,
            start=start,
            end=end,
            line=node.lineno,
            context="\n".join(text for _, text in context),
            context_parts=context,
            metadata={"lines": [first + 1, last + 1], "signature": signature},
        )
        self.sections.append(section)
        body_first = header_last + 1 if header_last is not None else first
        child_ranges = [(_first_line(c), (c.end_lineno or c.lineno) - 1) for c in children]
        statements = own_statements if header_last is not None else [node]
        section.blocks = _statement_blocks(source, body_first, last, statements, child_ranges)
        for child in children:
            self.definition(child, section, [*outer_signatures, (key, signature)] if is_class else outer_signatures)


def _fallback(source: _Source, title: str, reason: str, line: int | None) -> ParsedDocument:
    """Blank-line-separated ``code`` blocks in one root section (the file does not parse)."""
    root = Section(key="0", parent=None, title=title, heading_path=(), kind="document", depth=0, start=0,
                   end=len(source.text))
    block_start = None
    for number in range(len(source.lines) + 1):
        blank = number == len(source.lines) or not source.lines[number].strip()
        if blank and block_start is not None:
            start, end = source.span(block_start, number - 1)
            root.blocks.append(Block(start=start, end=end, kind="code",
                                     metadata={"lines": [block_start + 1, number]}))
            block_start = None
        elif not blank and block_start is None:
            block_start = number
    return ParsedDocument(text=source.text, sections=[root], title=title or None,
                          metadata={"format": "python", "syntax_error": reason, "syntax_error_line": line})


def _decode(data: bytes) -> str:
    try:
        return decode_text(data)
    except ParseError:
        # PEP 263: a coding cookie may declare another encoding.
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            if encoding not in ("utf-8", "utf-8-sig"):
                return data.decode(encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError):
            pass
        raise


def parse_python_text(text: str, *, filename: str = "module.py",
                      hidden: list[tuple[int, int]] | None = None) -> ParsedDocument:
    """Build the section tree of already-decoded Python source (offsets index ``text``); ``hidden``: ranges of it
    a terminal hides, left out of the context lines (the caller cuts them from the text)."""
    index = LineIndex(text)
    source = _Source(text, index, [index.line(i) for i in range(index.count)], merge_ranges(hidden or []))
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        return _fallback(source, filename, f"{type(exc).__name__}: {exc.msg}", exc.lineno)
    except (ValueError, RecursionError, MemoryError) as exc:
        return _fallback(source, filename, f"{type(exc).__name__}: {exc}", None)
    root = Section(key="0", parent=None, title=filename, heading_path=(), kind="document", depth=0, start=0,
                   end=len(text))
    builder = _Builder(source, filename, _imports(tree, source))
    builder.sections.append(root)
    definitions = [n for n in tree.body if isinstance(n, _DEFINITIONS)]
    ranges = [(_first_line(n), (n.end_lineno or n.lineno) - 1) for n in definitions]
    others = [n for n in tree.body if not isinstance(n, _DEFINITIONS)]
    root.blocks = _statement_blocks(source, 0, len(source.lines) - 1, others, ranges)
    try:
        for node in definitions:
            builder.definition(node, root, [])
    except RecursionError:
        return _fallback(source, filename, "RecursionError: classes nested too deeply", None)
    return ParsedDocument(text=text, sections=builder.sections, title=filename,
                          metadata={"format": "python"})


@register(content_types=["text/x-python", "text/x-script.python", "application/x-python"],
          extensions=[".py", ".pyi", ".pyw"])
def parse_python(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a Python module into function and class sections (see the module docstring)."""
    # Never an untitled root: its title in a heading path is what tells a policy change that the
    # module's imports left (or joined) its definitions' context (kb.services.apply_policies).
    text = _decode(data)
    hidden = terminal_hidden(text)
    if hidden:
        reject_unread_markers(text)  # on the file as written: a marker a terminal hides still fails, with its line
    return remove_ranges(parse_python_text(text, filename=os.path.basename(filename or "") or "module.py",
                                           hidden=hidden), hidden)
