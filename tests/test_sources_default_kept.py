"""What a sync does with an admin's document default, and what the preview says of it, without a database.

The sync keeps a default an admin set on a synced document (``sources.services.default_kept``) -- or fails the item
(``DefaultWider``) -- and the preview used to show the source's policy for such a path whatever the sync would do (a
gap left in the seventeenth session, closed in the eighteenth). Both now ask one decision
(``sources.services.policy_kept``); the preview's row says its outcome (``sources.selectors.policy_after``). The
database tier follows it through a real sync (``tests/test_sources_preview_default.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accounts.policy import AccessLevel, policy_implies, policy_meet
from sources.selectors import policy_after
from sources.services import DefaultWider, admin_default, policy_kept

PUBLIC, INTERNAL, CONFIDENTIAL, RESTRICTED = (int(level) for level in (
    AccessLevel.PUBLIC, AccessLevel.INTERNAL, AccessLevel.CONFIDENTIAL, AccessLevel.RESTRICTED))
SLUGS = {1: "finance", 2: "legal", 3: "security-team"}

policies = st.tuples(st.sampled_from([int(level) for level in AccessLevel]),
                     st.lists(st.sampled_from(sorted(SLUGS)), max_size=3, unique=True).map(lambda g: tuple(sorted(g))))


records = st.one_of(st.none(), st.fixed_dictionaries({
    "level": st.sampled_from([int(level) for level in AccessLevel]),
    "groups": st.lists(st.sampled_from(sorted(SLUGS)), max_size=3, unique=True).map(sorted),
    "narrowing": st.booleans()}))


def _policy(record: dict) -> tuple:
    return record["level"], tuple(record["groups"])


@given(own=policies, given_=policies, policy=policies, recorded=records)
def test_the_sync_gives_the_sources_policy_keeps_an_admins_default_meets_a_narrowing_or_fails(own, given_, policy,
                                                                                               recorded):
    """The rule of ``default_kept``: the source's policy when no admin set the document's default (it is where the last
    sync left it, with no admin's default recorded, or set back to the source's); an admin's narrowing met with the
    source's policy -- never wider than either, and the widest such; an admin's opening kept when it narrows the
    source's new policy or the source's policy is no narrower than before; else the item fails, naming both levels."""
    admin = admin_default(own, given=given_, recorded=recorded)
    try:
        after, kept = policy_kept(own, given=given_, policy=policy, recorded=recorded)
    except DefaultWider as exc:
        assert admin is not None
        if admin["narrowing"]:
            assert policy_meet(_policy(admin), policy) is None
        else:
            assert not policy_implies(*_policy(admin), *policy) and not policy_implies(*given_, *policy)
        assert AccessLevel(admin["level"]).name.lower() in exc.message
        assert AccessLevel(policy[0]).name.lower() in exc.message
        return
    assert kept == admin
    if admin is None:
        assert after == (policy[0], tuple(sorted(policy[1])))
    elif admin["narrowing"]:
        assert policy_implies(*after, *policy) and policy_implies(*after, *_policy(admin))
        assert after == policy_meet(_policy(admin), policy)
    else:
        assert after == _policy(admin)
        assert policy_implies(*after, *policy) or policy_implies(*given_, *policy)


def _sync(state: dict, policy) -> None:
    """One sync that stores the document (new content) under the source's ``policy``, as ``_sync_entry`` keeps its item:
    the default it gives, the source's policy and the admin's default recorded; a failed item changes nothing -- and
    fails only for an admin's opening the source narrows past, or a narrowing that shares no group with the source's
    policy (no policy is within both)."""
    try:
        state["default"], state["recorded"] = policy_kept(state["default"], given=state["given"], policy=policy,
                                                          recorded=state["recorded"])
    except DefaultWider:
        admin = admin_default(state["default"], given=state["given"], recorded=state["recorded"])
        assert not admin["narrowing"] or policy_meet(_policy(admin), policy) is None, (state, policy, admin)
        return
    state["given"] = policy


# A few policies, so that a run meets the same one again (the source's policy equal to an admin's narrowing).
few_policies = st.sampled_from([(PUBLIC, ()), (INTERNAL, ()), (CONFIDENTIAL, ()), (RESTRICTED, ()), (INTERNAL, (1,)),
                                (CONFIDENTIAL, (1, 2)), (INTERNAL, (2,))])


@settings(max_examples=400)
@given(start=few_policies, steps=st.lists(st.tuples(st.booleans(), few_policies), min_size=1, max_size=12))
def test_an_admins_narrowing_stays_a_bound_however_the_source_changes(start, steps):
    """Over any run of source policies and admin acts: after each sync, the document's default implies the source's
    policy and the last narrowing an admin set (a default implying what the source gave the path then) -- unless the
    admin's last act opened it, which is kept or fails the item. Fails on the rule before the eighteenth session (the
    narrowing forgotten once the source's policy met it, then opened with the source)."""
    state = {"default": start, "given": start, "recorded": None}
    narrowing = None  # the admin's last act: (policy, narrowing?)
    for admin_acts, policy in steps:
        if admin_acts:  # the admin sets ``policy`` as the document's default
            if policy == state["default"]:
                continue
            state["default"] = policy
            narrowing = None if policy == state["given"] else (policy, policy_implies(*policy, *state["given"]))
            continue
        _sync(state, policy)
        if state["given"] != policy:
            continue  # the item failed: the admin is asked to act
        if narrowing is None:
            assert policy_implies(*state["default"], *policy), (state, policy)
        elif narrowing[1]:
            assert policy_implies(*state["default"], *policy), (state, policy, narrowing)
            assert policy_implies(*state["default"], *narrowing[0]), (state, policy, narrowing)
        else:
            assert state["default"] == narrowing[0] or policy_implies(*state["default"], *policy), (state, narrowing)


