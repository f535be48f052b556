"""Property test of the Markdown parser over generated documents.

Documents are generated line by line from nested headings (with and without
heading markers), access regions (nested), paragraphs, lists, code fences that
contain marker-like text, pipe tables and optional front matter.  The generator
knows, for every content line, the policy of the innermost marker enclosing it,
and which lines are *structural* (heading lines, marker lines, front matter,
table header and delimiter rows): those are excluded from coverage.

Asserted:
* blocks lie in [0, len(text)), are trimmed, and never overlap across sections;
* every non-whitespace character of a content line is in exactly one block, and
  no character of a structural line is in any block (so no block holds a heading
  line, a marker or front matter);
* no block except code holds marker text;
* each block's section, after ``resolve_policies``, has exactly the policy the
  generator expected for that block's lines.

Markers here only narrow what encloses them (widening ones are refused: see
test_marker_security.py, which also generates widening and near-miss markers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.policy import LEVEL_NAMES as ACCESS_LEVELS
from accounts.policy import Policy as AccessPolicy
from ingestion.parsers.access_markers import looks_like_marker
from ingestion.parsers.markdown import parse_markdown
from ingestion.parsers.section_tree import LineIndex
from ingestion.structure import resolve_policies
from tests.ingestion.doc_invariants import assert_well_formed

UPLOAD_DEFAULT = AccessPolicy("internal")
WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "refund", "policy", "team", "x", "42", "café"])


def narrower(draw: st.DrawFn, outer: AccessPolicy) -> AccessPolicy:
    """A policy that implies ``outer`` (equal allowed): a level at least as high, groups a non-empty subset."""
    level = draw(st.sampled_from(ACCESS_LEVELS[ACCESS_LEVELS.index(outer.level) :]))
    if outer.groups:
        groups = draw(st.lists(st.sampled_from(outer.groups), min_size=1, max_size=2, unique=True))
    else:
        groups = draw(st.lists(st.sampled_from(["security-team", "legal", "hr_ops"]), max_size=2, unique=True))
    return AccessPolicy(level, tuple(groups))


def marker_text(policy: AccessPolicy) -> str:
    groups = f"; groups: {', '.join(policy.groups)}" if policy.groups else ""
    return f"<!-- access: {policy.level}{groups} -->"


@dataclass
class Generated:
    lines: list[str] = field(default_factory=list)
    structural: set[int] = field(default_factory=set)  # line indices in no block
    expected: dict[int, AccessPolicy] = field(default_factory=dict)  # content line -> policy

    def add(self, line: str, *, structural: bool = False, policy: AccessPolicy | None = None) -> None:
        if structural:
            self.structural.add(len(self.lines))
        elif policy is not None:
            self.expected[len(self.lines)] = policy
        self.lines.append(line)


@st.composite
def markdown_documents(draw: st.DrawFn) -> Generated:
    doc = Generated()
    default = UPLOAD_DEFAULT
    if draw(st.booleans()):
        default = narrower(draw, UPLOAD_DEFAULT)
        doc.add("---", structural=True)
        doc.add("title: Generated", structural=True)
        doc.add(f"access: {default.level}", structural=True)
        doc.add(f"groups: [{', '.join(default.groups)}]", structural=True)
        doc.add("---", structural=True)
    # The open scopes, innermost last: ("heading", level, policy) or ("region", container_level, policy).
    stack: list[tuple[str, int, AccessPolicy | None]] = []
    counter = 0

    def effective() -> AccessPolicy:
        for _, _, policy in reversed(stack):
            if policy is not None:
                return policy
        return default

    def heading_level() -> int:
        for kind, level, _ in reversed(stack):
            if kind == "heading":
                return level
        return 0

    def floor() -> int:
        """Headings must be deeper than the heading enclosing the innermost region."""
        for kind, level, _ in reversed(stack):
            if kind == "region":
                return level
        return 0

    for _ in range(draw(st.integers(1, 25))):
        choice = draw(st.sampled_from(["heading", "paragraph", "paragraph", "list", "code", "region", "close",
                                       "table"]))
        counter += 1
        token = f"t{counter}"
        if choice == "heading":
            if floor() >= 6:
                continue
            level = draw(st.integers(floor() + 1, 6))
            while stack and stack[-1][0] == "heading" and stack[-1][1] >= level:
                stack.pop()
            policy = narrower(draw, effective()) if draw(st.booleans()) else None
            suffix = f" {marker_text(policy)}" if policy else ""
            stack.append(("heading", level, policy))
            doc.add(f"{'#' * level} Heading {token}{suffix}", structural=True)
        elif choice == "paragraph":
            for _ in range(draw(st.integers(1, 3))):
                words = " ".join(draw(st.lists(WORDS, min_size=1, max_size=6)))
                doc.add(f"{token} {words}", policy=effective())
        elif choice == "list":
            for n in range(draw(st.integers(1, 3))):
                doc.add(f"- {token} item {n}", policy=effective())
                if draw(st.booleans()):
                    doc.add(f"  - {token} nested {n}", policy=effective())
        elif choice == "code":
            doc.add("```", policy=effective())
            doc.add(f"{token} <!-- access: bogus -->", policy=effective())
            doc.add("# not a heading <!-- /access -->", policy=effective())
            doc.add("```", policy=effective())
        elif choice == "region":
            policy = narrower(draw, effective())
            stack.append(("region", heading_level(), policy))
            doc.add(marker_text(policy), structural=True)
        elif choice == "close":
            if not any(kind == "region" for kind, _, _ in stack):
                continue
            while stack[-1][0] != "region":
                stack.pop()
            stack.pop()
            doc.add("<!-- /access -->", structural=True)
        elif choice == "table":
            doc.add("| Plan | Seats |", structural=True)
            doc.add("|------|------:|", structural=True)
            for n in range(draw(st.integers(1, 3))):
                doc.add(f"| {token} row {n} | {n} |", policy=effective())
        doc.add("")  # blank line between items
    while any(kind == "region" for kind, _, _ in stack):
        while stack[-1][0] != "region":
            stack.pop()
        stack.pop()
        doc.add("<!-- /access -->", structural=True)
    return doc


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown_documents())
def test_generated_markdown_documents(generated: Generated) -> None:
    source = "\n".join(generated.lines) + "\n"
    doc = resolve_policies(parse_markdown(source.encode()), UPLOAD_DEFAULT)
    assert_well_formed(doc)
    text = doc.text
    assert text == source
    lines = LineIndex(text)

    owner = [0] * len(text)  # how many blocks cover each character
    block_policy: dict[int, AccessPolicy] = {}
    for section in doc.sections:
        for block in section.blocks:
            assert 0 <= block.start < block.end <= len(text)
            body = text[block.start : block.end]
            if block.kind != "code":
                assert not looks_like_marker(body), body
            for offset in range(block.start, block.end):
                owner[offset] += 1
            for line in range(lines.line_of(block.start), lines.line_of(block.end - 1) + 1):
                block_policy[line] = section.effective

    for number, line_text in enumerate(generated.lines):
        start = lines.start(number)
        covered = [owner[start + column] for column, char in enumerate(line_text) if not char.isspace()]
        if number in generated.structural:
            assert not any(covered), f"structural line {number + 1} is inside a block: {line_text!r}"
        else:
            assert all(count == 1 for count in covered), f"line {number + 1} not covered once: {line_text!r}"
        if number in generated.expected:
            assert block_policy[number] == generated.expected[number], (number + 1, line_text)
