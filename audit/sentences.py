"""The audit trail in sentences: one renderer per action ("alice@acme.test changed *Merger plans* in
*Handbook* from restricted to confidential").

A renderer reads only the record (actor, target, ids, details) and a :class:`Names` that the caller
resolved **for the viewing member** (the console: ``console.views.audit`` through
``kb.selectors.audit_titles``): a document's or a section's title where that member may read it,
otherwise a neutral phrase ("a section you cannot read"), never the title and never a count of what
is hidden. Nothing here looks a title up, and records never hold one (docs/architecture.md, "An
audited act"), so nothing here can show a title the caller did not resolve as readable.

Every :class:`audit.models.Action` has its renderer in :data:`RENDERERS`
(``tests/test_audit_sentences.py`` fails on one without); a renderer never fails on details of an
unexpected shape (old records, a field left out): it says less.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from audit.models import Action

# ----------------------------------------------------------------------------- names and sentences

TITLE, MEMBER, PLAIN = "title", "member", "plain"


@dataclass(frozen=True)
class Name:
    """Something a sentence names: a title the viewer may read (``kind`` "title", shown emphasised,
    ``*Handbook*`` in text), a member (their e-mail), or a neutral phrase ("a deleted document").
    ``url``: where the console shows it (empty: nowhere to go)."""

    text: str
    kind: str = PLAIN
    url: str = ""

    def __str__(self) -> str:
        return f"*{self.text}*" if self.kind == TITLE else self.text


Part = str | Name


@dataclass(frozen=True)
class Sentence:
    """A record in words: text pieces and the :class:`Name` pieces between them."""

    parts: tuple[Part, ...]

    def __str__(self) -> str:
        return "".join(str(part) for part in self.parts)


# The neutral phrases: what a sentence says instead of a title. None names a count.
HIDDEN_DOCUMENT = Name("a document you cannot read")
DELETED_DOCUMENT = Name("a deleted document")
HIDDEN_SECTION = Name("a section you cannot read")
GONE_SECTION = Name("a section no longer in its document")
UNTITLED_SECTION = Name("an untitled section")
HIDDEN_HITS = Name("documents you cannot read")
GONE_MEMBER = Name("a removed member")


@dataclass(frozen=True)
class Names:
    """What the ids of a page of records are called, as the viewing member may see them.

    ``documents`` and ``sections`` hold an entry for every id that still exists: its title (a
    :data:`TITLE` name) where the viewer may read it, else :data:`HIDDEN_DOCUMENT` /
    :data:`HIDDEN_SECTION`. An id without an entry no longer exists. Keys are ids as strings
    (documents, sections, versions, sources) or membership ids (members)."""

    documents: Mapping[str, Name] = field(default_factory=dict)
    sections: Mapping[str, Name] = field(default_factory=dict)
    members: Mapping[int, Name] = field(default_factory=dict)
    versions: Mapping[str, Name] = field(default_factory=dict)
    sources: Mapping[str, Name] = field(default_factory=dict)

    def document(self, document_id: object, *, gone: Name = DELETED_DOCUMENT) -> Name:
        return self.documents.get(str(document_id), gone)

    def section(self, section_id: object) -> Name:
        return self.sections.get(str(section_id), GONE_SECTION)

    def member(self, membership_id: object) -> Name:
        try:
            return self.members.get(int(membership_id), GONE_MEMBER)
        except (TypeError, ValueError):
            return GONE_MEMBER

    def version(self, version_id: object) -> Name:
        if not version_id:
            return Name("none")
        return self.versions.get(str(version_id), Name(f"a version no longer kept ({str(version_id)[:8]})"))

    def source(self, source_id: object) -> Name:
        return self.sources.get(str(source_id), Name("a deleted source"))


def referenced_ids(events: Iterable[Any]) -> tuple[set[str], set[str]]:
    """The document and section ids a page of records names (to resolve them in one go)."""
    documents: set[str] = set()
    sections: set[str] = set()
    for event in events:
        documents.update(str(d) for d in event.document_ids or ())
        if event.target_type == "document" and event.target_id:
            documents.add(str(event.target_id))
        if event.target_type == "section" and event.target_id:
            sections.add(str(event.target_id))
        section = _dict(event.details).get("section")
        if section:
            sections.add(str(section))
    return documents, sections


# ----------------------------------------------------------------------------- small helpers


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return "" if value is None or isinstance(value, dict | list) else str(value)


def _policy(view: object) -> str:
    """A policy as the trail records it (``{"level": ..., "groups": [...]}``) in words."""
    view = _dict(view)
    level = _text(view.get("level")) or "inherited"
    groups = [str(g) for g in _list(view.get("groups")) if not isinstance(g, dict | list)]
    return f"{level} (groups: {', '.join(groups)})" if groups else level


def _operator(event) -> bool:
    """Made by the installation's operator (the Django admin: ``audit.services.audit_operator``), not a member."""
    return bool(_dict(event.details).get("operator")) and bool(event.actor_email)


