"""The soak-and-chaos harness (``manage.py kb_bench load``, bench/load_harness.py): its oracle, and
its short version -- about 40 s of the mixed load with one fault -- end to end.

The short run starts its own embedded PostgreSQL and Redis, gunicorn, a Celery worker and beat
on a data folder of its own (beside the suite's), kills the worker's pool process while it embeds
a large document, and asserts on what the harness reports: no leak, no 500, no stale authority,
every invariant holding after the settle time, the killed job finished. Never on latency. Everything
it started is stopped afterwards, also when it fails. The long soak (every fault, scale-out) runs
by hand: ``make soak``; its results are in docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.load_harness import LEVELS, AccessModel, History, MemberRecord, kill_leftovers
from bulkhead import embedded_services
from tests.bounds import JOB_WAIT, START_WAIT

ROOT = Path(__file__).resolve().parent.parent


# ----------------------------------------------------------------------------- the oracle (no servers)


def _member(model: AccessModel, clearance: str, groups=()) -> MemberRecord:
    member = MemberRecord(name=f"t/{clearance}", tenant="t", role="viewer", email="m@t.example",
                          state=History((LEVELS[clearance], frozenset(groups), True)))
    model.members[member.name] = member
    return member


def _canary(model: AccessModel, doc, label: str) -> bytes:
    return next(c for c, (d, lbl) in model.canaries.items() if d is doc and lbl == label)


def test_the_oracle_calls_a_canary_above_the_members_access_a_leak():
    import random

    model = AccessModel(random.Random(1))
    doc = model.new_doc("t", default="internal")
    model.content(doc)
    internal, restricted = _member(model, "internal"), _member(model, "restricted", ("beta",))
    incident = _canary(model, doc, "incident")  # restricted
    overview = _canary(model, doc, "overview")  # the internal default
    assert model.judge(internal, {overview: []}, 1, 2) == []
    assert [f["kind"] for f in model.judge(internal, {incident: []}, 1, 2)] == ["unreadable section served"]
    assert model.judge(restricted, {incident: []}, 1, 2) == []
    other = MemberRecord(name="u/r", tenant="u", role="viewer", email="r@u.example",
                         state=History((LEVELS["restricted"], frozenset(), True)))
    assert [f["kind"] for f in model.judge(other, {overview: []}, 1, 2)] == ["another tenant's canary"]
    assert [f["kind"] for f in model.judge(internal, {b"cnry000000000000": []}, 1, 2)] == ["unknown canary"]


def test_the_oracle_accepts_either_side_of_a_change_only_while_the_request_overlaps_it():
    import random

    model = AccessModel(random.Random(2))
    doc = model.new_doc("t", default="internal")
    model.content(doc)
    internal = _member(model, "internal")
    finance = _canary(model, doc, "finance")  # confidential
    doc.own["finance"].set((LEVELS["internal"], frozenset()), sent=10, received=11)  # widened at 10..11
    assert model.judge(internal, {finance: []}, 5, 9) != []  # before the change was sent: a leak
    assert model.judge(internal, {finance: []}, 9, 10.5) == []  # raced it: either side is possible
    assert model.judge(internal, {finance: []}, 12, 13) == []
    doc.own["finance"].set((LEVELS["restricted"], frozenset()), sent=20, received=21, definitive=False)
    assert model.judge(internal, {finance: []}, 30, 31) == []  # outcome unknown: still possibly internal
    doc.own["finance"].set((LEVELS["restricted"], frozenset()), sent=40, received=41)
    assert model.judge(internal, {finance: []}, 50, 51) != []  # definitively restricted since 41
    doc.deleted_at = 60
    assert [f["kind"] for f in model.judge(internal, {finance: []}, 61, 62)] == ["deleted document served"]


def test_the_sync_scenario_calls_a_duplicate_a_loss_or_stale_bytes_a_failure():
    """The sync scenario's oracle: the source's documents and items against the repository's files."""
    from bench.load_harness import sync_differences, verdict

    files = {"a.md": b"A", "b.md": b"B", "c/d.md": b"D"}
    documents = [("a.md", b"A"), ("b.md", b"B"), ("c/d.md", b"D")]
    assert not any(sync_differences(files, documents, list(files)).values())
    wrong = sync_differences(files, [("a.md", b"A"), ("a.md", b"A"), ("b.md", b"old"), ("gone.md", b"G")],
                             ["a.md", "b.md", "b.md"])
    assert wrong == {"duplicate documents": ["a.md"], "duplicate items": ["b.md"],
                     "files without a document": ["c/d.md"], "files without an item": ["c/d.md"],
                     "documents of no file": ["gone.md"], "documents with other bytes": ["b.md"]}

    def result(**fault) -> dict:
        clean = {k: [] for k in wrong}
        fault = {"injected": True, "files": 160, "first_sync": {"status": "succeeded", "attempts": 2, "added": 160},
                 "second_sync": {"status": "succeeded", "added": 10, "changed": 10, "renamed": 10, "deleted": 10},
                 "first_differences": clean, "second_differences": clean, **fault}
        load = {"leaks": 0, "stale_authority": 0, "problems": {}}
        invariants = {"violations": {}, "deleted documents found by search": 0, "documents failed by the fault": []}
        return {"name": "sync", "load": load, "invariants": invariants, "settle_s": 1.0, "fault": fault}

    assert verdict(result()) == "PASS"
    assert "not delivered again" in verdict(result(first_sync={"status": "succeeded", "attempts": 1, "added": 160}))
    assert "counted 150 added" in verdict(result(first_sync={"status": "succeeded", "attempts": 2, "added": 150}))
    lost = verdict(result(first_differences={**{k: [] for k in wrong}, "files without a document": ["x.md"]}))
    assert lost.startswith("FAIL") and "files without a document (1)" in lost, lost
    assert "the second sync counted" in verdict(result(second_sync={"status": "succeeded", "added": 20, "changed": 10,
                                                                    "renamed": 0, "deleted": 20}))
    assert "fault not injected" in verdict(result(injected=False, why="the sync ended first"))


