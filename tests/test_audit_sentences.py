"""The audit trail in sentences (issue 27, ``audit.sentences``): one renderer per action, so the
actions and their sentences cannot drift apart; titles only as the caller resolved them for the
viewer, neutral phrases otherwise; and no record, however odd its details, fails to be said."""

from __future__ import annotations

import re
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from audit.models import Action, AuditEvent
from audit.sentences import (
    ACTION_LABELS,
    DELETED_DOCUMENT,
    GONE_SECTION,
    HIDDEN_DOCUMENT,
    HIDDEN_HITS,
    HIDDEN_SECTION,
    MEMBER,
    RENDERERS,
    TITLE,
    UNTITLED_SECTION,
    Name,
    Names,
    Sentence,
    referenced_ids,
    render,
)

DOC, SECTION, OTHER = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
BEFORE = {"own": {"level": "restricted", "groups": []}, "effective": {"level": "restricted", "groups": []}}
AFTER = {"own": {"level": "confidential", "groups": []}, "effective": {"level": "confidential", "groups": []}}


def _event(action, **fields) -> AuditEvent:
    fields.setdefault("actor_email", "alice@acme.test")
    return AuditEvent(action=action, tenant_id=1, membership_id=7, **fields)


def _readable() -> Names:
    return Names(documents={str(DOC): Name("Handbook", TITLE)}, sections={str(SECTION): Name("Merger plans", TITLE)},
                 members={8: Name("bob@acme.test", MEMBER)})


def _hidden() -> Names:
    """The same ids as a viewer below them sees them: they exist, and are not theirs to read."""
    return Names(documents={str(DOC): HIDDEN_DOCUMENT}, sections={str(SECTION): HIDDEN_SECTION})


def test_every_action_has_a_sentence_and_a_label():
    assert set(RENDERERS) == set(Action.values), "an action without its sentence (or a sentence of no action)"
    assert set(ACTION_LABELS) == set(Action.values), "an action without its filter label"


def test_a_section_change_names_the_section_and_its_document_only_where_the_viewer_may_read_them():
    event = _event(Action.SECTION_ACCESS, target_type="section", target_id=str(SECTION), document_ids=[DOC],
                   details={"before": BEFORE, "after": AFTER})
    assert str(render(event, _readable())) == (
        "alice@acme.test changed *Merger plans* in *Handbook* from restricted to confidential")
    hidden = str(render(event, _hidden()))
    assert hidden == "alice@acme.test changed a section you cannot read in a document you cannot read" \
                     " from restricted to confidential"
    assert "Merger" not in hidden and "Handbook" not in hidden
    # Gone since: said so, without a title (none was recorded).
    assert str(render(event, Names())) == (
        f"alice@acme.test changed {GONE_SECTION.text} in {DELETED_DOCUMENT.text} from restricted to confidential")
    # Back to inheriting, with groups.
    back = _event(Action.SECTION_ACCESS, target_type="section", target_id=str(SECTION), document_ids=[DOC],
                  details={"before": BEFORE, "after": {"own": None, "effective": {"level": "internal",
                                                                                    "groups": ["finance"]}}})
    assert str(render(back, _readable())).endswith(
        "from restricted to internal (groups: finance) (it now follows its parent)")


def test_uploads_deletions_reads_and_review_decisions_in_words():
    names = _readable()
    upload = _event(Action.DOCUMENT_CREATE, actor_email="bob@acme.test", target_type="document", target_id=str(DOC),
                    document_ids=[DOC], details={"after": {"policy": {"level": "internal", "groups": []}}})
    assert str(render(upload, names)) == "bob@acme.test uploaded *Handbook* for internal readers"
    deleted = _event(Action.DOCUMENT_DELETE, target_type="document", target_id=str(OTHER), document_ids=[OTHER])
    assert str(render(deleted, names)) == "alice@acme.test deleted a document"
    released = _event(Action.REVIEW_DECISION, actor_email="carol@acme.test", target_type="chunk",
                      target_id=str(uuid.uuid4()), document_ids=[DOC], details={"decision": "release"})
    assert str(render(released, names)) == "carol@acme.test released a held chunk in *Handbook*"
    read = _event(Action.DOCUMENT_READ, target_type="document", target_id=str(DOC), document_ids=[DOC],
                  details={"via": "console", "section": str(SECTION), "as_member": 8})
    assert str(render(read, names)) == "alice@acme.test read *Merger plans* in *Handbook* as bob@acme.test in the console"
    assert str(render(read, _hidden())) == (
        "alice@acme.test read a section you cannot read in a document you cannot read as a removed member"
        " in the console")


def test_a_search_names_the_readable_documents_it_found_and_never_counts_the_others():
    event = _event(Action.SEARCH, query_text="merger", document_ids=[DOC, OTHER, uuid.uuid4()])
    said = str(render(event, _readable()))
    assert said == f"alice@acme.test searched for “merger” and found hits in *Handbook* and {HIDDEN_HITS.text}"
    only_hidden = str(render(event, _hidden()))
    assert only_hidden == f"alice@acme.test searched for “merger” and found hits only in {HIDDEN_HITS.text}"
    assert not re.search(r"\d", only_hidden)
    nothing = _event(Action.SEARCH, query_text="", query_hash="ab" * 32)
    assert str(render(nothing, _readable())) == (
        "alice@acme.test searched (the text is kept only as a hash) and found nothing")


