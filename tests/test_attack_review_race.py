"""The review queue and the jobs around it, raced (round 9).

Found attacking the queue's jobs (2026-12-03): while a policy change's rebuild runs, a section has no chunk
and its text is cut as unscreened (``kb.screening.unscreened_spans``); once rebuilt, its flagged chunk is
held. The two are read in two statements -- the held chunks, then the sections without chunks -- by search's
contexts (``kb.screening.Screened.load``) and MCP's ``read_section`` / document resource
(``kb.screening.held_spans``). The rebuild committing between them made the section neither: no chunk when
the held ones were read, chunks when the unscreened ones were, and the planted instruction held for review
came back whole.

Whichever order the two are read in, one interleaving leaks: held chunks first, the rebuild's new chunks
committed before the unscreened read (search's contexts); unscreened first, the policy change deleting the
chunks committed before the held read (MCP, which read them the other way round). Each is made deterministic,
as in ``tests/test_attack_read_race.py``: a statement hook commits the policy change, or runs the rebuild job,
right after the first of the two reads, on the same connection.
"""

from __future__ import annotations

import contextlib
import json
import uuid

import pytest
from django.db import connection

from accounts.models import Tenant
from accounts.services import tenant_create
from kb.mcp_server import Caller, document_work, read_section_work
from kb.models import Chunk, IngestionJob, Section
from kb.search import search
from pipeline.services import jobs_run
from tests.api_helpers import member_with_token
from tests.screening_helpers import ingest_markdown
from tests.test_attack_unscreened_text import HANDBOOK  # the same planted handbook

pytestmark = pytest.mark.django_db



@pytest.fixture
def world(unserved_queue):
    tenant = tenant_create(slug=f"rrace-{uuid.uuid4().hex[:6]}", name="Review race")
    editor, _ = member_with_token(tenant, f"editor@{tenant.slug}.test", "editor", "confidential")
    viewer, _ = member_with_token(tenant, f"viewer@{tenant.slug}.test", "viewer", "internal")
    admin, _ = member_with_token(tenant, f"admin@{tenant.slug}.test", "admin", "restricted")
    document = ingest_markdown(tenant, editor, "Widget handbook", HANDBOOK)
    yield {"tenant": tenant, "editor": editor, "viewer": viewer, "admin": admin, "document": document}
    Tenant.objects.filter(pk=tenant.pk).delete()


SETUP = "Setup"


def _setup(world) -> Section:
    return Section.objects.get(document=world["document"], title=SETUP)


def _change_policy(world) -> None:
    """An editor opens the planted section below its confidential heading: its chunks go, a job rebuilds them."""
    from kb.services import section_set_access

    section_set_access(actor=world["editor"], section=_setup(world), access_level="internal", groups=[])


def _rebuild(world) -> None:
    jobs = list(IngestionJob.objects.filter(document=world["document"], status="queued").values_list("id", flat=True))
    assert jobs
    jobs_run(jobs)


def _prepare(world, race: str) -> None:
    assert Chunk.objects.get(section=_setup(world)).screening_flagged  # held (quarantine, the default)
    if race == "rebuild":  # the change is made; its rebuild races the read
        _change_policy(world)
        assert not Chunk.objects.filter(section=_setup(world)).exists()


def _reads_held_or_unscreened(sql: str) -> bool:
    """Either of the two reads: the document's chunks that may not be returned, or its sections without chunks
    (``Screened.load``, ``held_spans``) -- not search's candidate queries."""
    if not sql.startswith("SELECT"):
        return False
    unscreened = 'FROM "kb_section"' in sql and "body_spans" in sql and '"kb_chunk"' in sql
    held = sql.partition(" FROM ")[2].startswith('"kb_chunk"') and '"review"' in sql and "LIMIT" not in sql \
        and "embedding" not in sql
    return unscreened or held


