"""The Django admin cannot put access out of step: a superuser posting a changed policy or text
for a document, a section or a chunk changes nothing that search reads.

Search filters on the policy *copied onto each chunk* and embeds the heading path into each
chunk's text; only the services (``kb.services.section_set_access``, ``document_set_access``,
``apply_policies``) change a policy together with its chunks. Before the admin showed these
fields read-only, saving a section's change form with a new ``access_level`` changed the
section while its chunks kept the old policy (and the same for a document's default and a
chunk's own copy).
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory
from django.urls import reverse

from accounts.models import Group, User
from accounts.policy import AccessLevel
from kb.models import Chunk, Document, Section

pytest_plugins = ["tests.api_fixtures"]  # the `world` fixture


def _state() -> dict:
    """Every policy and text field of documents, sections and chunks."""
    return {
        "documents": sorted(Document.objects.values_list("id", "access_level", "access_groups", "text", "raw")),
        "sections": sorted(Section.objects.values_list(
            "id", "own_level", "own_groups", "access_level", "access_groups", "heading_path", "title", "start", "end",
        )),
        "chunks": sorted(Chunk.objects.values_list(
            "id", "access_level", "access_groups", "text", "embed_text", "start", "end", "section_id",
        )),
    }


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser("root@example.com", "not-a-secret")


def _change_form_post(obj, user: User, **changes):
    """Post ``obj``'s admin change form as a superuser would: every field the form has, with its
    present value, and ``changes`` on top (whether or not the form still has those fields)."""
    model_admin = admin.site._registry[type(obj)]
    request = RequestFactory().get("/")
    request.user = user
    form = model_admin.get_form(request, obj, change=True)(instance=obj)
    data = {}
    for name in form.fields:
        value = form[name].value()
        data[name] = "" if value is None else value
    data.update(changes)
    client = Client()
    client.force_login(user)
    url = reverse(f"admin:kb_{type(obj)._meta.model_name}_change", args=[obj.pk])
    return client.post(url, data)


# A public, group-free policy, as the admin form posts it.
WIDENED = {"access_level": str(int(AccessLevel.PUBLIC)), "access_groups": ""}


def test_section_change_form_cannot_change_policy_or_text(world, superuser):
    section = Section.objects.get(pk=world.section_ids["incident"])  # restricted, security-team
    assert section.access_level == AccessLevel.RESTRICTED
    before = _state()
    response = _change_form_post(
        section, superuser, own_level=str(int(AccessLevel.PUBLIC)), own_groups="", **WIDENED,
        heading_path="Leaked title", title="Leaked title",
    )
    assert response.status_code in (302, 403), response.status_code
    assert _state() == before


def test_document_change_form_cannot_change_policy_or_text(world, superuser):
    document = Document.objects.get(pk=world.doc.pk)
    before = _state()
    response = _change_form_post(document, superuser, text="Replaced text", **WIDENED)
    assert response.status_code in (200, 302, 403), response.status_code
    assert _state() == before


def test_chunk_change_form_cannot_change_policy_or_text(world, superuser):
    security = Group.objects.get(tenant=world.tenant, slug="security-team")
    chunk = Chunk.objects.get(section_id=world.section_ids["incident"])
    assert (chunk.access_level, chunk.access_groups) == (AccessLevel.RESTRICTED, [security.id])
    before = _state()
    response = _change_form_post(chunk, superuser, text="Other text", embed_text="Other text", **WIDENED)
    assert response.status_code in (302, 403), response.status_code
    assert _state() == before


def test_admin_still_lists_and_shows_them(world, superuser):
    """Read-only, not gone: the lists and the change pages still answer."""
    client = Client()
    client.force_login(superuser)
    chunk = Chunk.objects.filter(document=world.doc).first()
    for name, obj in (("document", world.doc), ("section", chunk.section), ("chunk", chunk)):
        assert client.get(reverse(f"admin:kb_{name}_changelist")).status_code == 200
        assert client.get(reverse(f"admin:kb_{name}_change", args=[obj.pk])).status_code == 200
