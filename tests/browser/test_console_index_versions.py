"""Index versions in a real browser (admins): a bad setting refused beside its field; create, build to
ready on a real worker with the progress bar reaching the end, evaluate on a tiny golden file, and
activate after a confirmation -- refused first, as the API refuses, while the version lacks documents."""

from __future__ import annotations

import json

import pytest

from accounts.passwords import user_set_password
from accounts.services import membership_create, tenant_create
from kb.models import IndexVersion
from kb.services import Upload, document_create
from tests.browser.conftest import JOB_TIMEOUT_MS, PASSWORD, sign_in
from tests.ingestion_helpers import wait_for_jobs

pytestmark = pytest.mark.browser

RIVERS = ("# Rivers\n\nThe Danube flows through Vienna and Budapest on its way to the Black Sea.\n\n"
          "## Fish\n\nSalmon swim upstream every autumn to spawn in the gravel beds.\n")
BIRDS = ("# Birds\n\nOwls hunt at night and sleep through the day in hollow trees.\n\n"
         "## Swifts\n\nSwifts sleep while flying and land only to nest.\n")


@pytest.fixture
def world(transactional_db):
    tenant = tenant_create(slug="acme", name="Acme")
    admin = membership_create(tenant=tenant, email="admin@acme.test", role="admin", clearance="restricted")
    user_set_password(email="admin@acme.test", password=PASSWORD)
    return {"tenant": tenant, "admin": admin}


def _new_version_form(page):
    page.goto("/versions/")
    return page.locator("#new-version")


def test_an_invalid_setting_is_refused_beside_its_field(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    form = _new_version_form(page)
    assert form.get_by_label("Target tokens", exact=True).input_value() == "192"  # every setting starts at its default
    form.get_by_label("Overlap", exact=True).fill("1.5")
    page.get_by_role("button", name="Create version").click()
    overlap = page.locator("#new-version div").filter(has=page.get_by_label("Overlap", exact=True)).last
    assert "overlap must be in [0, 1)" in overlap.get_by_role("alert").inner_text()
    assert page.get_by_label("Overlap", exact=True).input_value() == "1.5"  # what was typed stays to be corrected

    form = _new_version_form(page)
    form.get_by_label("Target tokens", exact=True).fill("400")
    page.get_by_role("button", name="Create version").click()
    target = page.locator("#new-version div").filter(has=page.get_by_label("Target tokens", exact=True)).last
    assert "exceeds the model limit max_tokens=256" in target.get_by_role("alert").inner_text()

    form = _new_version_form(page)
    form.get_by_label("Model").fill("someone/another-model")
    page.get_by_role("button", name="Create version").click()
    model = page.locator("#new-version div").filter(has=page.get_by_label("Model")).last
    assert "model must be 'sentence-transformers/all-MiniLM-L6-v2'" in model.get_by_role("alert").inner_text()
    assert not IndexVersion.objects.filter(tenant=world["tenant"]).exists()


@pytest.mark.worker
def test_create_build_evaluate_and_activate_a_version(page, world, celery_worker, tmp_path):
    tenant = world["tenant"]
    jobs = [document_create(tenant=tenant, created_by=None, upload=Upload(
        content=text.encode(), title=name, source=name, content_type="text/markdown"))[1].id
        for name, text in (("rivers.md", RIVERS), ("birds.md", BIRDS))]
    assert all(j.status == "succeeded" for j in wait_for_jobs(jobs))

    sign_in(page, "admin@acme.test", PASSWORD)
    page.get_by_role("link", name="Versions").click()
    form = page.locator("#new-version")
    form.get_by_label("Name").fill("small")
    form.get_by_label("Target tokens", exact=True).fill("24")
    form.get_by_label("Overlap", exact=True).fill("0")
    page.get_by_role("button", name="Create version").click()
    page.get_by_role("status").filter(has_text="was created").wait_for()
    version = IndexVersion.objects.get(tenant=tenant, name="small")
    assert version.config["target_tokens"] == 24 and not version.is_active
    assert page.locator("#build-never").is_visible()

    # Not built yet: activation is refused as the API refuses it, and only then is force offered.
    page.get_by_role("link", name="Activate…").click()
    page.get_by_role("button", name="Activate").wait_for()  # the activation page, not the one it leaves
    assert page.get_by_label("Activate anyway (force)").count() == 0
    page.get_by_role("button", name="Activate").click()
    refusal = page.locator("#refusal").inner_text()
    assert "not built for every ready document" in refusal and "'birds.md'" in refusal
    assert page.get_by_label("Activate anyway (force)").is_visible()
    assert not IndexVersion.objects.get(pk=version.pk).is_active
    page.get_by_role("link", name="Cancel").click()

    page.get_by_role("button", name="Build").click()
    page.locator("#build-status", has_text="succeeded").wait_for(timeout=JOB_TIMEOUT_MS)
    bar = page.locator("#build-bar")
    assert bar.get_attribute("value") == bar.get_attribute("max") == "2"
    assert page.locator("#build-count").inner_text() == "2/2"
    version.refresh_from_db()
    assert version.status == "ready"

    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(q) for q in [
        {"question": "where do owls hunt", "document": "birds", "spans": [[BIRDS.index("Owls"), BIRDS.index("day") + 3]]},
        {"question": "salmon spawn upstream", "document": "rivers.md"},
    ]) + "\n")
    page.get_by_label("Golden file").set_input_files(str(golden))
    page.get_by_label("Mode").select_option("keyword")
    page.get_by_label("Depths k").fill("1,3")
    page.get_by_role("button", name="Evaluate").click()
    metrics = page.locator("#metrics")
    metrics.wait_for()
    headers = metrics.locator("thead th").all_inner_texts()
    assert headers[1] == f"small {version.short_id}" and len(headers) == 3  # beside the active version
    hit = metrics.get_by_role("row").filter(has_text="document hit@3").locator("td").all_inner_texts()
    assert hit[0] == "100.0"
    assert page.locator("#eval-chart rect.bar").count() > 0

    page.get_by_role("link", name="Activate…").click()
    page.get_by_role("heading", name=f"Activate small {version.short_id}?").wait_for()
    page.get_by_role("button", name="Activate").click()
    page.get_by_role("status").filter(has_text="is now active").wait_for()
    assert page.locator("#active-flag").is_visible()
    assert IndexVersion.objects.get(pk=version.pk).is_active
    assert IndexVersion.objects.filter(tenant=tenant, is_active=True).count() == 1