def _actor(event) -> Name:
    if _operator(event):
        return Name(f"The operator {event.actor_email} on the server")
    if event.actor_email:
        return Name(event.actor_email, MEMBER)
    via = _text(_dict(event.details).get("via"))
    return Name({"scim": "SCIM provisioning", "sso": "Single sign-on"}.get(via, "Bulkhead itself"))


def _via(event) -> str:
    via = _text(_dict(event.details).get("via"))
    return {"mcp": " through MCP", "api": " through the API", "console": " in the console"}.get(via, "")


def _document(event, names: Names, *, gone: Name = DELETED_DOCUMENT) -> Name:
    """The record's document: its target when it is one, else its first document id."""
    if event.target_type == "document" and event.target_id:
        return names.document(event.target_id, gone=gone)
    ids = list(event.document_ids or ())
    return names.document(ids[0], gone=gone) if ids else Name("a document")


def _join(names: list[Part]) -> list[Part]:
    """``a``, ``a and b``, ``a, b and c`` as parts."""
    out: list[Part] = []
    for i, name in enumerate(names):
        if i:
            out.append(" and " if i == len(names) - 1 else ", ")
        out.append(name)
    return out


def _changes(before: dict, after: dict, fields: Mapping[str, str]) -> list[str]:
    """``role from viewer to editor`` for each of ``fields`` (key: label) that differs."""
    out = []
    for key, label in fields.items():
        old, new = before.get(key), after.get(key)
        if key in after and old != new:
            old_text = ", ".join(map(str, old)) if isinstance(old, list) else _text(old)
            new_text = ", ".join(map(str, new)) if isinstance(new, list) else _text(new)
            out.append(f"{label} from {old_text or 'none'} to {new_text or 'none'}")
    return out


def _rights(view: dict) -> str:
    """`` as editor with confidential clearance`` from a membership's or an invitation's view."""
    role, clearance = _text(view.get("role")), _text(view.get("clearance"))
    text = f" as {role}" if role else ""
    return text + (f" with {clearance} clearance" if clearance else "")


# ----------------------------------------------------------------------------- one renderer per action

Renderer = Callable[[Any, Names], tuple[Part, ...]]


