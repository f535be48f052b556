"""The policy-write rules hold in the services themselves, with no view in front of them.

``kb.services`` takes the acting member (``actor`` / ``created_by``) and checks inside: a member of
another tenant sees nothing (404); a viewer may not write (403); a member changes only what they
may read (404) -- and a whole document only when they may read all of it (403); a non-admin sets
no level above their clearance and no group they are not in (403, naming it); unknown names are
400; an upload no parser reads is 415. ``None`` is an internal caller (the command line, the
pipeline): only well-formedness is checked. Each refusal leaves everything as it was.

Before these checks moved into the services they lived in the views (``kb.permissions`` called
from ``kb.apis``): every refusal below went through when a service was called directly.
"""

from __future__ import annotations

import pytest

from accounts.errors import ApplicationError, NotFound, PermissionRefused
from accounts.policy import AccessLevel
from kb.errors import UnsupportedContentType
from kb.models import Chunk, Document, Section
from kb.services import Upload, batch_create, document_create, document_replace, document_set_access, section_set_access
from tests.api_helpers import make_document, snapshot

pytest_plugins = ["tests.api_fixtures"]  # the `world` fixture


def _member(world, name):
    return world.actors[name].membership


def _refused(call, error: type[ApplicationError], message: str = "") -> ApplicationError:
    before = snapshot()
    with pytest.raises(error) as caught:
        call()
    assert message in caught.value.message
    assert snapshot() == before, "a refused write changed something"
    return caught.value


def _section(world, key: str) -> Section:
    return Section.objects.get(pk=world.section_ids[key])


def _assert_policy(section: Section, level: int, groups: tuple) -> None:
    """The section has the policy, and so has each of its chunks (a chunk whose heading prefix the
    change altered is gone until its rebuild, see ``kb.services.apply_policies``)."""
    section.refresh_from_db()
    assert (section.access_level, tuple(section.access_groups)) == (level, groups)
    chunks = {(c.access_level, tuple(c.access_groups)) for c in Chunk.objects.filter(section=section)}
    assert chunks <= {(level, groups)}


# ----------------------------------------------------------------------------- section_set_access


@pytest.mark.parametrize(("actor", "change", "error", "message"), [
    ("other_tenant", {"access_level": "internal", "groups": []}, NotFound, "Not found."),
    ("viewer", {"access_level": "internal", "groups": []}, PermissionRefused, "Only editors and admins"),
    ("low_clearance", {"access_level": "public", "groups": []}, NotFound, "Not found."),  # cannot read it
    ("editor", {"access_level": "restricted", "groups": []}, PermissionRefused,
     "access level 'restricted' is above your clearance ('confidential')"),
    ("editor", {"access_level": "confidential", "groups": ["security-team"]}, PermissionRefused,
     "you are not in group security-team"),
    ("editor", {"access_level": None, "groups": ["security-team"]}, PermissionRefused,
     "you are not in group security-team"),
    ("editor", {"access_level": "top-secret", "groups": []}, ApplicationError, "unknown access level 'top-secret'"),
    ("editor", {"access_level": "internal", "groups": ["no-such-group"]}, ApplicationError, "unknown group"),
])
def test_section_set_access_refuses(world, actor, change, error, message):
    reporting = _section(world, "reporting")  # confidential, no groups
    _refused(lambda: section_set_access(actor=_member(world, actor), section=reporting, **change), error, message)


def test_section_set_access_refuses_the_inherited_policy_the_editor_may_not_set(world):
    """Returning to inheriting is setting the parent's policy: the internal region under a
    restricted security-team playbook may not inherit it through a confidential editor."""
    region = _section(world, "region")
    _refused(lambda: section_set_access(actor=_member(world, "editor"), section=region, access_level=None,
                                        groups=None, inherit=True),
             PermissionRefused, "access level 'restricted' is above your clearance")


def test_section_set_access_as_editor_and_admin(world):
    reporting = _section(world, "reporting")
    section_set_access(actor=_member(world, "editor"), section=reporting, access_level="internal", groups=[])
    _assert_policy(reporting, AccessLevel.INTERNAL, ())
    # An admin may set a level above their clearance and groups they are not in.
    finance = world.tenant.groups.get(slug="finance").id
    section_set_access(actor=_member(world, "admin"), section=reporting, access_level="restricted", groups=["finance"])
    _assert_policy(reporting, AccessLevel.RESTRICTED, (finance,))


def test_section_set_access_for_an_internal_caller(world):
    """``actor=None``: the command line or the pipeline -- no member, so no member's limits."""
    incident = _section(world, "incident")
    section_set_access(actor=None, section=incident, access_level="public", groups=[])
    _assert_policy(incident, AccessLevel.PUBLIC, ())