@contextlib.contextmanager
def raced_after_the_first_read(world, race: str):
    state = {"done": False}

    def hook(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not state["done"] and _reads_held_or_unscreened(sql):
            state["done"] = True
            (_rebuild if race == "rebuild" else _change_policy)(world)
        return result

    with connection.execute_wrapper(hook):
        yield state


def _check(seen: str, state: dict) -> None:
    assert state["done"], "the race never ran between the reads; the test proves nothing"
    assert "evil@example.com" not in seen and "Ignore all previous" not in seen, seen


RACES = ["rebuild", "policy change"]


@pytest.mark.parametrize("race", RACES)
def test_search_contexts_stay_cut_when_a_rebuild_or_policy_change_commits_between_the_held_reads(world, race):
    _prepare(world, race)
    with raced_after_the_first_read(world, race) as state:
        answer = search(member=world["editor"], query="zorblax widget crank", mode="keyword", top_k=10,
                        expand="parent")
    seen = repr(answer)
    usage = Section.objects.get(document=world["document"], title="Usage")
    assert any(hit.section_id == usage.pk for hit in answer.results)  # the sibling is found
    # Read in the rebuild's window, the text after the section without chunks is cut too (kb.screening.unscreened_spans).
    assert ("zorblax" in seen) == (race != "rebuild")
    _check(seen, state)


@pytest.mark.parametrize("race", RACES)
def test_read_section_stays_cut_when_a_rebuild_or_policy_change_commits_between_the_held_reads(world, race):
    _prepare(world, race)
    setup, member = _setup(world), world["editor"]
    with raced_after_the_first_read(world, race) as state:
        served = read_section_work(str(setup.pk))(member, Caller(lambda: member, "http://testserver"))
    _check(json.dumps(served), state)


@pytest.mark.parametrize("race", RACES)
def test_the_document_resource_stays_cut_when_a_rebuild_or_policy_change_commits_between_the_held_reads(world, race):
    _prepare(world, race)
    member = world["editor"]
    with raced_after_the_first_read(world, race) as state:
        served = document_work(str(world["document"].pk))(member, Caller(lambda: member, "http://testserver"))
    # The race wrote the sections under the read (a policy change and its rebuild write them): the resource is read
    # again after it (kb.mcp_server._read_shown, twenty-first session), so what is served is the state the race left --
    # rebuilt, the text after the section shown; changed and not rebuilt yet, cut as unscreened.
    assert "zinc alloy" in served and ("zorblax" in served) == (race == "rebuild")
    _check(served, state)


# ----------------------------------------------------------------------------- decisions on stale or foreign ids


def test_a_reviewer_demoted_after_loading_the_queue_decides_nothing(world):
    """The queue loaded as a restricted admin; the clearance lowered, then the role, before the decision: each
    decision request re-reads the membership (API), so it is refused, changes nothing, and search still
    holds the chunk."""
    from accounts.errors import NotFound, PermissionRefused
    from accounts.models import Membership
    from accounts.services import membership_update
    from kb import screening
    from kb.models import ChunkReview

    admin = world["admin"]
    member_with_token(world["tenant"], f"second@{world['tenant'].slug}.test", "admin", "restricted")  # not the last
    # The planted section is confidential: the admin reviews it from the queue.
    chunk = Chunk.objects.get(section=_setup(world))
    assert [item.chunk_id for item in screening.review_queue(member=admin)] == [chunk.pk]
    membership_update(membership=admin, clearance="internal")
    with pytest.raises(NotFound):
        screening.review_decide(member=Membership.objects.get(pk=admin.pk), chunk_id=chunk.pk, decision="release")
    membership_update(membership=admin, clearance="restricted", role="viewer")
    with pytest.raises(PermissionRefused):
        screening.review_decide(member=Membership.objects.get(pk=admin.pk), chunk_id=chunk.pk, decision="release")
    assert Chunk.objects.get(pk=chunk.pk).review == ChunkReview.NONE
    answer = search(member=world["editor"], query="zorblax widget crank", mode="keyword", top_k=10, expand="parent")
    assert "zorblax" in repr(answer) and "evil@example.com" not in repr(answer)


def test_a_decision_on_another_tenants_chunk_or_an_inactive_versions_is_the_same_not_found(world):
    from accounts.errors import NotFound
    from kb import screening
    from kb.models import ChunkReview

    other = tenant_create(slug=f"rrace-other-{uuid.uuid4().hex[:6]}", name="Other")
    try:
        other_admin, _ = member_with_token(other, f"admin@{other.slug}.test", "admin", "restricted")
        chunk = Chunk.objects.get(section=_setup(world))
        for decision in ("release", "keep_out", "delete_document"):
            with pytest.raises(NotFound):
                screening.review_decide(member=other_admin, chunk_id=chunk.pk, decision=decision)
        # A chunk of a version that is not active (moved there by hand: as an old version's would be).
        from ingestion.chunking.config import ChunkingConfig
        from kb.index_versions import index_version_create

        old, _ = index_version_create(tenant=world["tenant"], config=ChunkingConfig(target_tokens=90), name="small")
        Chunk.objects.filter(pk=chunk.pk).update(index_version=old)
        for decision in ("release", "keep_out", "delete_document"):
            with pytest.raises(NotFound):
                screening.review_decide(member=world["admin"], chunk_id=chunk.pk, decision=decision)
        assert Chunk.objects.get(pk=chunk.pk).review == ChunkReview.NONE
        assert Chunk.objects.filter(document=world["document"]).exists()
    finally:
        Tenant.objects.filter(pk=other.pk).delete()