# ----------------------------------------------------------------------------- the short soak


def _data_dir() -> Path:
    """Beside the suite's own data folder, so suites on different folders never share one."""
    base = embedded_services.data_path()
    return base.parent / f"{base.name}-load"


def test_a_document_failed_by_a_fault_fails_the_scenario():
    """A fault that makes an innocent document end ``failed`` (with a reason or not) loses it: the
    verdict says so (the disk-full scenario once passed with two such documents)."""
    from bench.load_harness import verdict

    def result(failed_by_fault: list) -> dict:
        load = {"leaks": 0, "stale_authority": 0, "problems": {}}
        invariants = {"violations": {}, "deleted documents found by search": 0,
                      "documents failed by the fault": failed_by_fault}
        return {"name": "disk-full", "load": load, "invariants": invariants, "settle_s": 1.0, "fault": {}}

    assert verdict(result([])) == "PASS"
    lost = verdict(result([{"id": "d1", "error": "gave up after 3 attempts"}]))
    assert lost.startswith("FAIL") and "documents failed by the fault" in lost, lost


def test_the_costly_document_verdict_holds_the_other_tenant_to_steady_and_healthz_green():
    """costly-document passes only with the other tenant's search and small-upload p95 within 2x of
    steady's, no 5xx at all (a 503 too), /healthz 200 at every poll, and the attacker's documents
    refused or moved as the budgets say."""
    from bench.load_harness import verdict, versus_steady

    steady = {"tenants": {"b": {"search_p95_ms": 100.0, "upload_ready_p95_ms": 2000.0, "search_n": 90,
                                "uploads_n": 20}}}

    def result(search=150.0, ready=3000.0, statuses=None, health=None, outcome=None, steady=steady,
               uploads=15) -> dict:
        load = {"leaks": 0, "stale_authority": 0, "problems": {}, "statuses": statuses or {"200": 10, "400": 3}}
        invariants = {"violations": {}, "deleted documents found by search": 0, "documents failed by the fault": []}
        fault = {"injected": True, "unexpected": [], "outcome": outcome or {
            "attack_uploads": {"n": 2, "failed_with_numbers": 2}, "bulk_uploads": {"n": 1, "succeeded": 1,
                                                                                   "moved_to_bulk": 1}}}
        out = {"name": "costly-document", "load": load, "invariants": invariants, "settle_s": 1.0, "fault": fault,
               "healthz": health or {"polls": 60, "not_200": 0, "statuses": {"200": 60}},
               "tenants": {"b": {"search_p95_ms": search, "upload_ready_p95_ms": ready, "search_n": 80,
                                 "uploads_n": uploads}}}
        out["versus_steady"] = versus_steady(out, steady, "b")
        return out

    assert verdict(result()) == "PASS"
    assert "upload_ready_p95_ms is 2.5x" in verdict(result(ready=5000.0))
    assert "search_p95_ms is 2.1x" in verdict(result(search=210.0))
    assert "5xx answers {'503': 1}" in verdict(result(statuses={"200": 10, "503": 1}))
    assert "/healthz not green" in verdict(result(health={"polls": 60, "not_200": 1, "statuses": {"200": 59,
                                                                                                   "503": 1}}))
    assert "attack uploads not failed" in verdict(result(outcome={
        "attack_uploads": {"n": 2, "failed_with_numbers": 1}, "bulk_uploads": {"n": 0}}))
    assert "no steady scenario" in verdict(result(steady=None))
    assert "too few samples to compare the other tenant's upload_ready_p95_ms" in verdict(result(uploads=4))