def test_members_and_settings_in_words():
    update = _event(Action.MEMBERSHIP_UPDATE, target_type="membership", target_id="8", details={
        "before": {"email": "bob@acme.test", "role": "viewer", "clearance": "internal", "is_active": True,
                   "groups": []},
        "after": {"email": "bob@acme.test", "role": "editor", "clearance": "internal", "is_active": False,
                  "groups": ["finance"]}})
    assert str(render(update, Names())) == ("alice@acme.test changed bob@acme.test: role from viewer to editor; "
                                            "groups from none to finance; deactivated them")
    bob = {"email": "bob@acme.test", "role": "viewer", "clearance": "internal", "is_active": True, "groups": []}
    account = _event(Action.MEMBERSHIP_UPDATE, actor_email="", target_type="membership", target_id="8",
                     details={"before": bob, "after": bob, "account": "deactivated"})
    assert str(render(account, Names())) == "Bulkhead itself changed bob@acme.test: deactivated their account on the server"
    scim = _event(Action.MEMBERSHIP_CREATE, actor_email="", target_type="membership", target_id="9",
                  details={"via": "scim", "after": {"email": "dan@acme.test", "role": "viewer", "clearance": "public"}})
    assert str(render(scim, Names())) == "SCIM provisioning added dan@acme.test as viewer with public clearance"
    failed = _event(Action.SIGN_IN_FAILED, actor_email="eve@acme.test", details={"address": "10.0.0.1",
                                                                                  "reason": "locked_out"})
    assert str(render(failed, Names())) == "A sign-in as eve@acme.test failed from 10.0.0.1 (locked out)"


def test_the_ids_a_page_names_are_collected_for_one_lookup():
    events = [
        _event(Action.SECTION_ACCESS, target_type="section", target_id=str(SECTION), document_ids=[DOC]),
        _event(Action.DOCUMENT_READ, target_type="document", target_id=str(OTHER), document_ids=[OTHER],
               details={"section": "not-a-uuid"}),
    ]
    documents, sections = referenced_ids(events)
    assert documents == {str(DOC), str(OTHER)} and sections == {str(SECTION), "not-a-uuid"}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
KEYS = st.sampled_from(["before", "after", "own", "effective", "level", "groups", "email", "role", "decision",
                        "section", "as_member", "via", "membership", "versions", "questions", "name", "address"])
DETAILS = st.dictionaries(KEYS, JSON | st.dictionaries(KEYS, JSON, max_size=4), max_size=5)


@settings(max_examples=100, deadline=None)
@given(action=st.sampled_from(Action.values), details=DETAILS, target_type=st.sampled_from(
    ["", "document", "section", "membership", "chunk", "source", "index_version", "token"]),
    target_id=st.sampled_from(["", "12", str(DOC), str(SECTION), "x"]), actor=st.sampled_from(["", "a@b.test"]),
    hidden=st.booleans())
def test_any_record_is_said_without_failing_and_without_a_title_the_viewer_may_not_read(
        action, details, target_type, target_id, actor, hidden):
    """Old records, fields left out, values of the wrong type: the sentence says less, never fails;
    and a viewer who may read no title is shown none (only the neutral phrases)."""
    event = _event(action, actor_email=actor, target_type=target_type, target_id=target_id,
                   document_ids=[DOC, SECTION][: len(target_id) % 3], details=details, query_text="q")
    said = render(event, _hidden() if hidden else _readable())
    assert isinstance(said, Sentence) and str(said).strip()
    if hidden:
        assert "Handbook" not in str(said) and "Merger plans" not in str(said)


def test_the_neutral_phrases_name_no_count():
    for phrase in (HIDDEN_DOCUMENT, DELETED_DOCUMENT, HIDDEN_SECTION, GONE_SECTION, UNTITLED_SECTION, HIDDEN_HITS):
        assert not re.search(r"\d", phrase.text) and phrase.kind != TITLE


def test_a_sentence_escapes_what_it_shows():
    """The console's ``sentence`` tag builds markup: every text, title and link is escaped."""
    from console.templatetags.console import sentence

    hostile = "<script>alert(1)</script>"
    said = Sentence((Name(hostile, MEMBER), " changed ", Name(hostile, TITLE, url='/x/?a="><img src=x>'),
                     f" from {hostile}"))
    markup = str(sentence(said))
    assert "<script>" not in markup and "<img" not in markup and "&quot;&gt;&lt;img" in markup
    assert markup.count("&lt;script&gt;") == 3 and '<em class="title">' in markup
    assert str(sentence(HIDDEN_SECTION)) == '<span class="neutral">a section you cannot read</span>'
