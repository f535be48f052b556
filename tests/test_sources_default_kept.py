"""What a sync does with an admin's document default, and what the preview says of it, without a database.

The sync keeps a default an admin set on a synced document (``sources.services.default_kept``) -- or fails the item
(``DefaultWider``) -- and the preview used to show the source's policy for such a path whatever the sync would do (a
gap left in the seventeenth session, closed in the eighteenth). Both now ask one decision
(``sources.services.policy_kept``); the preview's row says its outcome (``sources.selectors.policy_after``). The
database tier follows it through a real sync (``tests/test_sources_preview_default.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from accounts.policy import AccessLevel, policy_implies
from sources.selectors import policy_after
from sources.services import DefaultWider, policy_kept

PUBLIC, INTERNAL, CONFIDENTIAL, RESTRICTED = (int(level) for level in (
    AccessLevel.PUBLIC, AccessLevel.INTERNAL, AccessLevel.CONFIDENTIAL, AccessLevel.RESTRICTED))
SLUGS = {1: "finance", 2: "legal", 3: "security-team"}

policies = st.tuples(st.sampled_from([int(level) for level in AccessLevel]),
                     st.lists(st.sampled_from(sorted(SLUGS)), max_size=3, unique=True).map(lambda g: tuple(sorted(g))))


@given(own=policies, given_=policies, policy=policies)
def test_the_sync_gives_the_sources_policy_keeps_a_narrower_default_or_fails(own, given_, policy):
    """The rule of ``default_kept``: the source's policy when the document's default is the one the source gave it
    last; else the admin's default, kept when it narrows the source's new policy or the source's policy is no narrower
    than before; else the item fails, naming both levels."""
    try:
        after = policy_kept(own, given=given_, policy=policy)
    except DefaultWider as exc:
        assert (own[0], set(own[1])) != (given_[0], set(given_[1]))
        assert not policy_implies(*own, *policy) and not policy_implies(*given_, *policy)
        assert AccessLevel(own[0]).name.lower() in exc.message and AccessLevel(policy[0]).name.lower() in exc.message
        return
    if (own[0], set(own[1])) == (given_[0], set(given_[1])):
        assert after == policy
    else:
        assert after == (own[0], tuple(sorted(own[1])))
        assert policy_implies(*own, *policy) or policy_implies(*given_, *policy)


def test_without_a_given_policy_the_sources_policy_is_taken():
    assert policy_kept((PUBLIC, ()), given=None, policy=(RESTRICTED, (1,))) == (RESTRICTED, (1,))


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