def _search(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    query = f"searched for “{event.query_text}”" if event.query_text else "searched (the text is kept only as a hash)"
    parts: list[Part] = [_actor(event), " ", query]
    if details.get("as_member") is not None:
        parts += [" as ", names.member(details["as_member"])]
    parts.append(_via(event))
    readable, hidden = [], False
    for document_id in event.document_ids or ():
        name = names.document(document_id, gone=HIDDEN_HITS)
        if name.kind == TITLE:
            readable.append(name)
        else:
            hidden = True
    if not readable and not hidden:
        return (*parts, " and found nothing")
    found: list[Part] = [*readable, HIDDEN_HITS] if hidden else readable
    if hidden and not readable:
        return (*parts, " and found hits only in ", HIDDEN_HITS)
    return (*parts, " and found hits in ", *_join(found))


def _document_read(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    parts: list[Part] = [_actor(event), " read "]
    if details.get("section"):
        parts += [names.section(details["section"]), " in "]
    parts.append(_document(event, names))
    if details.get("as_member") is not None:
        parts += [" as ", names.member(details["as_member"])]
    return (*parts, _via(event))


def _document_create(event, names: Names) -> tuple[Part, ...]:
    after = _dict(_dict(event.details).get("after"))
    policy = f" for {_policy(after['policy'])} readers" if _dict(after.get("policy")) else ""
    return (_actor(event), " uploaded ", _document(event, names), policy)


def _document_replace(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), " uploaded new content for ", _document(event, names))


def _document_delete(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), " deleted ", _document(event, names, gone=Name("a document")))


