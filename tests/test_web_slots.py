"""One tenant's costly requests cannot take every web thread (kb/web_slots.py; issue 23, finding 1).

Each preview is bounded on its own, but a client sending eight at once held all eight web threads
(2 gunicorn workers x 4 threads) that every tenant's console and API share. A tenant now holds at
most BULKHEAD_PREVIEWS_PER_TENANT previews and BULKHEAD_EVALUATIONS_PER_TENANT evaluations at once,
across every web process (the slots live in Redis); one more answers 429 ``busy`` with Retry-After.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from accounts.services import api_token_create, membership_create, tenant_create
from kb import evaluation
from kb.index_versions import index_version_active
from kb.services import Upload
from kb.web_slots import Busy, tenant_slot
from pipeline.preview import document_preview
from tests.api_helpers import make_document

pytestmark = pytest.mark.django_db

NOTE = Upload(content=b"# Note\n\nCall the desk.\n", title="Note", content_type="text/markdown")


@pytest.fixture
def editors():
    a = tenant_create(slug="slots-a", name="Slots A")
    b = tenant_create(slug="slots-b", name="Slots B")
    return (membership_create(tenant=a, email="e@slots-a.test", role="admin", clearance="restricted"),
            membership_create(tenant=b, email="e@slots-b.test", role="editor", clearance="restricted"))


def _held(tenant_id: int, n: int):
    from contextlib import ExitStack

    stack = ExitStack()
    for _ in range(n):
        stack.enter_context(tenant_slot("preview", tenant_id, limit=2, seconds=60, what="preview"))
    return stack


def test_a_tenant_holding_its_previews_gets_429_and_another_tenant_previews_as_usual(editors):
    a, b = editors
    with _held(a.tenant_id, 2):  # two of A's previews are running (in any web process)
        with pytest.raises(Busy, match="2 previews of this tenant are running already") as refused:
            document_preview(member=a, upload=NOTE)
        assert refused.value.status_code == 429
        assert document_preview(member=b, upload=NOTE).chunks == 1  # B is not held up by A

        _, key = api_token_create(membership=a, name="t")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        response = client.post("/api/v1/documents/preview/", {"title": "Note", "content": "# Note\n\nHi.\n",
                                                              "content_type": "text/markdown"}, format="json")
        assert response.status_code == 429 and response["Retry-After"] == "5"
        assert response.json()["error"]["code"] == "busy"
    assert document_preview(member=a, upload=NOTE).chunks == 1  # released: A previews again


def test_a_slot_is_released_when_its_request_fails(editors):
    a, _ = editors
    for _ in range(3):  # each failed preview gave its slot back
        with pytest.raises(Exception, match="unknown group"):
            document_preview(member=a, upload=Upload(content=b"# H\n\n## P <!-- access: internal; groups: nope -->\nx\n",
                                                     title="x", content_type="text/markdown"))
    with _held(a.tenant_id, 1):
        assert document_preview(member=a, upload=NOTE).chunks == 1


def test_one_evaluation_at_a_time_per_tenant(editors):
    from accounts.policy import AccessLevel

    a, _ = editors
    make_document(a.tenant, title="lobby.md", source="lobby.md",
                  sections=[("root", None, "Lobby", AccessLevel.INTERNAL, [], "The lobby opens at eight.")])
    golden = (json.dumps({"question": "when does the lobby open", "document": "lobby"}) + "\n").encode()
    kwargs = {"versions": [index_version_active(tenant=a.tenant)], "content": golden, "filename": "g.jsonl",
              "ks": (1,), "mode": "keyword"}
    with tenant_slot("evaluation", a.tenant_id, limit=1, seconds=60, what="evaluation"):
        with pytest.raises(Busy, match="1 evaluation of this tenant is running already"):
            evaluation.version_evaluate(member=a, **kwargs)
    assert evaluation.version_evaluate(member=a, **kwargs)[0].doc_hit[1].mean == 1.0
