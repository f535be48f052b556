"""The review queue's flagged section heads read in a bounded number of statements, a page at a time, with the
reviewer's read rule in the SQL (fifteenth session).

Found reviewing the queue's performance: ``kb.screening.review_queue`` listed every flagged head of the tenant on each
request -- every flagged section and its children read, the read rule applied in Python -- then read each head's
text with a statement of its own (N+1), and the heads past the first page (chunks first) were out of reach: the API
took no ``offset``, and no count was given. Now the heads the reviewer may read are counted and a page of them read
(texts included) in one statement each, the page in the chunks' semantics (``?limit=&offset=``, 50 by default, at
most 500, the list shape unchanged, ``X-Review-Total`` the count); a head the reviewer may not read is in no page,
no count.
"""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from accounts.policy import AccessLevel, Reader
from accounts.services import tenant_create
from kb import screening
from kb.index_versions import index_version_active
from kb.models import HEAD_SCREENING, Section
from kb.screening import REVIEW_PAGE, section_heads
from tests import factories
from tests.api_helpers import console_client, flag_head, make_document, member_with_token, token_client

pytestmark = pytest.mark.django_db

STATES = ("pending", "decided", "all")


@pytest.fixture
def tenant():
    """A tenant with an active index version (its chunks, none flagged, are counted in every listing)."""
    tenant = tenant_create(slug=f"heads-{uuid.uuid4().hex[:6]}", name="Heads Co")
    index_version_active(tenant=tenant)
    return tenant


@pytest.fixture
def reviewers(tenant):
    """Two admins: ``high`` reads restricted sections, ``low`` internal ones only."""
    high, _ = member_with_token(tenant, f"high@{tenant.slug}.test", "admin", "restricted")
    low, _ = member_with_token(tenant, f"low@{tenant.slug}.test", "admin", "internal")
    return {"high": high, "low": low}


def _flagged_heads(tenant, count: int, *, level=AccessLevel.INTERNAL, word: str = "open") -> list[uuid.UUID]:
    """``count`` documents, each with one section whose head (its heading line, made a non-heading one) is flagged,
    at ``level``; the head's text holds ``word``. Half of them hold a subsection right after the head, no text of
    their own: that head ends where the subsection starts (``kb.screening.section_heads``)."""
    ids = []
    for n in range(count):
        if n % 2:
            document = make_document(tenant, title=f"Notes {word} {n}", default=level, sections=[
                ("intro", None, f"Plan {word} {n}", level, [], "Words of the plan."),
            ])
            ids.append(flag_head(document.section_ids["intro"]))
            continue
        text = f"Heading {word} {n}\nBelow it.\n"
        document = factories.document(tenant, title=f"Notes {word} {n}", text=text, access_level=level)
        parent = factories.section(document, kind="document", access_level=level, body_spans=[])
        factories.section(document, parent_id=parent.pk, start=len(f"Heading {word} {n}\n"), access_level=level,
                          body_spans=[[len(f"Heading {word} {n}\n"), len(text)]])
        ids.append(flag_head(parent.pk))
    return ids


def _heads(items) -> list[uuid.UUID]:
    return [item.section_id for item in items if item.kind == "head"]


def test_the_flagged_heads_are_listed_in_the_same_statements_for_one_and_twelve(tenant, reviewers):
    """Before: one statement per head for its text (and every flagged section of the tenant read with its children)
    -- 12 heads, 11 statements more than 1 head."""
    first = _flagged_heads(tenant, 1)

    def listed() -> tuple[int, list]:
        with CaptureQueriesContext(connection) as captured:
            items = screening.review_queue(member=reviewers["high"], state="all")
        return len(captured.captured_queries), items

    one, items = listed()
    assert _heads(items) == first and all("Heading open 0" in item.text for item in items), items
    more = _flagged_heads(tenant, 11)
    twelve, items = listed()
    assert sorted(_heads(items)) == sorted(first + more)
    assert twelve == one, (one, twelve)
    # The text of each head is its own (its heading line; one ending where its subsection starts).
    texts = {item.section_id: item.text for item in items}
    for section in Section.objects.filter(pk__in=texts):
        start, end = section.metadata["head_screening"]["span"]
        assert texts[section.pk] == section.document.text[start:end] and texts[section.pk].strip(), section.pk


def test_heads_past_a_page_are_on_the_next_pages_and_counted(tenant, reviewers):
    """More flagged heads than a page: each page at most ``limit`` (50 by default, as the chunks'), every head on
    exactly one page, ``X-Review-Total`` the count; a bad ``limit``/``offset`` is the 400 of the other lists. Before:
    no ``offset`` (400, an unknown parameter) -- the heads past the first page were out of reach -- and no count."""
    ids = _flagged_heads(tenant, REVIEW_PAGE + 7)
    api = token_client(reviewers["high"])
    first = api.get("/api/v1/review/", {"state": "all"})
    assert first.status_code == 200, first.content
    assert len(first.json()) == REVIEW_PAGE and first["X-Review-Total"] == str(REVIEW_PAGE + 7)
    rest = api.get("/api/v1/review/", {"state": "all", "offset": REVIEW_PAGE})
    assert rest.status_code == 200 and len(rest.json()) == 7, rest.content
    listed = [item["section_id"] for item in first.json() + rest.json()]
    assert sorted(listed) == sorted(map(str, ids))
    small, offset = [], 0
    while True:
        page = api.get("/api/v1/review/", {"state": "pending", "limit": 9, "offset": offset})
        assert page.status_code == 200 and len(page.json()) <= 9 and page["X-Review-Total"] == str(len(ids))
        if not page.json():
            break
        small += [item["section_id"] for item in page.json()]
        offset += 9
    assert small == listed  # the same order, each once
    assert len(screening.review_queue(member=reviewers["high"], state="all", limit=5)) == 5
    for bad in ({"limit": 0}, {"limit": 501}, {"limit": "x"}, {"offset": -1}, {"offset": "1.5"}):
        answer = api.get("/api/v1/review/", bad)
        other = api.get("/api/v1/memberships/", bad)  # a list paged by StrictLimitOffsetPagination
        assert answer.status_code == 400 and answer.json() == other.json(), (bad, answer.content, other.content)


