"""A content title and a front matter's tags as one member is shown them depend only on the sections that member may
read (no database): the property behind ``kb.titles.reader_title`` and ``reader_tags`` (docs/security.md, "A title
taken from a heading").

A Markdown document is parsed (``ingestion.parsers.markdown``: its title, the section bearing it -- ``title_key`` --
and its tags), recorded as the store step records it (``kb.services.document_title_follow``,
``document_tags_listed``), and each section given any effective policy (inline markers only narrow; the API's
overrides may widen, so any assignment can be reached). A twin document differs only in what the member may not
read: the titles and policies of the sections hidden from them (a policy they still may not read), and the front
matter when the root is hidden from them. The member must be shown the same title and tags of both.

The member is shown the first title candidate of a section they may read (a front matter's title on the root, then
each H1 in document order): a bearer hidden from them -- an H1 before the first one they may read, or a front matter's
title on a root they may not read -- is not told, so a twin may also drop or add such hidden bearers (the candidate
order the generator draws: hidden H1s anywhere, a front matter's title or none on a hidden root).
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounts.policy import Policy, Reader, can_read
from ingestion.parsers.markdown import parse_markdown_text
from kb.models import Document
from kb.services import content_title_sent, document_tags_listed, document_title_follow
from kb.titles import reader_reads, reader_tags, reader_title, title_candidates

TITLES = ["Plan", "Keys", "Notes"]
POLICIES = st.builds(Policy, st.integers(0, 3), st.frozensets(st.integers(1, 2), max_size=2))
READERS = st.builds(lambda c, g: Reader(tenant_id=1, clearance=c, group_ids=g), st.integers(0, 3),
                    st.frozensets(st.integers(1, 2), max_size=2))
HEADINGS = st.lists(st.tuples(st.integers(1, 2), st.sampled_from(TITLES), POLICIES), max_size=6)
FRONT = st.one_of(st.none(), st.tuples(st.one_of(st.none(), st.sampled_from(["Plan", "Handbook"])),
                                       st.lists(st.sampled_from(["kestrel", "ledger"]), max_size=2, unique=True)))


def _markdown(front, headings) -> str:
    text = ""
    if front is not None:
        title, tags = front
        text = "---\n" + (f"title: {title}\n" if title else "") + f"tags: [{', '.join(tags)}]\n---\n"
    text += "Opening words.\n\n"
    for i, (level, title, _) in enumerate(headings):
        text += f"{'#' * level} {title}\n\nBody {i}.\n\n"
    return text


def _reads(policy: Policy, reader: Reader) -> bool:
    return can_read(reader, level=int(policy.rank), group_ids=policy.groups)


def _shown(front, root_policy: Policy, headings, reader: Reader) -> tuple[str, list[str]]:
    """The title and tags ``reader`` is shown of the document: parsed, recorded as stored, read for them."""
    document = _stored(front, root_policy, headings, reader)
    return reader_title(document), reader_tags(document)


def _stored(front, root_policy: Policy, headings, reader: Reader) -> Document:
    """The document as stored, read for ``reader`` (``reader_title``, ``reader_tags`` answer for them)."""
    parsed = parse_markdown_text(_markdown(front, headings))
    assert len(parsed.sections) == 1 + len(headings)  # the root, then one section per heading, in order
    policies = [root_policy, *(policy for _, _, policy in headings)]
    ids = {s.key: uuid.uuid5(uuid.NAMESPACE_OID, s.key) for s in parsed.sections}
    rows = [SimpleNamespace(id=ids[s.key], key=s.key, order=n, title=s.title,
                            parent_id=ids[s.parent] if s.parent is not None else None)
            for n, s in enumerate(parsed.sections)]
    document = Document(title="untitled", metadata={})
    document_title_follow(document, rows, content_title=parsed.title, title_key=parsed.title_key,
                          candidates=parsed.title_candidates)
    document.tags, document.content_tags, document.metadata = document_tags_listed(document,
                                                                                  content_tags=parsed.tags)
    readable = [row.id for row, policy in zip(rows, policies, strict=True) if _reads(policy, reader)]
    reader_reads(document, candidates=title_candidates(document, rows), readable=readable,
                 root=rows[0].id if _reads(root_policy, reader) else None)
    return document


def _twin(front, root, headings, reader: Reader, data) -> tuple:
    """A twin of the document that differs only in what ``reader`` may not read (see the module docstring)."""
    twin_headings = []
    for level, title, policy in headings:
        if not _reads(policy, reader):  # hidden from the member: another title, another policy they may not read --
            other = data.draw(POLICIES)  # or dropped, or another hidden H1 added before it (the candidate order)
            title, policy = data.draw(st.sampled_from(TITLES)), (policy if _reads(other, reader) else other)
            if data.draw(st.booleans()):
                twin_headings.append((1, data.draw(st.sampled_from(TITLES)), policy))
            if data.draw(st.booleans()):
                continue
        twin_headings.append((level, title, policy))
    twin_front, twin_root = front, root
    if not _reads(root, reader):  # the root, and so the front matter, hidden: another front matter, another policy
        other = data.draw(POLICIES)
        twin_root = root if _reads(other, reader) else other
        title = data.draw(st.one_of(st.none(), st.sampled_from(["Plan", "Handbook", "Ledger"])))  # or none
        twin_front = data.draw(st.one_of(st.none(), st.just(
            (title, data.draw(st.lists(st.sampled_from(["kestrel", "ledger"]), max_size=2, unique=True))))))
    return twin_front, twin_root, twin_headings


@given(front=FRONT, root=POLICIES, headings=HEADINGS, reader=READERS, data=st.data())
def test_a_member_is_shown_a_title_and_tags_only_from_sections_they_may_read(front, root, headings, reader, data):
    twin_front, twin_root, twin_headings = _twin(front, root, headings, reader, data)
    assert _shown(front, root, headings, reader) == _shown(twin_front, twin_root, twin_headings, reader)


@given(front=FRONT, root=POLICIES, headings=HEADINGS, reader=READERS,
       sent=st.sampled_from(["", "untitled", *TITLES, "Handbook", "Ledger"]), data=st.data())
def test_a_title_sent_with_new_content_is_read_alike_for_documents_the_member_cannot_tell_apart(
        front, root, headings, reader, sent, data):
    """A replace's title, sent by the member, means "the content's title" (kept following the content) or is typed
    for every reader (``kb.services.content_title_sent``, given the title the member is shown): found attacking the
    replace (eighteenth session), it was compared with the stored content title -- a guess of a hidden H1 kept the
    document content-titled exactly when it was right. Of twins the member cannot tell apart, the same answer."""
    twin_front, twin_root, twin_headings = _twin(front, root, headings, reader, data)
    answers = []
    for document in (_stored(front, root, headings, reader), _stored(twin_front, twin_root, twin_headings, reader)):
        answers.append(content_title_sent(document, sent, reader_title(document)))
    assert answers[0] == answers[1]


def test_a_hidden_heading_titled_as_the_title_is_not_its_bearer():
    """An example the property finds when the bearer is "the first section titled so": a hidden H2 titled as the
    first H1, before it."""
    hidden, internal = Policy(3, frozenset()), Policy(1, frozenset())
    carol = Reader(tenant_id=1, clearance=1, group_ids=frozenset())
    same = _shown(None, internal, [(2, "Plan", hidden), (1, "Plan", internal)], carol)
    other = _shown(None, internal, [(2, "Keys", hidden), (1, "Plan", internal)], carol)
    assert same == other == ("Plan", [])


@pytest.mark.parametrize("hidden_bearer", ["h1", "front-matter"])
def test_a_hidden_bearer_before_the_first_readable_h1_is_not_told(hidden_bearer):
    """A twin that lacks the hidden bearer shows the member the H1 they may read; the document with it, "untitled"."""
    hidden, internal = Policy(3, frozenset()), Policy(1, frozenset())
    carol = Reader(tenant_id=1, clearance=1, group_ids=frozenset())
    plan = (1, "Plan", internal)
    if hidden_bearer == "h1":
        with_hidden = _shown(None, internal, [(1, "Keys", hidden), plan], carol)
        without = _shown(None, internal, [plan], carol)
    else:  # the root hidden from carol (the Plan section opened wider through the API): its front matter's title
        with_hidden = _shown(("Handbook", []), hidden, [plan], carol)
        without = _shown(("", []), hidden, [plan], carol)
    assert without == ("Plan", [])
    assert with_hidden == without