def _document_access(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    return (_actor(event), " changed the default access of ", _document(event, names),
            f" from {_policy(details.get('before'))} to {_policy(details.get('after'))}")


def _section_access(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before, after = _dict(details.get("before")), _dict(details.get("after"))
    inherits = " (it now follows its parent)" if "own" in after and after.get("own") is None else ""
    return (_actor(event), " changed ", names.section(event.target_id), " in ", _document(event, names),
            f" from {_policy(before.get('effective'))} to {_policy(after.get('effective'))}{inherits}")


def _membership_name(event, names: Names, view: dict) -> Part:
    email = _text(view.get("email"))
    return Name(email, MEMBER) if email else names.member(event.target_id)


def _membership_create(event, names: Names) -> tuple[Part, ...]:
    after = _dict(_dict(event.details).get("after"))
    return (_actor(event), " added ", _membership_name(event, names, after), _rights(after))


def _membership_update(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before, after = _dict(details.get("before")), _dict(details.get("after"))
    changes = _changes(before, after, {"role": "role", "clearance": "clearance", "groups": "groups"})
    if "is_active" in after and before.get("is_active") != after.get("is_active"):
        changes.append("reactivated them" if after.get("is_active") else "deactivated them")
    if before.get("email") and after.get("email") and before.get("email") != after.get("email"):
        changes.append(f"address from {_text(before.get('email'))} to {_text(after.get('email'))}")
    if details.get("sso_unlinked"):
        changes.append("unlinked their single sign-on")
    if details.get("tokens_revoked"):
        changes.append("revoked their API tokens")
    if details.get("account") in ("deactivated", "reactivated"):
        changes.append(f"{details['account']} their account" + ("" if _operator(event) else " on the server"))
    said = ": " + "; ".join(changes) if changes else ""
    return (_actor(event), " changed ", _membership_name(event, names, after or before), said)


def _membership_delete(event, names: Names) -> tuple[Part, ...]:
    before = _dict(_dict(event.details).get("before"))
    return (_actor(event), " removed ", _membership_name(event, names, before))


def _group_name(view: dict) -> str:
    return _text(view.get("name")) or _text(view.get("slug")) or "a group"


def _group_create(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), f" created the group “{_group_name(_dict(_dict(event.details).get('after')))}”")


def _group_update(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before, after = _dict(details.get("before")), _dict(details.get("after"))
    if before.get("name") != after.get("name") and before.get("name") is not None:
        return (_actor(event), f" renamed the group “{_group_name(before)}” to “{_group_name(after)}”")
    return (_actor(event), f" changed the group “{_group_name(after or before)}”")


def _group_delete(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), f" deleted the group “{_group_name(_dict(_dict(event.details).get('before')))}”")


def _token(view: dict) -> str:
    """`` “deploy bot” (ab12cd34…)`` from a token's view."""
    name, prefix = _text(view.get("name")), _text(view.get("prefix"))
    return (f" “{name}”" if name else "") + (f" ({prefix}…)" if prefix else "")


def _token_create(event, names: Names) -> tuple[Part, ...]:
    after = _dict(_dict(event.details).get("after"))
    parts: list[Part] = [_actor(event), " created an API token", _token(after)]
    if after.get("membership") is not None:
        parts += [" for ", names.member(after["membership"])]
    return tuple(parts)


def _because(details: dict) -> str:
    """`` (its minter was deactivated)``: why a token was revoked without an admin's click."""
    reason = _text(details.get("reason"))
    return f" ({reason})" if reason else ""


def _token_revoke(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before = _dict(details.get("before"))
    parts: list[Part] = [_actor(event), " revoked the API token", _token(before)]
    if before.get("membership") is not None:
        parts += [" of ", names.member(before["membership"])]
    return (*parts, _because(details))


def _version_activate(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before = _dict(details.get("before")).get("active")
    forced = " (forced, with documents missing from it)" if details.get("forced") else ""
    return (_actor(event), " made index version ", names.version(event.target_id), " the active one (it was ",
            names.version(before), ")", forced)


def _version_evaluate(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    versions = [names.version(v) for v in _list(details.get("versions")) if isinstance(v, str)]
    questions = details.get("questions")
    asked = f" on {questions} golden questions" if isinstance(questions, int) else ""
    return (_actor(event), " evaluated index version" + "s" * (len(versions) > 1) + " ",
            *(_join(versions) or [names.version(event.target_id)]), asked)


def _address(event) -> str:
    address = _text(_dict(event.details).get("address"))
    return f" from {address}" if address else ""


def _sign_in(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), " signed in" + _address(event))


def _sign_in_failed(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    reason = _text(details.get("reason")).replace("_", " ")
    method = " with single sign-on" if details.get("method") == "sso" else ""
    return ("A sign-in as ", _actor(event), f" failed{method}" + _address(event) + (f" ({reason})" if reason else ""))


def _audit_settings(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before, after = _dict(details.get("before")), _dict(details.get("after"))
    said = []
    if before.get("retention_days") != after.get("retention_days"):
        said.append(f"records kept {_text(after.get('retention_days'))} days (was {_text(before.get('retention_days'))})")
    if before.get("hash_queries") != after.get("hash_queries"):
        said.append("search texts kept only as a hash" if after.get("hash_queries") else "search texts kept as typed")
    return (_actor(event), " changed the audit settings" + (": " + "; ".join(said) if said else ""))


def _invitation_create(event, names: Names) -> tuple[Part, ...]:
    after = _dict(_dict(event.details).get("after"))
    email = _text(after.get("email"))
    return (_actor(event), " invited ", Name(email, MEMBER) if email else Name("someone"), _rights(after))


def _invitation_accept(event, names: Names) -> tuple[Part, ...]:
    after = _dict(_dict(event.details).get("after"))
    return (_actor(event), " accepted an invitation and joined" + _rights(after))


def _invitation_revoke(event, names: Names) -> tuple[Part, ...]:
    email = _text(_dict(_dict(event.details).get("before")).get("email"))
    return (_actor(event), " withdrew the invitation of ", Name(email, MEMBER) if email else Name("someone"))


def _password_reset_request(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), " asked for a password reset link" + _address(event))


def _password_reset(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    if details.get("on_server"):  # ``manage.py kb_user set-password`` (accounts.invitations.operator_password_set)
        revoked = " and revoked their API tokens" if _list(details.get("tokens_revoked")) else ""
        who = _actor(event) if event.actor_email else Name("An operator")
        return (who, " set a new password for ", _membership_name(event, names, details), " on the server",
                revoked)
    return (_actor(event), " set a new password with a reset link" + _address(event))


def _scim_token(verb: str) -> Renderer:
    def render(event, names: Names) -> tuple[Part, ...]:
        details = _dict(event.details)
        return (_actor(event), f" {verb} the SCIM token", _token(_dict(details.get("after") or details.get("before"))),
                _because(details))
    return render


def _sso_settings(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before, after = _dict(details.get("before")), _dict(details.get("after"))
    if bool(before.get("enabled")) != bool(after.get("enabled")):
        said = " turned single sign-on " + ("on" if after.get("enabled") else "off")
    else:
        said = " changed the single sign-on settings"
    return (_actor(event), said)


def _source_name(event, names: Names, view: dict) -> Name:
    name = _text(view.get("name"))
    return Name(name, TITLE) if name else names.source(event.target_id)


def _source_create(event, names: Names) -> tuple[Part, ...]:
    after = _dict(_dict(event.details).get("after"))
    kind = _text(after.get("kind"))
    return (_actor(event), " added the source ", _source_name(event, names, after), f" ({kind})" if kind else "")


def _source_update(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    return (_actor(event), " changed the source ", _source_name(event, names, _dict(details.get("after"))))


def _source_delete(event, names: Names) -> tuple[Part, ...]:
    before = _dict(_dict(event.details).get("before"))
    return (_actor(event), " deleted the source ", _source_name(event, names, before), " and the documents it brought")


def _source_sync(event, names: Names) -> tuple[Part, ...]:
    scheduled = _dict(event.details).get("scheduled")
    return (_actor(event), " started a sync of ", names.source(event.target_id), " (on its schedule)" * bool(scheduled))


def _source_detach(event, names: Names) -> tuple[Part, ...]:
    return (_actor(event), " detached ", _document(event, names), " from ", names.source(event.target_id))


def _source_reattach(event, names: Names) -> tuple[Part, ...]:
    if event.document_ids:  # the detached document, taken back by the source
        return (_actor(event), " re-attached ", _document(event, names), " to ", names.source(event.target_id))
    return (_actor(event), " re-attached a detached path of ", names.source(event.target_id),
            " (its document deleted since)")


def _screening_settings(event, names: Names) -> tuple[Part, ...]:
    details = _dict(event.details)
    before = _text(_dict(details.get("before")).get("screening")) or "unknown"
    after = _text(_dict(details.get("after")).get("screening")) or "unknown"
    return (_actor(event), f" changed screening from {before} to {after}")


def _review_decision(event, names: Names) -> tuple[Part, ...]:
    decision = _dict(event.details).get("decision")
    if decision == "release":
        return (_actor(event), " released a held chunk in ", _document(event, names))
    if decision == "keep_out":
        return (_actor(event), " kept a held chunk in ", _document(event, names), " out of search")
    if decision == "delete_document":
        return (_actor(event), " deleted ", _document(event, names, gone=Name("a document")),
                " for a held chunk in it")
    return (_actor(event), " decided on a held chunk in ", _document(event, names))


RENDERERS: dict[str, Renderer] = {
    Action.SEARCH: _search,
    Action.DOCUMENT_READ: _document_read,
    Action.DOCUMENT_CREATE: _document_create,
    Action.DOCUMENT_REPLACE: _document_replace,
    Action.DOCUMENT_DELETE: _document_delete,
    Action.DOCUMENT_ACCESS: _document_access,
    Action.SECTION_ACCESS: _section_access,
    Action.MEMBERSHIP_CREATE: _membership_create,
    Action.MEMBERSHIP_UPDATE: _membership_update,
    Action.MEMBERSHIP_DELETE: _membership_delete,
    Action.GROUP_CREATE: _group_create,
    Action.GROUP_UPDATE: _group_update,
    Action.GROUP_DELETE: _group_delete,
    Action.TOKEN_CREATE: _token_create,
    Action.TOKEN_REVOKE: _token_revoke,
    Action.INDEX_VERSION_ACTIVATE: _version_activate,
    Action.INDEX_VERSION_EVALUATE: _version_evaluate,
    Action.SIGN_IN: _sign_in,
    Action.SIGN_IN_FAILED: _sign_in_failed,
    Action.AUDIT_SETTINGS: _audit_settings,
    Action.INVITATION_CREATE: _invitation_create,
    Action.INVITATION_ACCEPT: _invitation_accept,
    Action.INVITATION_REVOKE: _invitation_revoke,
    Action.PASSWORD_RESET_REQUEST: _password_reset_request,
    Action.PASSWORD_RESET: _password_reset,
    Action.SCIM_TOKEN_CREATE: _scim_token("created"),
    Action.SCIM_TOKEN_REVOKE: _scim_token("revoked"),
    Action.SSO_SETTINGS: _sso_settings,
    Action.SOURCE_CREATE: _source_create,
    Action.SOURCE_UPDATE: _source_update,
    Action.SOURCE_DELETE: _source_delete,
    Action.SOURCE_SYNC: _source_sync,
    Action.SOURCE_DETACH: _source_detach,
    Action.SOURCE_REATTACH: _source_reattach,
    Action.SCREENING_SETTINGS: _screening_settings,
    Action.REVIEW_DECISION: _review_decision,
}

# The action filter's words (one per action, like the renderers).
ACTION_LABELS: dict[str, str] = {
    Action.SEARCH: "Searches",
    Action.DOCUMENT_READ: "Document reads",
    Action.DOCUMENT_CREATE: "Uploads",
    Action.DOCUMENT_REPLACE: "New content for a document",
    Action.DOCUMENT_DELETE: "Document deletions",
    Action.DOCUMENT_ACCESS: "Document access changes",
    Action.SECTION_ACCESS: "Section access changes",
    Action.MEMBERSHIP_CREATE: "Members added",
    Action.MEMBERSHIP_UPDATE: "Member changes",
    Action.MEMBERSHIP_DELETE: "Members removed",
    Action.GROUP_CREATE: "Groups created",
    Action.GROUP_UPDATE: "Group changes",
    Action.GROUP_DELETE: "Groups deleted",
    Action.TOKEN_CREATE: "API tokens created",
    Action.TOKEN_REVOKE: "API tokens revoked",
    Action.INDEX_VERSION_ACTIVATE: "Index version activations",
    Action.INDEX_VERSION_EVALUATE: "Index version evaluations",
    Action.SIGN_IN: "Sign-ins",
    Action.SIGN_IN_FAILED: "Failed sign-ins",
    Action.AUDIT_SETTINGS: "Audit settings changes",
    Action.INVITATION_CREATE: "Invitations sent",
    Action.INVITATION_ACCEPT: "Invitations accepted",
    Action.INVITATION_REVOKE: "Invitations withdrawn",
    Action.PASSWORD_RESET_REQUEST: "Password reset requests",
    Action.PASSWORD_RESET: "Passwords reset",
    Action.SCIM_TOKEN_CREATE: "SCIM tokens created",
    Action.SCIM_TOKEN_REVOKE: "SCIM tokens revoked",
    Action.SSO_SETTINGS: "Single sign-on settings changes",
    Action.SOURCE_CREATE: "Sources added",
    Action.SOURCE_UPDATE: "Source changes",
    Action.SOURCE_DELETE: "Sources deleted",
    Action.SOURCE_SYNC: "Source syncs",
    Action.SOURCE_DETACH: "Documents detached from a source",
    Action.SOURCE_REATTACH: "Detached paths re-attached to a source",
    Action.SCREENING_SETTINGS: "Screening settings changes",
    Action.REVIEW_DECISION: "Review decisions",
}


def render(event, names: Names) -> Sentence:
    """``event`` as one sentence, naming what it refers to as ``names`` (resolved for the viewer) says.
    An action without a renderer (a record newer than this code) is said plainly, by its code."""
    renderer = RENDERERS.get(event.action)
    if renderer is None:
        return Sentence((_actor(event), f" did “{event.action}”"))
    parts = tuple(p for p in renderer(event, names) if p != "")
    return Sentence(parts)