def test_an_admins_narrowing_met_by_the_source_then_widened_by_it_stays():
    """The run the stateful test found (eighteenth session): narrowed to confidential from internal, the source's policy
    confidential too, then public -- the document stays confidential."""
    state = {"default": (INTERNAL, ()), "given": (INTERNAL, ()), "recorded": None}
    state["default"] = (CONFIDENTIAL, ())
    _sync(state, (CONFIDENTIAL, ()))
    _sync(state, (PUBLIC, ()))
    assert state["default"] == (CONFIDENTIAL, ())


def test_the_source_narrowing_past_an_admins_narrowing_takes_the_sources_policy():
    """Narrowed to confidential, the source now restricted: the document is restricted (the item failed before, and the
    document stayed confidential), and back to confidential when the source opens the path again."""
    state = {"default": (CONFIDENTIAL, ()), "given": (INTERNAL, ()), "recorded": None}
    _sync(state, (RESTRICTED, ()))
    assert state["default"] == (RESTRICTED, ()) and state["given"] == (RESTRICTED, ())
    _sync(state, (INTERNAL, ()))
    assert state["default"] == (CONFIDENTIAL, ())


def test_without_a_given_policy_the_sources_policy_is_taken():
    assert policy_kept((PUBLIC, ()), given=None, policy=(RESTRICTED, (1,))) == ((RESTRICTED, (1,)), None)


def _row(action: str, policy) -> dict:
    name = AccessLevel(policy[0]).name.lower()
    groups = sorted(SLUGS[g] for g in policy[1])
    return {"path": "plans.md", "action": action, "access_level": name, "groups": groups, "reason": "",
            "renamed_from": "", "default_kept": False, "source_access_level": name, "source_groups": groups}


def _after(action: str, *, own, given_, policy, stored_again: bool) -> dict:
    row = _row(action, policy)
    policy_after(row, own=own, policy=policy, given=given_, slugs=SLUGS, stored_again=stored_again)
    return row


def test_a_change_shows_the_admins_narrower_default_kept():
    row = _after("change", own=(CONFIDENTIAL, (1,)), given_=(INTERNAL, ()), policy=(INTERNAL, ()), stored_again=True)
    assert (row["action"], row["access_level"], row["groups"], row["default_kept"]) == (
        "change", "confidential", ["finance"], True)
    assert (row["source_access_level"], row["source_groups"], row["reason"]) == ("internal", [], "")


def test_a_change_the_source_narrows_past_the_admins_default_is_a_fail_with_the_syncs_reason():
    row = _after("change", own=(PUBLIC, ()), given_=(INTERNAL, ()), policy=(RESTRICTED, ()), stored_again=True)
    assert (row["action"], row["access_level"], row["default_kept"]) == ("fail", "public", True)
    assert row["source_access_level"] == "restricted"
    with pytest.raises(DefaultWider) as raised:
        policy_kept((PUBLIC, ()), given=(INTERNAL, ()), policy=(RESTRICTED, ()))
    assert row["reason"] == raised.value.message


def test_an_admin_widening_the_very_policy_the_source_gives_is_kept():
    row = _after("change", own=(PUBLIC, ()), given_=(INTERNAL, ()), policy=(INTERNAL, ()), stored_again=True)
    assert (row["action"], row["access_level"], row["default_kept"]) == ("change", "public", True)


def test_a_default_the_source_gave_is_replaced_by_the_sources_new_policy():
    row = _after("change", own=(INTERNAL, ()), given_=(INTERNAL, ()), policy=(RESTRICTED, (2,)), stored_again=True)
    assert (row["action"], row["access_level"], row["groups"], row["default_kept"]) == (
        "change", "restricted", ["legal"], False)


def test_what_the_sync_does_not_store_again_keeps_its_default_as_it_is():
    """Unchanged, or moved as it is: nothing of the document is written, so even a default wider than the source's
    policy stays (no fail: the sync does not decide it)."""
    for action in ("unchanged", "rename"):
        row = _after(action, own=(PUBLIC, ()), given_=(INTERNAL, ()), policy=(RESTRICTED, ()), stored_again=False)
        assert (row["action"], row["access_level"], row["default_kept"], row["reason"]) == (action, "public", True, "")


def test_a_path_with_no_document_is_left_as_the_source_gives_it():
    row = _after("add", own=None, given_=(INTERNAL, ()), policy=(RESTRICTED, ()), stored_again=True)
    assert row == _row("add", (RESTRICTED, ()))


def test_a_default_equal_to_the_sources_policy_is_not_called_kept():
    row = _after("change", own=(INTERNAL, (2, 1)), given_=(PUBLIC, ()), policy=(INTERNAL, (1, 2)), stored_again=True)
    assert (row["access_level"], row["groups"], row["default_kept"]) == ("internal", ["finance", "legal"], False)
