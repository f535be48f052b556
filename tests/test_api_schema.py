"""The live OpenAPI schema, fuzzed with Schemathesis against the app, authenticated as an admin:
no 5xx, and every response conforms to the schema (status code, content type, body).

Uploads enqueue jobs only after commit; in this (rolled back) test nothing commits, so
jobs stay queued and no worker is needed.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS as CHECK_REGISTRY

from accounts.authentication import TokenRateThrottle

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]

CONFIG = schemathesis.Config.from_dict(
    {
        "checks": {
            # The schema says what shape a value has; the API also refuses values of the right
            # shape (an unknown group slug: 400, an unsupported document type: 415).
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "400", "401", "403", "404", "409", "413", "415", "429"],
            },
        },
    }
)
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "use_after_free",
]


@pytest.fixture(autouse=True)
def _sources_reach_nothing(settings):
    """A fuzzed source preview may name any host: none is reached (private addresses refused, as by
    default), and a public one that does not answer is given up on quickly."""
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS = 1


@pytest.fixture
def admin_key(world, monkeypatch):
    monkeypatch.setattr(TokenRateThrottle, "rate", "100000/minute", raising=False)
    return world.actors["admin"].key


@pytest.fixture
def api_schema(admin_key):
    # Like Django's test client: keep the test's transaction open across requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=CONFIG)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _real_ids(world) -> dict[str, str]:
    """Path parameters that exist, so that the 2xx answers are exercised too (not only 404s)."""
    from accounts.models import ApiToken, Group
    from kb.models import Chunk, IndexVersion, IngestionJob
    from sources.models import Source, SourceDetached, SourceSync
    from tests.conftest import SOURCE_ROOT

    job = IngestionJob.objects.create(tenant=world.tenant, document=world.doc)
    # A flagged chunk, so that the review queue's item answers 200 too.
    flagged = Chunk.objects.get(section_id=world.section_ids["intro"])
    Chunk.objects.filter(pk=flagged.pk).update(
        screening_flagged=True, screening={"flagged": True, "score": 1.0, "reasons": ["override"], "detector": "test",
                                           "spans": [[0, 5]]})
    source = Source.objects.create(tenant=world.tenant, name="wiki", kind="folder", path=str(SOURCE_ROOT / world.tenant.slug / "schema"))
    sync = SourceSync.objects.create(tenant=world.tenant, source=source, status="failed", error="gone")
    detached = SourceDetached.objects.create(tenant=world.tenant, source=source, path="gone.md", access_level=0)
    return {
        "source_id": str(source.id),
        "sync_id": str(sync.id),
        "detached_id": str(detached.id),
        "document_id": str(world.doc.id),
        "section_id": str(world.section_ids["intro"]),
        "job_id": str(job.id),
        "group_id": str(Group.objects.get(tenant=world.tenant, slug="finance").id),
        "membership_id": str(world.actors["viewer"].membership.id),
        "token_id": str(ApiToken.objects.get(membership=world.actors["viewer"].membership).id),
        "version_id": str(IndexVersion.objects.get(tenant=world.tenant, is_active=True).id),
        "chunk_id": str(flagged.id),
    }


# Examples per operation and run: generated data (valid and invalid), then valid data on ids that exist.
RUNS = [(GenerationMode.POSITIVE, False, 8), (GenerationMode.NEGATIVE, False, 6), (GenerationMode.POSITIVE, True, 6)]


def test_api_conforms_to_its_schema(api_schema, admin_key, world):
    """One Hypothesis run per operation and mode; failures are collected and reported together.

    (Schemathesis' own pytest plugin does not run under pytest 9, so the loop is spelled out.)
    """
    checks = [CHECK_REGISTRY.get_one(name) for name in CHECKS]
    headers = {"Authorization": f"Token {admin_key}"}
    real_ids = _real_ids(world)
    failures: dict[str, str] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 18
    # Deleting the document early would turn every later run on it into 404s: delete last.
    operations.sort(key=lambda op: op.method.upper() == "DELETE")
    for operation in operations:
        path_names = {p.name for p in operation.path_parameters}
        for mode, use_real_ids, examples in RUNS:
            if use_real_ids and not path_names:
                continue
            fixed = {name: real_ids[name] for name in path_names} if use_real_ids else None
            strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed)

            @given(case=strategy)
            @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck),
                      derandomize=True, database=None, phases=[Phase.explicit, Phase.generate])
            def run(case):
                case.call_and_validate(headers=headers, checks=checks)

            try:
                run()
            except Unsatisfiable:
                continue  # nothing invalid to send (e.g. no body, a free-form path id)
            except (Exception, BaseExceptionGroup) as exc:  # report every operation's failure, not the first
                failures[f"{operation.label} [{mode.value}{', real ids' if use_real_ids else ''}]"] = str(exc)[:3000]
    assert not failures, "\n\n".join(f"{label}:\n{message}" for label, message in failures.items())


def test_schema_and_docs_are_served(client):
    schema_response = client.get("/api/schema/?format=json")
    assert schema_response.status_code == 200
    paths = schema_response.json()["paths"]
    for path in ("/api/v1/documents/", "/api/v1/documents/{document_id}/", "/api/v1/search/",
                 "/api/v1/sections/{section_id}/", "/api/v1/jobs/{job_id}/", "/api/v1/tokens/{token_id}/revoke/",
                 "/api/v1/documents/{document_id}/as/{membership_id}/", "/api/v1/sections/{section_id}/readers/",
                 "/api/v1/audit/", "/api/v1/audit/export/", "/api/v1/audit/settings/", "/api/v1/review/",
                 "/api/v1/review/{chunk_id}/", "/api/v1/review/heads/{section_id}/", "/api/v1/settings/screening/"):
        assert path in paths
    # A job's progress is null where its document is one the caller can see no part of (its total is the size).
    progress = schema_response.json()["components"]["schemas"]["JobOutput"]["properties"]["progress"]
    assert progress["nullable"] is True and progress["allOf"] == [{"$ref": "#/components/schemas/JobProgress"}]
    # The budget fill: optional, true, false or null (the server's default); what it does and its bounds described.
    search_input = schema_response.json()["components"]["schemas"]["SearchInputRequest"]
    fill = search_input["properties"]["budget_fill"]
    assert (fill["type"], fill["nullable"]) == ("boolean", True) and "budget_fill" not in search_input["required"]
    assert all(words in fill["description"] for words in ("never over context_token_budget", "expand none",
                                                          "server's default"))
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/static/drf_spectacular_sidecar/" in docs.content  # assets served locally, no CDN
    assert b"cdn.jsdelivr" not in docs.content
    assert client.get("/api/redoc/").status_code == 200


def test_max_length_counts_the_string_as_sent():
    """The schema promises maxLength on what the client sends; DRF alone checks after trimming."""
    from rest_framework.exceptions import ValidationError

    from accounts.api_fields import LimitedCharField

    field = LimitedCharField(max_length=5)
    assert field.run_validation(" abc ") == "abc"
    with pytest.raises(ValidationError):
        field.run_validation("abc\x1f\x1f\x1f")  # trimmed it would be 3 characters
