"""Redis down (restarting, unreachable): the API keeps answering.

Redis holds the throttle counts (the cache) and the broker's queue. Found by the load harness
(``kb_bench load``, scenario ``redis-restart``, docs/reliability.md): while Redis restarted, every
API request answered 500 -- DRF's throttle reads its count from the cache before the view runs,
and the cache raised ``redis.exceptions.ConnectionError``. Now the throttle lets the request
through (it cannot count it) and logs a warning; an upload is stored and its job stays queued in
the database for the sweeper to send once the broker is back (the harness checks that part end to
end: no document is left pending after Redis returns).

No mock of Redis: the cache really points at a unix socket nobody listens on.
"""

from __future__ import annotations

import logging
import uuid

import pytest
from rest_framework.test import APIClient

from accounts.services import api_token_create, membership_create, tenant_create
from bench.private_worker import routed_to

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_down(settings, tmp_path):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"unix://{tmp_path}/nobody-listens.sock?db=1",
            "KEY_PREFIX": "bulkhead",
        }
    }


@pytest.fixture
def client():
    tenant = tenant_create(slug="redis-down", name="Redis down")
    membership = membership_create(tenant=tenant, email="e@redis-down.example", role="editor", clearance="internal")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(membership=membership)[1]}")
    return api


def test_the_api_answers_while_the_throttle_cache_is_down(redis_down, client, caplog):
    with caplog.at_level(logging.WARNING, logger="accounts.authentication"):
        listed = client.get("/api/v1/documents/")
        searched = client.post("/api/v1/search/", {"query": "anything"}, format="json")
        # To a queue no worker serves: the job stays queued, and no worker ingests it while the
        # test's tables are flushed (a session worker did, and the flush deadlocked with it).
        with routed_to(f"nobody-{uuid.uuid4().hex[:8]}"):
            uploaded = client.post("/api/v1/documents/", {"title": "Note", "content": "Call the desk."},
                                   format="json")
    assert listed.status_code == 200, listed.content[:300]
    assert searched.status_code == 200, searched.content[:300]
    assert uploaded.status_code == 201, uploaded.content[:300]
    assert any("throttle" in r.getMessage() for r in caplog.records)