def test_a_scim_error_has_scims_shape_and_any_other_error_ours():
    """SCIM answers its errors in RFC 7644's shape (a reactivation SCIM refuses is a 409 of that shape): not a
    problem of a SCIM request, one of any other; a 5xx is a problem either way."""
    from bench.load_harness import _answer_problems

    scim = json.dumps({"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status": "409",
                       "detail": "SCIM does not reactivate it"}).encode()
    assert _answer_problems(409, {}, scim, scim=True) == []
    assert _answer_problems(409, {}, scim) == ["409 without the error shape"]
    assert "status 500" in _answer_problems(500, {}, scim, scim=True)
    ours = json.dumps({"error": {"code": "conflict", "message": "m", "details": {}}}).encode()
    assert _answer_problems(409, {}, ours) == []


@pytest.mark.db
def test_a_short_soak_with_a_worker_killed_mid_embed_leaks_nothing_and_loses_nothing(tmp_path):
    data = _data_dir()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "CACHE_URL")}
    env["BULKHEAD_DATA_DIR"] = str(data)
    out, log = tmp_path / "load.json", tmp_path / "load.log"
    command = [
        sys.executable, "manage.py", "kb_bench", "load", "--scenarios", "worker-oom", "--seconds", "20",
        "--documents", "2", "--readers", "2", "--web-workers", "1", "--workers", "1", "--idle-searches", "10",
        "--settle-seconds", "420", "--json", str(out),
    ]
    with open(log, "wb") as handle:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            process.wait(timeout=4 * JOB_WAIT)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)  # the harness stops what it started
                try:
                    process.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(10)
            kill_leftovers(data)
            subprocess.run([sys.executable, "-m", "bulkhead.embedded_services", "stop"], cwd=ROOT, env=env,
                           capture_output=True, timeout=START_WAIT)
    output = log.read_text(errors="replace")
    assert process.returncode == 0, output[-4000:]
    report = json.loads(out.read_text())
    (scenario,) = report["scenarios"]
    load, fault = scenario["load"], scenario["fault"]
    assert fault.get("injected"), fault
    assert load["requests"] > 0 and load["canaries_seen"] > 0, "no answer held a canary: nothing was checked"
    assert load["leaks"] == 0 and report["totals"]["leaks"] == 0, load["leak_examples"]
    assert load["status_500"] == 0 and not load["problems"], (load["problems"], load["problem_examples"])
    assert load["stale_authority"] == 0, load["stale_examples"]
    # The identity provider's SCIM changes ran mid-run, and each deprovisioned member was probed at once.
    for op in ("scim_active", "probe_deprovisioned"):
        assert load["ops"].get(op, {}).get("n", 0) > 0, (op, sorted(load["ops"]))
    assert load["ops"]["scim_active"]["statuses"].get("200", 0) > 0, load["ops"]["scim_active"]
    assert load["ops"]["probe_deprovisioned"]["statuses"].get("401", 0) > 0, load["ops"]["probe_deprovisioned"]
    assert scenario["settle_s"] is not None, ("documents or jobs left unfinished after the settle time",
                                             fault.get("unfinished_after_settle"))
    violations = {k: v for k, v in scenario["invariants"]["violations"].items() if v}
    assert not violations, (violations, scenario["invariants"]["details"])
    assert scenario["invariants"]["deleted documents found by search"] == 0
    assert fault["job_status"] == "succeeded", fault
    assert scenario["verdict"] == "PASS", scenario["verdict"]
    assert report["internal_errors_logged"] == 0, "the web log holds a 500 (a request outside the load's own)"