def test_a_reviewer_never_sees_a_head_its_id_or_its_count_of_a_section_they_may_not_read(tenant, reviewers):
    """Heads of internal and restricted sections, mixed in document order, one of each kept out: an internal
    reviewer's pages (API and console, every state, small pages) hold the internal ones only, none of the restricted
    ones' text or ids, and the count is of the internal ones; a restricted reviewer's hold all. Before: no page past
    the first, no count."""
    internal = _flagged_heads(tenant, 5)
    restricted = _flagged_heads(tenant, 6, level=AccessLevel.RESTRICTED, word="secret")
    decided = [internal[2], restricted[3]]
    for pk in decided:
        screening.head_review_decide(member=reviewers["high"], section_id=pk, decision="keep_out")
    hidden = {str(pk) for pk in restricted} | {
        str(pk) for pk in Section.objects.filter(pk__in=restricted).values_list("document_id", flat=True)}
    for who, readable in (("low", internal), ("high", internal + restricted)):
        api = token_client(reviewers[who])
        for state in STATES:
            expected = {"all": readable, "decided": [pk for pk in readable if pk in decided],
                        "pending": [pk for pk in readable if pk not in decided]}[state]
            seen, offset = [], 0
            while offset <= len(readable):
                page = api.get("/api/v1/review/", {"state": state, "limit": 2, "offset": offset})
                assert page.status_code == 200, page.content
                assert page["X-Review-Total"] == str(len(expected)), (who, state, page["X-Review-Total"])
                if who == "low":
                    body = page.content.decode()
                    assert "secret" not in body and not any(pk in body for pk in hidden), (state, offset)
                seen += [item["section_id"] for item in page.json()]
                offset += 2
            assert sorted(seen) == sorted(map(str, expected)), (who, state)
            assert screening.review_page(member=reviewers[who], state=state).count == len(expected)
    low = console_client(reviewers["low"])
    for asked, shown in (("", "4 items pending"), ("?state=all", "5 items in the queue"),
                         ("?state=all&page=2", "5 items in the queue"), ("?state=decided&page=9", "1 item decided")):
        page = low.get(f"/review/{asked}")
        body = page.content.decode()
        assert page.status_code == 200 and "secret" not in body and not any(pk in body for pk in hidden), asked
        assert shown in body, asked


# A section: (parent: an earlier one (its index, modulo) or None, start, length, body spans as stored -- lists of a start and an
# end, or of a start alone, empty ones, numbers that are no list, a float --, whether its record is for another span).
_SPAN_ENTRY = st.one_of(st.tuples(st.integers(0, 40), st.integers(0, 40)).map(list),
                        st.integers(0, 40).map(lambda n: [n]), st.just([]), st.integers(0, 40),
                        st.floats(0, 40, allow_nan=False).map(lambda x: [x, 40]))
_SECTIONS = st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 5)), st.integers(0, 30), st.integers(0, 15),
                               st.lists(_SPAN_ENTRY, max_size=3), st.booleans()), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=_SECTIONS)
@example(shapes=[(None, 0, 20, [[5, 20]], False)])  # to its first text: [0, 5)
@example(shapes=[(None, 0, 20, [], False), (0, 8, 12, [[10, 20]], False)])  # to its subsection: [0, 8); [8, 10)
@example(shapes=[(None, 2, 20, [[], 7, [6.9, 40], [9]], False), (0, 12, 5, [], True)])  # [2, 6); one for another span
def test_the_statements_head_is_section_heads(tenant, shapes):
    """The head's extent worked out in the statement (``kb.screening._flagged_head_sections``) is
    ``kb.screening.section_heads``' -- from a section's start to its first text or subsection -- for any section tree
    and body spans as stored: a flagged record for that extent is listed, one for another extent, or for an empty
    head, is not."""
    document = factories.document(tenant, text="x" * 60)
    rows: list[Section] = []
    for n, (parent, start, length, spans, _) in enumerate(shapes):
        parent = rows[parent % n] if parent is not None and n else None
        if parent is not None:  # mostly inside its parent, as parsed; not always, as stored
            start = min(start, parent.start + start % (parent.end - parent.start + 1))
        rows.append(Section(id=uuid.uuid4(), parent_id=parent.pk if parent else None, start=start,
                            end=start + length, body_spans=spans))
    expected = set()
    for n, (row, head) in enumerate(zip(rows, section_heads(rows), strict=True)):
        shifted = shapes[n][4]
        if head[1] > head[0] and not shifted:
            expected.add(row.pk)
        factories.section(document, id=row.pk, parent_id=row.parent_id, key=str(n), order=n, start=row.start,
                          end=row.end, body_spans=row.body_spans, kind="document", metadata={HEAD_SCREENING: {
                              "detector": "test", "span": [head[0], head[1] + shifted], "flagged": True, "score": 1.0,
                              "reasons": ["x"]}})
    reader = Reader(tenant_id=tenant.pk, clearance=AccessLevel.RESTRICTED, group_ids=frozenset())
    assert {pk for pk, _ in screening._flagged_heads(reader, document.pk)} == expected
