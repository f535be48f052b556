"""``kb.changed.sections_carry``, the rule new content follows for each section's change time, as a property
(fifteenth session; docs/security.md, "Change times"): new content that changes one section's own text, adds a
section inside one or removes one leaves the time of every other section as it was, whatever the
tree, the texts and the policies; the changed or added section, and only it, takes the new time; and what went
away is reported (for its policy's readers). No database: the rows are built in memory, as the pipeline builds them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from kb.changed import own_texts, sections_carry
from kb.models import Section

PAST = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 12, 5, tzinfo=UTC)


@dataclass
class Node:
    key: str
    body: str
    level: int
    groups: list[int]
    children: list[Node] = field(default_factory=list)


def _layout(root: Node) -> tuple[str, list[Section]]:
    """The document text and section rows of ``root``'s tree, as a Markdown parser would cut them: a heading
    line, the section's body, then its subsections; its extent holds them all."""
    text, rows = "", []

    def walk(node: Node, parent: Section | None, depth: int, path: list[str]) -> None:
        nonlocal text
        title = f"T{node.key}"  # unique: no two sections read the same
        start = len(text)
        text += "#" * (depth + 1) + f" {title}\n"
        body_start = len(text)
        text += node.body + "\n"
        row = Section(
            id=uuid.uuid4(), parent_id=parent.id if parent else None, key=node.key, order=len(rows), depth=depth,
            title=title, heading_path=[*path, title], kind="heading", start=start, end=start,
            body_spans=[[body_start, body_start + len(node.body)]], own_level=node.level, own_groups=node.groups,
            access_level=node.level, access_groups=node.groups, metadata={},
        )
        rows.append(row)
        for child in node.children:
            walk(child, row, depth + 1, [*path, title])
        row.end = len(text)

    walk(root, None, 0, [])
    return text, rows


def _nodes(root: Node) -> list[Node]:
    return [root, *(n for child in root.children for n in _nodes(child))]


BODIES = st.text(alphabet="ab \n#", max_size=12)


@st.composite
def trees(draw) -> Node:
    keys = iter(range(1000))

    def node(depth: int) -> Node:
        children = [node(depth + 1) for _ in range(draw(st.integers(0, 3 if depth < 2 else 0)))]
        return Node(str(next(keys)), draw(BODIES), draw(st.integers(0, 3)), draw(st.sampled_from([[], [1], [1, 2]])),
                    children)

    return node(0)


def _parent_of(root: Node, target: Node) -> Node | None:
    return next((n for n in _nodes(root) if target in n.children), None)


@given(trees(), st.data())
def test_new_content_moves_the_time_of_the_section_it_changes_and_of_no_other(root, data):
    old_text, old_rows = _layout(root)
    for i, row in enumerate(old_rows):
        row.changed_at = PAST + timedelta(minutes=i)
    before = {row.key: row.changed_at for row in old_rows}
    target = data.draw(st.sampled_from(_nodes(root)), label="the section new content changes")
    leaves = [n for n in _nodes(root) if n is not root and not n.children]
    change = data.draw(st.sampled_from(["its text", "a section added inside it", "a section removed"]
                                       if leaves else ["its text", "a section added inside it"]), label="change")
    if change == "its text":
        words = target.body.split()  # a change of whitespace alone is none (kb.changed.own_texts)
        target.body = data.draw(BODIES.filter(lambda b: b.split() != words))
        moved, lost = {target.key}, [target.key]
    elif change == "a section added inside it":  # its own text stays: only the new one is new
        target.children.append(Node("new", data.draw(BODIES), target.level, target.groups))
        moved, lost = {"new"}, []
    else:
        leaf = data.draw(st.sampled_from(leaves), label="the section removed")
        _parent_of(root, leaf).children.remove(leaf)
        moved, lost = set(), [leaf.key]
    new_text, new_rows = _layout(root)

    gone = sections_carry(old_rows, old_text, new_rows, new_text, at=NOW)

    for row in new_rows:
        assert row.changed_at == (NOW if row.key in moved else before[row.key]), row.key
    assert [row.key for row in gone] == lost


@given(trees(), st.data())
def test_the_same_content_again_moves_no_time_and_loses_nothing(root, data):
    old_text, old_rows = _layout(root)
    for i, row in enumerate(old_rows):
        row.changed_at = PAST + timedelta(minutes=i)
    new_text, new_rows = _layout(root)  # new rows (new ids), the same content
    assert sections_carry(old_rows, old_text, new_rows, new_text, at=NOW) == []
    assert [r.changed_at for r in new_rows] == [r.changed_at for r in old_rows]


@given(trees())
def test_every_word_is_owned_once_at_most_and_a_body_by_its_own_section(root):
    text, rows = _layout(root)
    own = own_texts(rows, text)
    assert sum(len(t.split()) for t in own.values()) <= len(text.split())
    for row in rows:
        (start, end), = row.body_spans
        assert " ".join(text[start:end].split()) in own[row.id]