def test_the_acting_member_must_be_a_membership(world):
    with pytest.raises(TypeError):
        section_set_access(actor=_member(world, "admin").user, section=_section(world, "reporting"),
                           access_level="internal", groups=[])


# ----------------------------------------------------------------------------- document_set_access


@pytest.fixture
def open_doc(world) -> Document:
    """A document the confidential editor may read all of."""
    return make_document(world.tenant, title="Open", sections=[
        ("root", None, "", AccessLevel.INTERNAL, [], "Open preamble."),
    ])


@pytest.mark.parametrize(("actor", "level", "groups", "error", "message"), [
    ("other_tenant", "internal", [], NotFound, "Not found."),
    ("viewer", "internal", [], PermissionRefused, "Only editors and admins"),
    ("editor", "restricted", [], PermissionRefused, "above your clearance"),
    ("editor", "internal", ["finance"], PermissionRefused, "you are not in group finance"),
    ("editor", "secret", [], ApplicationError, "unknown access level"),
])
def test_document_set_access_refuses(world, open_doc, actor, level, groups, error, message):
    _refused(lambda: document_set_access(actor=_member(world, actor), document=open_doc, access_level=level,
                                         groups=groups), error, message)


def test_document_set_access_refuses_an_editor_a_document_they_cannot_read_all_of(world):
    _refused(lambda: document_set_access(actor=_member(world, "editor"), document=world.doc,
                                         access_level="internal", groups=[]),
             PermissionRefused, "sections you cannot read")


def test_document_set_access_as_editor(world, open_doc):
    document_set_access(actor=_member(world, "editor"), document=open_doc, access_level="confidential", groups=[])
    open_doc.refresh_from_db()
    assert (open_doc.access_level, open_doc.access_groups) == (AccessLevel.CONFIDENTIAL, [])


# ----------------------------------------------------------------------------- uploads


def _upload(**policy) -> Upload:
    return Upload(content=b"# Notes\n\nSome text.\n", title="Notes", content_type="text/markdown", **policy)


@pytest.mark.parametrize(("actor", "policy", "error", "message"), [
    ("other_tenant", {}, NotFound, "Not found."),
    ("viewer", {}, PermissionRefused, "Only editors and admins"),
    ("low_clearance", {"access_level": "internal"}, PermissionRefused, "above your clearance ('public')"),
    ("editor", {"access_level": "restricted"}, PermissionRefused, "above your clearance"),
    ("editor", {"groups": ["security-team", "finance"]}, PermissionRefused, "you are not in groups finance, security-team"),
    ("editor", {"access_level": "nope"}, ApplicationError, "unknown access level"),
])
def test_document_create_refuses(world, actor, policy, error, message):
    _refused(lambda: document_create(tenant=world.tenant, created_by=_member(world, actor), upload=_upload(**policy)),
             error, message)


def test_document_create_refuses_a_type_no_parser_reads(world):
    upload = Upload(content=b"\x00\x01binary", title="blob", content_type="application/x-unknown")
    error = _refused(lambda: document_create(tenant=world.tenant, created_by=_member(world, "editor"), upload=upload),
                     UnsupportedContentType)
    assert error.status_code == 415


def test_document_create_by_members_and_internal_callers(world):
    document, job = document_create(tenant=world.tenant, created_by=_member(world, "editor"),
                                    upload=_upload(access_level="confidential"))
    assert document.created_by == _member(world, "editor").user and job.created_by == document.created_by
    security = world.tenant.groups.get(slug="security-team").id
    document, _ = document_create(tenant=world.tenant, created_by=_member(world, "admin"),
                                  upload=_upload(access_level="restricted", groups=["security-team"]))
    assert (document.access_level, document.access_groups) == (AccessLevel.RESTRICTED, [security])
    document, _ = document_create(tenant=world.tenant, created_by=None, upload=_upload(access_level="restricted"))
    assert document.created_by is None and document.access_level == AccessLevel.RESTRICTED


def test_document_replace_refuses(world, open_doc):
    _refused(lambda: document_replace(document=world.doc, created_by=_member(world, "editor"), upload=_upload()),
             PermissionRefused, "sections you cannot read")
    _refused(lambda: document_replace(document=open_doc, created_by=_member(world, "editor"),
                                      upload=_upload(access_level="restricted")),
             PermissionRefused, "above your clearance")
    _refused(lambda: document_replace(document=open_doc, created_by=_member(world, "other_tenant"), upload=_upload()),
             NotFound)


def test_batch_create_checks_every_upload(world):
    uploads = [_upload(), _upload(access_level="restricted")]
    _refused(lambda: batch_create(tenant=world.tenant, created_by=_member(world, "editor"), uploads=uploads),
             PermissionRefused, "above your clearance")
    batch = batch_create(tenant=world.tenant, created_by=None, uploads=uploads)  # the command line
    assert batch.total == 2
