"""The access rule (``accounts.policy``): the full table in Python, and the SQL predicate
(``accounts.access.readable_q``) agreeing with Python."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.access import readable_q
from accounts.policy import AccessLevel, Reader, bounded_reader, can_read, denial_reasons, policy_implies
from accounts.services import tenant_create
from kb.models import Document, Section
from tests import factories

LEVELS = list(AccessLevel)
GROUP_CASES = {
    "no section groups": (frozenset({1}), ()),
    "member in the group": (frozenset({1}), (1,)),
    "member in one of two": (frozenset({2}), (1, 2)),
    "member in none": (frozenset({3}), (1, 2)),
    "member in no group at all": (frozenset(), (1,)),
}


@pytest.mark.parametrize(
    ("clearance", "level", "case"),
    list(itertools.product(LEVELS, LEVELS, GROUP_CASES)),
)
def test_rule_table(clearance, level, case):
    member_groups, section_groups = GROUP_CASES[case]
    reader = Reader(tenant_id=1, clearance=clearance, group_ids=member_groups)
    expected_level_ok = clearance >= level
    expected_group_ok = not section_groups or bool(set(section_groups) & member_groups)
    assert can_read(reader, level=level, group_ids=section_groups) is (expected_level_ok and expected_group_ok)


def test_policy_implies():
    # Everyone who reads restricted/{1} also reads internal/{} and internal/{1,2}.
    assert policy_implies(3, [1], 1, [])
    assert policy_implies(3, [1], 1, [1, 2])
    # A public child does not imply its restricted parent.
    assert not policy_implies(0, [], 3, [])
    # A child open to all groups does not imply a group-limited parent.
    assert not policy_implies(3, [], 3, [1])


@pytest.fixture(scope="module")
def policy_grid(django_db_setup, django_db_blocker):
    """One section per (level, group set) over groups {1,2,3}, in one tenant, plus a foreign one."""
    with django_db_blocker.unblock():
        tenant = tenant_create(slug=f"grid-{uuid.uuid4().hex[:6]}", name="grid")
        other = tenant_create(slug=f"grid-{uuid.uuid4().hex[:6]}", name="other")
        sections = []
        for t in (tenant, other):
            doc = factories.document(t, title="g", text="x" * 10)
            for order, (level, groups) in enumerate(
                itertools.product(LEVELS, [(), (1,), (2,), (3,), (1, 2), (2, 3), (1, 2, 3)])
            ):
                sections.append(
                    factories.section(
                        doc, key=str(order), order=order, start=0, end=1, access_level=level,
                        access_groups=list(groups),
                    )
                )
        yield tenant, sections
        Document.objects.filter(tenant__in=[tenant, other]).delete()
        tenant.delete()
        other.delete()


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clearance=st.sampled_from(LEVELS), member_groups=st.frozensets(st.integers(1, 4), max_size=3))
def test_sql_predicate_agrees_with_python_rule(policy_grid, clearance, member_groups):
    tenant, sections = policy_grid
    reader = Reader(tenant_id=tenant.id, clearance=clearance, group_ids=member_groups)
    in_sql = set(Section.objects.filter(readable_q(reader)).values_list("id", flat=True))
    in_python = {
        s.id for s in sections if s.tenant_id == tenant.id and can_read(reader, level=s.access_level, group_ids=s.access_groups)
    }
    assert in_sql == in_python
    assert in_python  # public, group-free sections are always readable: the test is not vacuous


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    clearances=st.tuples(st.sampled_from(LEVELS), st.sampled_from(LEVELS)),
    groups=st.tuples(st.frozensets(st.integers(1, 4), max_size=3), st.frozensets(st.integers(1, 4), max_size=3)),
)
def test_a_bounded_reader_reads_what_both_read_in_sql_and_python(policy_grid, clearances, groups):
    """The one "as this member, bounded by the acting admin" rule (``bounded_reader``): a section
    is read exactly when each of the two may read it, in Python and in SQL alike."""
    tenant, sections = policy_grid
    member = Reader(tenant_id=tenant.id, clearance=clearances[0], group_ids=groups[0])
    admin = Reader(tenant_id=tenant.id, clearance=clearances[1], group_ids=groups[1])
    seen = bounded_reader(member, admin)
    in_sql = set(Section.objects.filter(readable_q(seen)).values_list("id", flat=True))
    ours = [s for s in sections if s.tenant_id == tenant.id]
    in_python = {s.id for s in ours if can_read(seen, level=s.access_level, group_ids=s.access_groups)}
    both = {
        s.id for s in ours
        if can_read(member, level=s.access_level, group_ids=s.access_groups)
        and can_read(admin, level=s.access_level, group_ids=s.access_groups)
    }
    assert in_sql == in_python == both
    assert in_python


def test_a_bounded_reader_is_of_one_tenant_and_has_no_reasons_of_its_own():
    member, admin = Reader(1, 3, frozenset({1})), Reader(1, 3, frozenset({2}))
    with pytest.raises(ValueError, match="own tenant"):
        bounded_reader(member, Reader(2, 3, frozenset()))
    with pytest.raises(ValueError, match="one member's own"):
        denial_reasons(bounded_reader(member, admin), level=0, group_ids=())
    # The case the console's pages once answered differently: groups {1, 2}, member in 1, admin in 2.
    assert can_read(bounded_reader(member, admin), level=3, group_ids=(1, 2))
    assert not can_read(bounded_reader(member, admin), level=3, group_ids=(1,))
