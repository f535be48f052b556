"""Soak and chaos harness: the production shape under a mixed load, with faults, checked for leaks.

``manage.py kb_bench load`` (see ``bench/management/commands/kb_bench.py``) runs it against
processes it starts itself on one data folder (``BULKHEAD_DATA_DIR``): the embedded PostgreSQL
and Redis, gunicorn serving the API (gthread, as ``make web``), separate Celery worker processes
(prefork, one child each, as ``make worker``) and ``celery beat`` for the sweeper. Every request
goes to 127.0.0.1.

What runs, per scenario, for a fixed time and at most a fixed number of requests:

* readers of two tenants at every clearance, some in groups, search (every mode, expansion and
  expansion level), list documents and read section trees; a third of their searches ask for a
  canary outright (keyword mode finds it if anything serves it);
* editors upload, replace (``PUT``), re-permission (``PATCH /api/v1/sections/{id}/``) and delete
  documents;
* an admin per tenant changes members' clearances and groups, deactivates and reactivates one,
  and replaces (creates, then revokes) readers' tokens, probing each revoked token at once;
* the tenant's identity provider, over SCIM with the tenant's SCIM token, deactivates and reactivates
  a member (Entra ID's PATCH shape, probing at once) and moves a member in and out of a group.

Every section of every document carries a unique canary (a random token in its heading and one in
its body). :class:`AccessModel` knows which member may read which section at any moment, from the
policies in the files and every change the harness itself made (a change counts from the moment
its request was sent until the moment the answer to the next change came back, and a change whose
outcome is unknown -- no answer -- counts as possibly made until a later change). Every response
body is scanned for canaries: a canary of a section that the member could read under none of the
states possible during the request is a **leak**; so is any canary of another tenant. A request
sent after a token was revoked or a member deactivated must be refused (401): anything else is
**stale authority**. Every 5xx must be a 503 in the API's error shape with ``Retry-After``; any 500,
any other 5xx, a traceback in a body or an error without the error shape is a problem.

Each fault is its own scenario (:data:`SCENARIOS`), injected mid-run; after each scenario the system
gets a bounded settle time and :func:`check_invariants` checks the database: every document ready or
failed with a reason, no job left queued or running, chunk sets equal to a clean plan of the same
bytes under the same policies, no orphan sections/chunks/cache rows, chunk policies equal to their
section's, no duplicate chunk ordinals, nothing left of deleted documents. Results go to
``docs/reliability.md``.

The harness shortens two timings in the processes it starts (``HARNESS_ENV``): the job lease (a job
whose worker died is re-sent after it) and the sweep interval, so that a killed worker's job is
recovered within the run; the report states both.

Every scenario also polls ``/healthz`` once a second and measures, for each tenant, its search p95
and how long its small uploads took to be ready (a document job's ``finished_at - created_at``, from
the database). The ``costly-document`` scenario (:func:`costly_document_attacker`) adds an editor
of the first tenant who keeps previewing and uploading documents that hit the budgets
(``ingestion.costs``); its verdict also requires the *other* tenant's small-upload p95 and search p95
within 2x of ``steady`` (run ``steady`` before it in the same run), no 5xx at all, and ``/healthz``
green throughout. ``--worker-pool solo`` runs the workers as the demo does (a solo pool answers no
ping while it works, which is what the attack on the demo found ``/healthz`` failing on).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bulkhead import embedded_services

ROOT = Path(__file__).resolve().parent.parent
CANARY = re.compile(rb"cnry[0-9a-f]{12}")
LEVELS = {"public": 0, "internal": 1, "confidential": 2, "restricted": 3}
LEVEL_NAMES = {v: k for k, v in LEVELS.items()}
GROUPS = ("alpha", "beta")

# What the harness sets in every process it starts (on top of the caller's environment).
HARNESS_ENV = {
    "BULKHEAD_JOB_LEASE_SECONDS": "60",  # default 900: a killed worker's job is re-sent after this
    "BULKHEAD_SWEEP_INTERVAL_SECONDS": "5",  # default 60: beat runs the sweeper this often
    "BULKHEAD_THROTTLE_RATE": "100000/minute",  # the throttle still counts in Redis, but never refuses
    "PYTHONUNBUFFERED": "1",
    "LOG_LEVEL": "INFO",
}
FAULT_FREE = "steady"
# How long the harness waits for a job to reach a stage or to finish, for a worker's task to show, for a process to
# start: bounds, not timings (a run goes on the moment the thing has happened; the times the report gives are
# measured, not these). Sized for a slow, loaded machine: tests/test_load_harness.py runs a short soak beside the
# rest of the suite on 2 cores (tests/bounds.py says how slow).
WAIT_SECONDS = 600
FIND_SECONDS = 60  # a running task to show in a worker's answer to ``inspect`` (asked again and again until then)

VOCABULARY = (
    "invoice ledger harbour copper river signal meadow lantern orbit granite velvet pylon quarry budget "
    "forecast audit supplier contract renewal onboarding laptop badge firewall backup restore rotation "
    "vendor payroll travel expense approval escalation incident pager runbook release deploy rollback "
    "latency capacity region replica snapshot archive retention policy review training customer refund "
    "warranty shipment warehouse inventory compliance privacy consent encryption certificate"
).split()
QUERIES = (
    "how are invoices approved", "what is the backup rotation", "who approves travel expense",
    "incident escalation runbook", "customer refund warranty", "certificate renewal and encryption",
    "warehouse inventory audit", "release deploy rollback steps", "payroll supplier contract",
)
# (label, heading, level, groups) of the sections every document has below its title.
SECTIONS = (
    ("overview", "Overview", "public", ()),
    ("finance", "Finance figures", "confidential", ()),
    ("incident", "Incident keys", "restricted", ()),
    ("alpha", "Team alpha notes", "internal", ("alpha",)),
    ("vault", "Vault codes", "restricted", ("beta",)),
)
ROOT_LABEL = "root"
# The fixed readers of each tenant: (name, clearance, groups); the mutable ones are changed by admins.
READERS = (
    ("r-public", "public", ()),
    ("r-internal", "internal", ()),
    ("r-alpha", "internal", ("alpha",)),
    ("r-conf-beta", "confidential", ("beta",)),
    ("r-restricted", "restricted", ()),
    ("r-all", "restricted", ("alpha", "beta")),
)
MUTABLE_READERS = (("m-changing", "internal", ()), ("m-toggled", "confidential", ("alpha",)))


def now() -> float:
    return time.monotonic()


# ============================================================================ the access model


Policy = tuple  # (level rank, frozenset of group slugs)


def readable(clearance: int, groups: frozenset, policy: Policy) -> bool:
    """The read rule, written again here on purpose: the harness is an independent oracle."""
    level, needed = policy
    return clearance >= level and (not needed or bool(needed & groups))


class History:
    """Values over time. A definitive change closes every open value at the answer's arrival and
    opens the new one at the request's sending; an unknown outcome opens the new one and closes
    nothing, so both stay possible until a later definitive change."""

    def __init__(self, value) -> None:
        self.entries: list[list] = [[value, float("-inf"), None]]

    def set(self, value, sent: float, received: float, *, definitive: bool = True) -> None:
        if definitive:
            for entry in self.entries:
                if entry[2] is None:
                    entry[2] = received
        self.entries.append([value, sent, None])

    def during(self, start: float, end: float) -> list:
        return [v for v, since, until in self.entries if since <= end and (until is None or until >= start)]

    @property
    def latest(self):
        return self.entries[-1][0]

    @property
    def settled(self) -> bool:
        """Exactly one value is open (no unknown outcome pending)."""
        return sum(1 for e in self.entries if e[2] is None) == 1


@dataclass
class DocRecord:
    local: int
    tenant: str
    title: str
    default: Policy
    title_canaries: dict[str, str]
    own: dict[str, History]  # label -> own policy (None: inherits the document's default)
    big: bool = False
    poison: bool = False
    pinned: bool = False  # a fault's own document: editors leave it alone
    markers: dict[str, Policy | None] = field(default_factory=dict)  # label -> marker in the latest content
    server_id: str | None = None
    generation: int = 0
    deleted_at: float | None = None  # when a delete was answered 204
    gone: bool = False  # deleted, or never created
    jobs: list[str] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)  # (op, status, sent, received, detail): for a leak's report

    def effective(self, label: str, start: float, end: float) -> list[Policy]:
        if label == ROOT_LABEL:
            return [self.default]
        return [own if own is not None else self.default for own in self.own[label].during(start, end)]


@dataclass
class MemberRecord:
    name: str
    tenant: str
    role: str
    email: str
    membership_id: int = 0
    state: History = None  # (clearance, groups, active)
    token: str = ""
    token_id: int = 0
    revoked: dict[str, float] = field(default_factory=dict)  # key -> when the revoke was answered
    mutable: bool = False


class AccessModel:
    """Documents, sections, members and tokens as the harness made them; judges every response."""

    def __init__(self, rng: random.Random) -> None:
        self.lock = threading.RLock()
        self.rng = rng
        self.docs: dict[str, list[DocRecord]] = {}
        self.canaries: dict[bytes, tuple[DocRecord, str]] = {}
        self.members: dict[str, MemberRecord] = {}
        self.counter = 0

    def canary(self, doc: DocRecord, label: str) -> str:
        token = "cnry" + secrets.token_hex(6)
        self.canaries[token.encode()] = (doc, label)
        return token

    def new_doc(self, tenant: str, *, default: str, big: bool = False, poison: bool = False) -> DocRecord:
        with self.lock:
            self.counter += 1
            level = LEVELS[default]
            doc = DocRecord(local=self.counter, tenant=tenant, title=f"Handbook {tenant} {self.counter}",
                            default=(level, frozenset()), title_canaries={}, own={}, big=big, poison=poison,
                            pinned=big or poison)
            for label, _, marker_level, groups in SECTIONS:
                own = (max(level, LEVELS[marker_level]), frozenset(groups))
                doc.own[label] = History(None if own == doc.default else own)
            for label in (ROOT_LABEL, *(s[0] for s in SECTIONS)):
                doc.title_canaries[label] = self.canary(doc, label)
            self.docs.setdefault(tenant, []).append(doc)
            return doc

    def content(self, doc: DocRecord) -> str:
        """The document's Markdown: a title and a body canary per section, new body canaries each
        generation. Markers restate each section's modelled own policy where a marker may (it only
        narrows); a wider policy set through the API carries over to the new content by itself."""
        with self.lock:
            doc.generation += 1
            rng = self.rng
            paragraphs = 40 if doc.big else 1
            lines = [f"# {doc.title} {doc.title_canaries[ROOT_LABEL]}", ""]
            lines += [_filler(rng, self.canary(doc, ROOT_LABEL)), ""]
            for label, heading, _, _ in SECTIONS:
                own = doc.own[label].latest
                marker = ""
                doc.markers[label] = None
                if own is not None and own[0] >= doc.default[0]:
                    groups = f"; groups: {', '.join(sorted(own[1]))}" if own[1] else ""
                    marker = f" <!-- access: {LEVEL_NAMES[own[0]]}{groups} -->"
                    doc.markers[label] = own
                lines += [f"## {heading} {doc.title_canaries[label]}{marker}", ""]
                for _ in range(paragraphs):
                    lines += [_filler(rng, self.canary(doc, label)), ""]
            return "\n".join(lines)

    def live_docs(self, tenant: str, *, editable: bool = False) -> list[DocRecord]:
        with self.lock:
            return [d for d in self.docs.get(tenant, [])
                    if d.server_id and not d.gone and not d.poison and not (editable and d.pinned)]

    def judge(self, member: MemberRecord, canaries: dict[bytes, list[str]], start: float, end: float) -> list[dict]:
        """Leaks in one answer (its canaries and where they sat): canaries ``member`` could read under
        no state possible while the request was in flight. Called once the scenario is over, so every
        change that raced the request is in the model."""
        found = []
        with self.lock:
            states = member.state.during(start, end)
            for token, fields in canaries.items():
                ref = self.canaries.get(token)
                where = {"canary": token.decode(), "member": member.name, "fields": fields}
                if ref is None:
                    found.append({"kind": "unknown canary", **where})
                    continue
                doc, label = ref
                where |= {"document": doc.title, "section": label}
                if doc.tenant != member.tenant:
                    found.append({"kind": "another tenant's canary", **where})
                    continue
                if doc.deleted_at is not None and start > doc.deleted_at:
                    found.append({"kind": "deleted document served", **where})
                    continue
                policies = doc.effective(label, start, end)
                if not any(active and readable(clearance, groups, p)
                           for clearance, groups, active in states for p in policies):
                    found.append({"kind": "unreadable section served", **where,
                                  "policies": [(LEVEL_NAMES[p[0]], sorted(p[1])) for p in policies],
                                  "member_states": [(LEVEL_NAMES[c], sorted(g), a) for c, g, a in states],
                                  "default": LEVEL_NAMES[doc.default[0]], "window": (round(start, 2), round(end, 2)),
                                  "history": [(v and (LEVEL_NAMES[v[0]], sorted(v[1])), round(a, 2), b and round(b, 2))
                                              for v, a, b in (doc.own[label].entries if label != ROOT_LABEL else [])],
                                  "events": [(op, st, round(a, 2), round(b, 2), d) for op, st, a, b, d in doc.events]})
        return found


def canaries_in(body: bytes) -> dict[bytes, list[str]]:
    """Every canary in an answer, with where it sits (``results[0].text``) to tell a leak's path."""
    tokens = set(CANARY.findall(body))
    if not tokens:
        return {}
    found: dict[bytes, list[str]] = {token: [] for token in tokens}
    try:
        data = json.loads(body)
    except ValueError:
        return {token: ["(not JSON)"] for token in tokens}

    def walk(value, path: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        elif isinstance(value, str) and "cnry" in value:
            for token in CANARY.findall(value.encode()):
                if len(found[token]) < 4:
                    found[token].append(path)

    walk(data, "")
    return found


def _filler(rng: random.Random, canary: str) -> str:
    words = [rng.choice(VOCABULARY) for _ in range(rng.randint(30, 50))]
    words.insert(rng.randint(0, len(words)), canary)
    return " ".join(words).capitalize() + "."


# ============================================================================ HTTP and recording


class Http:
    """One keep-alive connection to the server, per thread."""

    IDLE = 1.0  # gunicorn closes a kept-alive connection after 2 s idle: reconnect before that

    def __init__(self, port: int, timeout: float = 60) -> None:
        self.port, self.timeout = port, timeout
        self.conn: http.client.HTTPConnection | None = None
        self.used = 0.0

    def request(self, method: str, path: str, token: str | None, body: dict | None = None,
                headers: dict[str, str] | None = None, raw: tuple[bytes, str] | None = None):
        """(status, headers, body); status 0 when no answer came (refused, reset, timed out).
        ``headers``: more request headers (a session cookie, say); ``raw``: a body that is not JSON
        and its content type (a multipart upload: :func:`multipart`)."""
        headers = {"Accept": "application/json", **(headers or {})}
        if token:
            headers["Authorization"] = f"Token {token}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        elif raw is not None:
            data, headers["Content-Type"] = raw
        if self.conn is not None and now() - self.used > self.IDLE:
            self.close()
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                response = self.conn.getresponse()
                payload = response.read()
                self.used = now()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                return response.status, dict(response.getheaders()), payload
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self.close()
                # A kept-alive connection the server closed meanwhile: once more on a fresh one.
                if attempt == 1 or method not in ("GET",):
                    return 0, {}, type(exc).__name__.encode()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                return 0, {}, type(exc).__name__.encode()
        return 0, {}, b""

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
            self.conn = None


def multipart(fields: dict[str, str], filename: str, data: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with ``fields`` and one file (``file``), and its content type."""
    boundary = f"----harness{secrets.token_hex(12)}"
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
                 f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


@dataclass
class Sample:
    op: str
    status: int
    sent: float
    received: float
    member: str


class Recorder:
    """Every request of a scenario, the problems found in the answers, and leaks."""

    def __init__(self, max_requests: int) -> None:
        self.lock = threading.Lock()
        self.samples: list[Sample] = []
        self.problems: Counter = Counter()
        self.examples: list[dict] = []
        self.leaks: list[dict] = []
        self.stale: list[dict] = []
        self.canaries_seen = 0  # canaries in answers that were allowed to hold them: the probes reach text
        self.observations: list[Observation] = []  # judged when the scenario is over (judge_all)
        self.max_requests = max_requests
        self.stop = threading.Event()

    def record(self, op: str, member: str, status: int, headers: dict, body: bytes, sent: float,
               received: float) -> None:
        problems = _answer_problems(status, headers, body, scim=op.startswith("scim_"))
        with self.lock:
            self.samples.append(Sample(op, status, sent, received, member))
            for problem in problems:
                self.problems[problem] += 1
                if len(self.examples) < 30:
                    self.examples.append({"problem": problem, "op": op, "status": status,
                                          "body": body[:300].decode(errors="replace")})
            if len(self.samples) >= self.max_requests:
                self.stop.set()

    def observe(self, observation: Observation) -> None:
        with self.lock:
            self.observations.append(observation)

    def judge_all(self, model: AccessModel) -> None:
        """Leaks and stale authority in every answer of the scenario, against the complete model."""
        for o in self.observations:
            member = model.members[o.member]
            if o.canaries:
                found = model.judge(member, o.canaries, o.sent, o.received)
                self.leaks += [{**item, "op": o.op} for item in found]
                self.canaries_seen += len(o.canaries) - len(found)
            if o.status == 401 or unknown_outcome(o.status):
                continue  # refused, or no verdict to judge
            revoked_at = member.revoked.get(o.key)
            if revoked_at is not None and o.sent > revoked_at:
                self.stale.append({"kind": "revoked token accepted", "member": o.member, "op": o.op,
                                   "status": o.status})
            with model.lock:
                states = member.state.during(o.sent, o.received)
            if states and not any(active for _, _, active in states):
                self.stale.append({"kind": "deactivated member served", "member": o.member, "op": o.op,
                                   "status": o.status})
        self.observations = []


@dataclass
class Observation:
    member: str
    key: str
    op: str
    status: int
    sent: float
    received: float
    canaries: dict[bytes, list[str]]


_SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def _answer_problems(status: int, headers: dict, body: bytes, *, scim: bool = False) -> list[str]:
    """What is wrong with an answer; ``scim``: a SCIM request, whose errors have SCIM's shape (RFC 7644 3.12)."""
    problems = []
    if status == 0:
        return ["no answer"]
    if b"Traceback" in body:
        problems.append("traceback in body")
    if status >= 400:
        try:
            payload = json.loads(body)
            if scim and status < 500 and _SCIM_ERROR in payload.get("schemas", ()) and payload.get("detail"):
                return problems
            error = payload["error"]
            if set(error) != {"code", "message", "details"}:
                raise KeyError
        except (ValueError, KeyError, TypeError):
            problems.append(f"{status} without the error shape")
            error = {}
        if status == 500:
            problems.append("status 500")
        elif status >= 500 and status != 503:
            problems.append(f"status {status}")
        elif status == 503:
            retry_after = {k.lower(): v for k, v in headers.items()}.get("retry-after")
            if not retry_after or error.get("code") != "service_unavailable":
                problems.append("503 without Retry-After/service_unavailable")
    return problems


# ============================================================================ processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Managed:
    name: str
    process: subprocess.Popen
    log: Path
    started: float


class Cluster:
    """The processes of the production shape, started on this data folder and stopped at the end.

    Each runs in its own process group (so a kill takes its children with it: a worker's pool child
    and parse server); their groups are listed in ``processes.json`` in the run folder so that
    :func:`kill_leftovers` can stop them even if this process died."""

    def __init__(self, run_dir: Path, log: Callable[[str], None]) -> None:
        self.run_dir = run_dir
        self.log = log
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BULKHEAD_OWNER_DATABASE_URL", "REDIS_URL", "CACHE_URL")}
        self.env.update(HARNESS_ENV)
        self.env["BULKHEAD_DATA_DIR"] = str(embedded_services.data_path())
        # The sync scenario's Git repositories: a folder every process it starts allows as a source (each tenant reads
        # only its own folder below it, <root>/<tenant slug>).
        self.source_root = run_dir / "sources"
        roots = [r for r in self.env.get("BULKHEAD_SOURCE_ROOTS", "").split(os.pathsep) if r.strip()]
        self.env["BULKHEAD_SOURCE_ROOTS"] = os.pathsep.join([*roots, str(self.source_root)])
        self.processes: dict[str, Managed] = {}
        self.port = 0
        self.web_workers = 0
        self.serial = 0
        self.queues: dict[str, str | None] = {}  # worker name -> its -Q (None: both lanes)
        self.pool = "prefork"  # as `make worker`; "solo" as the demo
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ bookkeeping

    def _register(self) -> None:
        alive = {name: m.process.pid for name, m in self.processes.items() if m.process.poll() is None}
        (self.run_dir / "processes.json").write_text(json.dumps(alive))

    def _spawn(self, name: str, argv: list[str]) -> Managed:
        log = self.run_dir / f"{name}.log"
        process = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                                   start_new_session=True)
        managed = Managed(name, process, log, now())
        with self.lock:
            self.processes[name] = managed
            self._register()
        return managed

    def _signal(self, name: str, sig: int, *, group: bool = True) -> None:
        managed = self.processes.get(name)
        if managed is None or managed.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(managed.process.pid, sig)
            else:
                os.kill(managed.process.pid, sig)

    def stop(self, name: str, timeout: float = 30) -> None:
        managed = self.processes.get(name)
        if managed is None:
            return
        self._signal(name, signal.SIGTERM)
        try:
            managed.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(name, signal.SIGKILL)
            managed.process.wait(10)
        with self.lock:
            self.processes.pop(name, None)
            self._register()

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.stop(name, timeout=20)

    # ------------------------------------------------------------------ web

    def start_web(self, workers: int, threads: int = 4, timeout: float = WAIT_SECONDS) -> int:
        self.port = free_port()
        self.web_workers = workers
        self._spawn("web", [
            sys.executable, "-m", "gunicorn", "bulkhead.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
            "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads), "--timeout", "120",
        ])
        deadline = now() + timeout
        client = Http(self.port, timeout=FIND_SECONDS)  # the first schema is built on the first request
        while now() < deadline:
            status, _, _ = client.request("GET", "/api/schema/", None)
            if status in (200, 401, 403):
                client.close()
                return self.port
            if self.processes["web"].process.poll() is not None:
                break
            time.sleep(0.3)
        raise RuntimeError(f"gunicorn did not answer; see {self.processes['web'].log}")

    def stop_web(self) -> None:
        self.stop("web")

    # ------------------------------------------------------------------ workers and beat

    def worker_names(self) -> list[str]:
        return [n for n in self.processes if n.startswith("worker-")]

    def start_worker(self, queues: str | None = None, *, wait: bool = True, timeout: float = WAIT_SECONDS) -> str:
        with self.lock:
            self.serial += 1
            name = f"worker-{self.serial}"
        argv = [sys.executable, "-m", "celery", "-A", "bulkhead", "worker", f"--pool={self.pool}", "--concurrency=1",
                "--loglevel=INFO", "-n", f"{name}@%h", "--without-mingle", "--without-gossip"]
        if queues:
            argv += ["-Q", queues]
        self._spawn(name, argv)
        if wait:
            self.wait_worker(name, timeout)
        return name

    def wait_worker(self, name: str, timeout: float = WAIT_SECONDS) -> None:
        from bulkhead.celery import app

        deadline = now() + timeout
        while now() < deadline:
            if self.processes[name].process.poll() is not None:
                raise RuntimeError(f"{name} exited; see {self.processes[name].log}")
            with contextlib.suppress(Exception):
                if app.control.ping(timeout=0.5, destination=[f"{name}@{os.uname().nodename}"]):
                    return
            time.sleep(0.3)
        raise RuntimeError(f"{name} did not answer a ping in {timeout}s; see {self.processes[name].log}")

    def start_beat(self) -> None:
        schedule = self.run_dir / "beat-schedule"
        self._spawn("beat", [sys.executable, "-m", "celery", "-A", "bulkhead", "beat", "-s", str(schedule),
                             "--loglevel=INFO"])

    def worker_running(self, job_id: str) -> str | None:
        """The worker whose pool is running an ingestion task holding ``job_id`` (asked over the broker)."""
        found = self.task_running(job_id)
        return found[0] if found else None

    def task_running(self, job_id: str) -> tuple[str, int] | None:
        """(worker name, pid of the pool child) running an ingestion task that holds ``job_id``."""
        from bulkhead.celery import app

        host = os.uname().nodename
        try:
            active = app.control.inspect(timeout=1.0).active() or {}
        except Exception:
            return None
        for node, tasks in active.items():
            for task in tasks:
                if job_id in json.dumps(task, default=str):
                    name = node.split("@")[0]
                    if node.endswith(host) and name in self.processes:
                        return name, int(task.get("worker_pid") or 0)
        return None

    def kill(self, name: str, sig: int = signal.SIGKILL, *, group: bool = True) -> None:
        self._signal(name, sig, group=group)

    def wait_exit(self, name: str, timeout: float) -> bool:
        managed = self.processes.get(name)
        if managed is None:
            return True
        try:
            managed.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        with self.lock:
            self.processes.pop(name, None)
            self._register()
        return True


def kill_leftovers(data_dir: Path) -> list[int]:
    """Stop the process groups an earlier harness run on ``data_dir`` left behind (it was killed)."""
    killed = []
    for registry in sorted((data_dir / "load-runs").glob("*/processes.json")):
        with contextlib.suppress(OSError, ValueError):
            for pid in json.loads(registry.read_text()).values():
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"gunicorn" in cmdline or b"celery" in cmdline:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
                        killed.append(pid)
            registry.unlink()
    return killed


# ============================================================================ the population


@dataclass
class Tenant:
    slug: str
    editors: list[MemberRecord]
    admin: MemberRecord
    readers: list[MemberRecord]
    scim_key: str = ""  # the tenant's SCIM bearer token (its identity provider's)
    group_ids: dict[str, int] = field(default_factory=dict)


def _member(model: AccessModel, tenant, name: str, role: str, clearance: str, groups, *,
            mutable: bool = False) -> MemberRecord:
    from accounts.services import api_token_create, membership_create

    email = f"{name}@{tenant.slug}.example"
    membership = membership_create(tenant=tenant, email=email, role=role, clearance=clearance, group_slugs=groups)
    token, key = api_token_create(membership=membership, name="load")
    record = MemberRecord(name=f"{tenant.slug}/{name}", tenant=tenant.slug, role=role, email=email,
                          membership_id=membership.pk, token=key, token_id=token.pk, mutable=mutable,
                          state=History((LEVELS[clearance], frozenset(groups), True)))
    model.members[record.name] = record
    return record


def create_population(model: AccessModel, run: str, *, tenants: int = 2, editors: int = 1) -> list[Tenant]:
    """Tenants, groups, members and their first tokens, through the services (not the API)."""
    from accounts.scim import scim_token_create
    from accounts.services import group_create, tenant_create

    result = []
    for index in range(tenants):
        slug = f"ld-{run}-{chr(ord('a') + index)}"
        tenant = tenant_create(slug=slug, name=slug)
        group_ids = {group: group_create(tenant=tenant, slug=group).pk for group in GROUPS}
        _, scim_key = scim_token_create(tenant=tenant, name="load")
        readers = [_member(model, tenant, n, "viewer", c, g) for n, c, g in READERS]
        readers += [_member(model, tenant, n, "viewer", c, g, mutable=True) for n, c, g in MUTABLE_READERS]
        edits = [_member(model, tenant, f"editor-{i}", "editor", "restricted", GROUPS) for i in range(editors)]
        admin = _member(model, tenant, "admin", "admin", "restricted", GROUPS)
        result.append(Tenant(slug, edits, admin, readers, scim_key, group_ids))
    return result


# ============================================================================ the actors


def unknown_outcome(status: int) -> bool:
    """No answer, or a 5xx: the write may have committed before the connection or the database went
    (a 503 can follow a commit when reading the result back fails)."""
    return status == 0 or status >= 500


def _content_pending(doc: DocRecord) -> bool:
    """Whether the document's latest ingestion (an upload or a replacement) may still store content."""
    from django.db import DatabaseError

    from kb.models import IngestionJob

    if not doc.jobs:
        return False
    try:
        status = IngestionJob.objects.filter(pk=doc.jobs[-1]).values_list("status", flat=True).first()
    except DatabaseError:
        return True
    return status in ("queued", "running")


class Actors:
    """The mixed load: reader, editor and admin threads, each with its own connection."""

    def __init__(self, model: AccessModel, tenants: list[Tenant], port: int, recorder: Recorder,
                 rng: random.Random) -> None:
        self.model, self.tenants, self.port, self.recorder = model, tenants, port, recorder
        self.seed = rng.randrange(1 << 30)
        self.think = 0.0  # mean seconds a reader waits between requests
        self.threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ one request

    def call(self, client: Http, member: MemberRecord, op: str, method: str, path: str, body=None,
             token: str | None = None, raw: tuple[bytes, str] | None = None):
        key = token or member.token
        sent = now()
        status, headers, payload = client.request(method, path, key, body, raw=raw)
        received = now()
        self.recorder.record(op, member.name, status, headers, payload, sent, received)
        self.recorder.observe(Observation(member.name, key, op, status, sent, received, canaries_in(payload)))
        return status, payload, sent, received

    # ------------------------------------------------------------------ readers

    def reader(self, member: MemberRecord, index: int) -> None:
        rng = random.Random(self.seed + index)
        client = Http(self.port)
        try:
            while not self.recorder.stop.is_set():
                roll = rng.random()
                if roll < 0.7:
                    self.call(client, member, "search", "POST", "/api/v1/search/", self.search_body(member, rng))
                elif roll < 0.85:
                    self.call(client, member, "list", "GET", "/api/v1/documents/?limit=50")
                else:
                    docs = self.model.live_docs(member.tenant)
                    if docs:
                        doc = rng.choice(docs)
                        self.call(client, member, "sections", "GET", f"/api/v1/documents/{doc.server_id}/sections/")
                if self.think:  # a person reads the answer before asking again (0: closed loop)
                    self.recorder.stop.wait(rng.uniform(0, 2 * self.think))
        finally:
            client.close()

    def search_body(self, member: MemberRecord, rng: random.Random) -> dict:
        roll = rng.random()
        if roll < 0.3:  # a probe: ask for a canary of this tenant (or, rarely, another's)
            tenant = member.tenant
            if rng.random() < 0.15:
                tenant = rng.choice([t.slug for t in self.tenants])
            with self.model.lock:
                pool = [c for c, (d, _) in self.model.canaries.items() if d.tenant == tenant]
            query = rng.choice(pool).decode() if pool else rng.choice(QUERIES)
            if rng.random() < 0.5:
                query = f"{query} {rng.choice(VOCABULARY)}"
        else:
            query = rng.choice(QUERIES)
        return {
            "query": query, "mode": rng.choice(["hybrid", "vector", "keyword"]),
            "expand": rng.choice(["parent", "neighbors", "none"]), "expand_level": rng.choice(["leaf", "parent"]),
            "neighbors": rng.randint(0, 2), "top_k": rng.randint(3, 10), "max_contexts": rng.randint(1, 5),
        }

    # ------------------------------------------------------------------ editors

    def upload(self, client: Http, member: MemberRecord, doc: DocRecord) -> int:
        body = {"title": doc.title, "content": self.model.content(doc), "content_type": "text/markdown",
                "source": f"handbook-{doc.local}.md", "access_level": LEVEL_NAMES[doc.default[0]]}
        status, payload, _, _ = self.call(client, member, "upload", "POST", "/api/v1/documents/", body)
        if status == 201:
            answer = json.loads(payload)
            with self.model.lock:
                doc.server_id = answer["id"]
                doc.jobs.append(answer["job"]["id"])
        elif 400 <= status < 500:
            doc.gone = True  # refused: never created (after a 5xx or no answer it may exist)
        return status

    def editor(self, member: MemberRecord, index: int) -> None:
        rng = random.Random(self.seed + 1000 + index)
        client = Http(self.port)
        try:
            while not self.recorder.stop.is_set():
                docs = self.model.live_docs(member.tenant, editable=True)
                roll = rng.random()
                if roll < 0.25 or len(docs) < 4:
                    default = rng.choice(["public", "internal", "internal", "confidential"])
                    self.upload(client, member, self.model.new_doc(member.tenant, default=default))
                elif roll < 0.45:
                    self.replace(client, member, rng.choice(docs))
                elif roll < 0.8:
                    self.repermission(client, member, rng.choice(docs), rng)
                elif roll < 0.9:
                    self.delete(client, member, rng.choice(docs))
                else:
                    doc = rng.choice(docs)
                    if doc.jobs:
                        self.call(client, member, "job", "GET", f"/api/v1/jobs/{doc.jobs[-1]}/")
                self.recorder.stop.wait(rng.uniform(0.5, 1.5))  # an editor thinks between changes
        finally:
            client.close()

    def replace(self, client: Http, member: MemberRecord, doc: DocRecord) -> None:
        body = {"title": doc.title, "content": self.model.content(doc), "content_type": "text/markdown",
                "source": f"handbook-{doc.local}.md"}
        status, payload, sent, received = self.call(client, member, "replace", "PUT",
                                                    f"/api/v1/documents/{doc.server_id}/", body)
        doc.events.append(("PUT", status, sent, received, {k: v and (LEVEL_NAMES[v[0]], sorted(v[1]))
                                                           for k, v in doc.markers.items()}))
        if status == 200:
            with self.model.lock:
                doc.jobs.append(json.loads(payload)["job"]["id"])

    def repermission(self, client: Http, member: MemberRecord, doc: DocRecord, rng: random.Random) -> None:
        status, payload, _, _ = self.call(client, member, "sections", "GET",
                                          f"/api/v1/documents/{doc.server_id}/sections/")
        if status != 200:
            return
        by_label = {}
        for node in json.loads(payload):
            title = (node.get("heading_path") or [""])[-1]
            for label, canary in doc.title_canaries.items():
                if label != ROOT_LABEL and canary in title:
                    by_label[label] = node["id"]
        if not by_label:
            return
        label = rng.choice(sorted(by_label))
        if rng.random() < 0.2:
            change, new = {"inherit": True}, None
        else:
            level = rng.choice(list(LEVELS))
            groups = rng.choice([[], [], ["alpha"], ["beta"]])
            change, new = {"access_level": level, "groups": groups}, (LEVELS[level], frozenset(groups))
        status, _, sent, received = self.call(client, member, "patch_section", "PATCH",
                                              f"/api/v1/sections/{by_label[label]}/", change)
        doc.events.append(("PATCH", status, sent, received, {label: change}))
        if status == 200 or unknown_outcome(status):
            pending = new is None and _content_pending(doc)
            with self.model.lock:
                doc.own[label].set(new, sent, received, definitive=status == 200)
                if pending:
                    # Returned to inheriting while new content waits to be stored: an inherited policy
                    # does not carry over, so the new section takes the marker its file has.
                    doc.own[label].set(doc.markers.get(label), sent, received, definitive=False)

    def delete(self, client: Http, member: MemberRecord, doc: DocRecord) -> None:
        status, _, _, received = self.call(client, member, "delete", "DELETE", f"/api/v1/documents/{doc.server_id}/")
        if status == 204:
            with self.model.lock:
                doc.deleted_at, doc.gone = received, True

    # ------------------------------------------------------------------ admins

    def admin(self, tenant: Tenant, index: int) -> None:
        rng = random.Random(self.seed + 2000 + index)
        client = Http(self.port)
        admin = tenant.admin
        toggled = next(m for m in tenant.readers if m.name.endswith("m-toggled"))
        changing = next(m for m in tenant.readers if m.name.endswith("m-changing"))
        try:
            while not self.recorder.stop.is_set():
                roll = rng.random()
                if roll < 0.35:
                    self.rotate_token(client, admin, rng.choice(tenant.readers))
                elif roll < 0.6:
                    clearance = rng.choice(list(LEVELS))
                    groups = rng.choice([[], ["alpha"], ["beta"], ["alpha", "beta"]])
                    self.set_membership(client, admin, changing, clearance=clearance, groups=groups)
                elif roll < 0.75:
                    self.toggle(client, admin, toggled)
                elif roll < 0.9:
                    self.scim_toggle(client, tenant, admin, toggled)
                else:
                    self.scim_group(client, tenant, admin, changing, rng.choice(["alpha", "beta"]), rng)
                self.recorder.stop.wait(rng.uniform(0.2, 0.6))
        finally:
            client.close()

    def set_membership(self, client: Http, admin: MemberRecord, member: MemberRecord, **change) -> int:
        status, _, sent, received = self.call(client, admin, "membership", "PATCH",
                                              f"/api/v1/memberships/{member.membership_id}/", change)
        if status == 200 or unknown_outcome(status):
            with self.model.lock:
                clearance, groups, active = member.state.latest
                if "clearance" in change:
                    clearance = LEVELS[change["clearance"]]
                if "groups" in change:
                    groups = frozenset(change["groups"])
                if "is_active" in change:
                    active = change["is_active"]
                member.state.set((clearance, groups, active), sent, received, definitive=status == 200)
        return status


    def toggle(self, client: Http, admin: MemberRecord, member: MemberRecord) -> None:
        """Deactivate the member, probe at once (must be refused), then reactivate and give them a new token."""
        if self.set_membership(client, admin, member, is_active=False) != 200:
            return
        self.deactivated_token(member)
        self.call(client, member, "probe_inactive", "GET", "/api/v1/documents/")  # judged with the rest
        self.recorder.stop.wait(0.5)
        if self.set_membership(client, admin, member, is_active=True) == 200:
            self.reissue_token(client, admin, member)

    def deactivated_token(self, member: MemberRecord) -> None:
        """Deactivating a member revoked their tokens: their current key must be refused from now on."""
        member.revoked.setdefault(member.token, now())

    def reissue_token(self, client: Http, admin: MemberRecord, member: MemberRecord) -> None:
        """A new token for a reactivated member (their thread switches to it): the old one stays revoked."""
        status, payload, _, _ = self.call(client, admin, "token_create", "POST", "/api/v1/tokens/",
                                          {"membership_id": member.membership_id, "name": "reactivated"})
        if status == 201:
            answer = json.loads(payload)
            member.token, member.token_id = answer["key"], answer["id"]

    # ------------------------------------------------------------------ the identity provider (SCIM)

    def scim_call(self, client: Http, tenant: Tenant, admin: MemberRecord, op: str, method: str, path: str,
                  body: dict):
        """A SCIM request of the tenant's identity provider (recorded under the admin: it is the tenant's)."""
        sent = now()
        status, headers, payload = client.request(method, path, None, body,
                                                  headers={"Authorization": f"Bearer {tenant.scim_key}"})
        received = now()
        self.recorder.record(op, admin.name, status, headers, payload, sent, received)
        return status, sent, received

    def scim_set_active(self, client: Http, tenant: Tenant, admin: MemberRecord, member: MemberRecord,
                        active: bool) -> int:
        # As Entra ID sends it: "Replace", and the boolean as a string.
        status, sent, received = self.scim_call(
            client, tenant, admin, "scim_active", "PATCH", f"/scim/v2/Users/{member.membership_id}",
            {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
             "Operations": [{"op": "Replace", "path": "active", "value": "True" if active else "False"}]})
        if status == 200 or unknown_outcome(status):
            with self.model.lock:
                clearance, groups, _ = member.state.latest
                member.state.set((clearance, groups, active), sent, received, definitive=status == 200)
        return status

    def scim_toggle(self, client: Http, tenant: Tenant, admin: MemberRecord, member: MemberRecord) -> None:
        """Deprovision the member over SCIM, probe at once (must be refused), then provision again."""
        if self.scim_set_active(client, tenant, admin, member, False) != 200:
            return
        self.deactivated_token(member)
        self.call(client, member, "probe_deprovisioned", "GET", "/api/v1/documents/")  # judged with the rest
        self.recorder.stop.wait(0.5)
        status = self.scim_set_active(client, tenant, admin, member, True)
        if status == 409:
            # SCIM does not bring back a member an admin gave more than it gives (a role above viewer, a
            # clearance above its own): an admin reactivates them, as the product says.
            status = self.set_membership(client, admin, member, is_active=True)
        if status == 200:
            self.reissue_token(client, admin, member)

    def scim_group(self, client: Http, tenant: Tenant, admin: MemberRecord, member: MemberRecord, group: str,
                   rng: random.Random) -> None:
        """Add the member to a group, or remove them from it, as the identity provider does."""
        add = rng.random() < 0.5
        operation = ({"op": "add", "path": "members", "value": [{"value": str(member.membership_id)}]} if add
                     else {"op": "remove", "path": f'members[value eq "{member.membership_id}"]'})
        status, sent, received = self.scim_call(
            client, tenant, admin, "scim_group", "PATCH", f"/scim/v2/Groups/{tenant.group_ids[group]}",
            {"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": [operation]})
        if status == 200 or unknown_outcome(status):
            with self.model.lock:
                clearance, groups, active = member.state.latest
                groups = groups | {group} if add else groups - {group}
                member.state.set((clearance, frozenset(groups), active), sent, received, definitive=status == 200)

    def rotate_token(self, client: Http, admin: MemberRecord, member: MemberRecord) -> None:
        """Create a new token for the member (their thread switches to it), revoke the old one, probe it."""
        status, payload, _, _ = self.call(client, admin, "token_create", "POST", "/api/v1/tokens/",
                                          {"membership_id": member.membership_id, "name": "rotated"})
        if status != 201:
            return
        answer = json.loads(payload)
        old_key, old_id = member.token, member.token_id
        member.token, member.token_id = answer["key"], answer["id"]
        status, _, _, received = self.call(client, admin, "token_revoke", "POST", f"/api/v1/tokens/{old_id}/revoke/")
        if status != 200:
            return
        member.revoked[old_key] = received
        self.call(client, member, "probe_revoked", "GET", "/api/v1/documents/", token=old_key)  # judged later

    # ------------------------------------------------------------------ running

    def start(self, *, readers: int, editors: int) -> None:
        index = 0
        for tenant in self.tenants:
            members = tenant.readers
            for i in range(readers):
                index += 1
                self._thread(self.reader, members[i % len(members)], index)
            for i in range(editors):
                index += 1
                self._thread(self.editor, tenant.editors[i % len(tenant.editors)], index)
            index += 1
            self._thread(self.admin, tenant, index)

    def _thread(self, target, *args) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self, timeout: float = 120) -> None:
        self.recorder.stop.set()
        deadline = now() + timeout
        for thread in self.threads:
            thread.join(max(0.1, deadline - now()))


# ============================================================================ the database side


def failed_documents(tenants: list[str]) -> dict[str, str]:
    """id -> error of every failed document of the run's tenants."""
    from kb.models import Document

    return {str(pk): error for pk, error in
            Document.objects.filter(tenant__slug__in=tenants, status="failed").values_list("id", "error")}


def db_retry(fn: Callable, *, seconds: float = 60):
    """Run a read of the harness's own through a database that may be restarting."""
    from django.db import InterfaceError, OperationalError, connections

    deadline = now() + seconds
    while True:
        try:
            return fn()
        except (OperationalError, InterfaceError):
            connections.close_all()
            if now() > deadline:
                raise
            time.sleep(1)


def unfinished(tenants: list[str]) -> tuple[int, int]:
    from kb.models import Document, IngestionJob

    docs = Document.objects.filter(tenant__slug__in=tenants, status__in=["pending", "processing"]).count()
    jobs = IngestionJob.objects.filter(tenant__slug__in=tenants, status__in=["queued", "running"]).count()
    return docs, jobs


def unfinished_detail(tenants: list[str]) -> dict:
    """What keeps a scenario from settling: the unfinished documents and jobs by status and stage (for the
    report when the settle time ran out)."""
    from django.db.models import Count

    from kb.models import Document, IngestionJob

    docs = Document.objects.filter(tenant__slug__in=tenants, status__in=["pending", "processing"])
    jobs = IngestionJob.objects.filter(tenant__slug__in=tenants, status__in=["queued", "running"])
    return {"documents": {row["status"]: row["n"] for row in docs.values("status").annotate(n=Count("id"))},
            "jobs": [f"{row['kind']} {row['status']} {row['stage']}: {row['n']}"
                     for row in jobs.values("kind", "status", "stage").annotate(n=Count("id"))]}


def settle(tenants: list[str], seconds: float) -> float | None:
    """Wait until every document and job of ``tenants`` is finished; the seconds it took, or None."""
    started = now()
    while now() - started < seconds:
        if db_retry(lambda: unfinished(tenants)) == (0, 0):
            return round(now() - started, 1)
        time.sleep(1)
    return None


def expected_chunks(document) -> list[tuple[int, str]]:
    """(ordinal, content hash) of the chunks a clean ingestion of the stored bytes would store, under
    the stored policies (markers and API overrides): the pipeline's own planning step, nothing written."""
    from kb.index_versions import index_version_active
    from kb.models import IngestionJob
    from pipeline.plan import plan_content

    version = index_version_active(tenant=document.tenant)
    job = IngestionJob(tenant_id=document.tenant_id, document=document, stats={})
    plan = plan_content(job, document, version)
    return sorted((c.ordinal, c.content_hash) for c in plan.chunks)


def check_invariants(model: AccessModel, tenants: list[str]) -> dict:
    """The database after a scenario (see the module docstring); every count should be 0."""
    from django.db import connection

    from kb.index_versions import index_version_active
    from kb.models import Chunk, Document, IngestionJob, Section

    docs = list(Document.objects.filter(tenant__slug__in=tenants).select_related("tenant"))
    result: Counter = Counter()
    details: list[str] = []
    for doc in docs:
        if doc.status not in ("ready", "failed"):
            result["documents not ready or failed"] += 1
            details.append(f"{doc.title}: {doc.status}")
        elif doc.status == "failed" and not doc.error:
            result["failed documents without a reason"] += 1
    result["jobs queued or running"] = IngestionJob.objects.filter(
        tenant__slug__in=tenants, status__in=["queued", "running"]).count()
    result["failed jobs without a reason"] = IngestionJob.objects.filter(
        tenant__slug__in=tenants, status="failed", error="").count()
    # Chunk sets against a clean plan of the same bytes (ready documents; a failed replacement keeps
    # serving the chunks of the content before it).
    for doc in docs:
        if doc.status != "ready":
            continue
        version = index_version_active(tenant=doc.tenant)
        stored = sorted(Chunk.objects.filter(document=doc, index_version=version).values_list("ordinal", "content_hash"))
        try:
            expected = expected_chunks(doc)
        except Exception as exc:  # a document that no longer plans is itself a finding
            result["ready documents that do not plan"] += 1
            details.append(f"{doc.title}: {type(exc).__name__}: {exc}"[:300])
            continue
        if stored != expected:
            result["ready documents whose chunks differ from a clean ingestion"] += 1
            details.append(f"{doc.title}: {len(stored)} chunks stored, {len(expected)} expected")
    queries = {
        "orphan sections (no document)":
            "SELECT count(*) FROM kb_section s LEFT JOIN kb_document d ON d.id = s.document_id WHERE d.id IS NULL",
        "orphan chunks (no section, or another document's)":
            "SELECT count(*) FROM kb_chunk c LEFT JOIN kb_section s ON s.id = c.section_id "
            "WHERE s.id IS NULL OR s.document_id <> c.document_id",
        "chunks whose tenant is not their document's":
            "SELECT count(*) FROM kb_chunk c JOIN kb_document d ON d.id = c.document_id WHERE d.tenant_id <> c.tenant_id",
        "chunks whose policy is not their section's":
            "SELECT count(*) FROM kb_chunk c JOIN kb_section s ON s.id = c.section_id "
            "WHERE c.access_level <> s.access_level OR c.access_groups <> s.access_groups",
        "duplicate chunk ordinals":
            "SELECT count(*) FROM (SELECT 1 FROM kb_chunk GROUP BY document_id, index_version_id, ordinal "
            "HAVING count(*) > 1) t",
        "chunk ordinals with gaps":
            "SELECT count(*) FROM (SELECT document_id, index_version_id FROM kb_chunk "
            "GROUP BY document_id, index_version_id HAVING max(ordinal) + 1 <> count(*)) t",
        "embedding-cache rows of no tenant":
            "SELECT count(*) FROM kb_embeddingcacheentry e LEFT JOIN accounts_tenant t ON t.id = e.tenant_id "
            "WHERE t.id IS NULL",
        "jobs of no document":
            "SELECT count(*) FROM kb_ingestionjob j LEFT JOIN kb_document d ON d.id = j.document_id "
            "WHERE j.document_id IS NOT NULL AND d.id IS NULL",
    }
    with connection.cursor() as cursor:
        for name, sql in queries.items():
            cursor.execute(sql)
            result[name] = cursor.fetchone()[0]
    with model.lock:
        deleted = [d.server_id for ds in model.docs.values() for d in ds if d.deleted_at is not None and d.server_id]
        records = {d.server_id: d for ds in model.docs.values() for d in ds if d.server_id}
    result["deleted documents still stored"] = Document.objects.filter(id__in=deleted).count()
    result["chunks of deleted documents"] = Chunk.objects.filter(document_id__in=deleted).count()
    result["sections of deleted documents"] = Section.objects.filter(document_id__in=deleted).count()
    # The model against the stored policies: it must be exact for its leak verdicts to be.
    for doc in docs:
        record = records.get(str(doc.pk))
        if record is None or doc.status != "ready":
            continue
        for section in Section.objects.filter(document=doc).exclude(parent=None):
            label = next((lbl for lbl, c in record.title_canaries.items() if c in section.title), None)
            if label in (None, ROOT_LABEL) or not record.own[label].settled:
                continue
            own = record.own[label].latest
            want = own if own is not None else record.default
            got = (section.access_level, frozenset(_slugs(section.access_groups)))
            if got != want:
                result["sections whose policy differs from the model"] += 1
                details.append(f"{doc.title} {label}: stored {got}, model {want}")
    info = {"documents": len(docs), "ready": sum(d.status == "ready" for d in docs),
            "failed": sum(d.status == "failed" for d in docs),
            "cache rows without a live chunk (kept by design)": _cache_rows_without_chunks(tenants)}
    return {"violations": {k: v for k, v in sorted(result.items())}, "details": details[:20], **info}


_slug_cache: dict[int, str] = {}


def _slugs(group_ids) -> list[str]:
    from accounts.models import Group

    missing = [g for g in group_ids if g not in _slug_cache]
    if missing:
        _slug_cache.update(Group.objects.filter(id__in=missing).values_list("id", "slug"))
    return [_slug_cache.get(g, str(g)) for g in group_ids]


def _cache_rows_without_chunks(tenants: list[str]) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM kb_embeddingcacheentry e JOIN accounts_tenant t ON t.id = e.tenant_id "
            "WHERE t.slug = ANY(%s) AND NOT EXISTS (SELECT 1 FROM kb_chunk c WHERE c.tenant_id = e.tenant_id "
            "AND c.content_hash = e.content_hash)", [tenants])
        return cursor.fetchone()[0]


def deleted_search_probe(model: AccessModel, tenants: list[Tenant], port: int, recorder: Recorder) -> int:
    """Keyword searches, as each tenant's admin, for canaries of deleted documents: hits found."""
    client = Http(port)
    hits = 0
    try:
        for tenant in tenants:
            with model.lock:
                gone = [c.decode() for c, (d, _) in model.canaries.items()
                        if d.tenant == tenant.slug and d.deleted_at is not None]
            for canary in gone[:25]:
                status, _, body = client.request("POST", "/api/v1/search/", tenant.admin.token,
                                                 {"query": canary, "mode": "keyword", "top_k": 5})
                if status == 200 and canary.encode() in body:
                    hits += 1
    finally:
        client.close()
    return hits


# ============================================================================ faults


@dataclass
class Context:
    cluster: Cluster
    model: AccessModel
    tenants: list[Tenant]
    recorder: Recorder
    log: Callable[[str], None]
    port: int
    down_seconds: float
    events: dict = field(default_factory=dict)


def _editor_upload(ctx: Context, tenant: Tenant, *, big: bool = False, poison: bool = False,
                   default: str = "internal") -> DocRecord:
    doc = ctx.model.new_doc(tenant.slug, default=default, big=big, poison=poison)
    actors = Actors(ctx.model, ctx.tenants, ctx.port, ctx.recorder, random.Random(0))
    client = Http(ctx.port)
    for _ in range(30):
        if actors.upload(client, tenant.editors[0], doc) == 201:
            break
        time.sleep(1)
    client.close()
    return doc


def _job_state(job_id: str) -> tuple[str, str, int]:
    from kb.models import IngestionJob

    job = IngestionJob.objects.filter(pk=job_id).values_list("status", "stage", "attempts").first()
    return job or ("missing", "", 0)


def _wait_stage(job_id: str, stages: tuple[str, ...], timeout: float) -> str | None:
    deadline = now() + timeout
    while now() < deadline:
        status, stage, _ = db_retry(lambda: _job_state(job_id))
        if status == "running" and stage in stages:
            return stage
        if status in ("succeeded", "failed", "missing"):
            return None
        time.sleep(0.05)
    return None


def _wait_finished(job_id: str, timeout: float) -> tuple[str, float | None]:
    started = now()
    while now() - started < timeout:
        status = db_retry(lambda: _job_state(job_id))[0]
        if status in ("succeeded", "failed", "missing"):
            return status, round(now() - started, 1)
        time.sleep(0.5)
    return "unfinished", None


def _find_worker(ctx: Context, job_id: str, timeout: float = FIND_SECONDS) -> str | None:
    deadline = now() + timeout
    while now() < deadline:
        name = ctx.cluster.worker_running(job_id)
        if name:
            return name
        time.sleep(0.2)
    return None


def _replace_worker(ctx: Context, name: str, queues: str | None) -> str:
    """What a supervisor (systemd, Kubernetes) does when a worker exits: start another like it."""
    return ctx.cluster.start_worker(queues, wait=False)


def fault_worker_sigkill(ctx: Context) -> dict:
    """SIGKILL a whole worker (main process, pool child, parse server) while it embeds a large document."""
    doc = _editor_upload(ctx, ctx.tenants[0], big=True)
    job = doc.jobs[-1]
    stage = _wait_stage(job, ("embedding",), WAIT_SECONDS)
    name = _find_worker(ctx, job) if stage else None
    if name is None:
        return {"injected": False, "why": f"the large document's job never reached embedding on a worker ({stage})"}
    queues = ctx.cluster.queues.get(name)
    killed_at = now()
    ctx.cluster.kill(name, signal.SIGKILL)
    ctx.cluster.wait_exit(name, 10)
    ctx.log(f"    SIGKILLed {name} while it embedded {doc.title}")
    replacement = _replace_worker(ctx, name, queues)
    ctx.cluster.queues[replacement] = queues
    status, _ = _wait_finished(job, WAIT_SECONDS)
    return {"injected": True, "killed": name, "job": job, "job_status": status,
            "recovery_s": round(now() - killed_at, 1), "attempts": db_retry(lambda: _job_state(job))[2]}


def fault_worker_oom(ctx: Context) -> dict:
    """SIGKILL the pool process of a worker while it embeds a large document -- the process the kernel's
    OOM killer picks (the one holding the model and the batch); the worker's main process lives on."""
    doc = _editor_upload(ctx, ctx.tenants[0], big=True)
    job = doc.jobs[-1]
    stage = _wait_stage(job, ("embedding",), WAIT_SECONDS)
    found = None
    deadline = now() + FIND_SECONDS
    while stage and found is None and now() < deadline:
        found = ctx.cluster.task_running(job)
        found = found if found and found[1] else None
    if not found:
        return {"injected": False, "why": f"the large document's job never reached embedding on a worker ({stage})"}
    killed_at = now()
    with contextlib.suppress(ProcessLookupError):
        os.kill(found[1], signal.SIGKILL)
    ctx.log(f"    SIGKILLed {found[0]}'s pool process {found[1]} while it embedded {doc.title}")
    status, _ = _wait_finished(job, WAIT_SECONDS)
    return {"injected": True, "worker": found[0], "job": job, "job_status": status,
            "recovery_s": round(now() - killed_at, 1), "attempts": db_retry(lambda: _job_state(job))[2]}


def fault_worker_sigterm(ctx: Context) -> dict:
    """SIGTERM a worker's main process mid-task: a warm shutdown finishes the task (or requeues it)."""
    doc = _editor_upload(ctx, ctx.tenants[1], big=True)
    job = doc.jobs[-1]
    stage = _wait_stage(job, ("chunking", "embedding"), WAIT_SECONDS)
    name = _find_worker(ctx, job) if stage else None
    if name is None:
        return {"injected": False, "why": f"the large document's job never ran on a worker ({stage})"}
    queues = ctx.cluster.queues.get(name)
    sent_at = now()
    ctx.cluster.kill(name, signal.SIGTERM, group=False)
    exited = ctx.cluster.wait_exit(name, 150)
    exit_s = round(now() - sent_at, 1)
    status_at_exit = db_retry(lambda: _job_state(job))[0]
    ctx.log(f"    SIGTERMed {name} while its job was {stage}; it exited after {exit_s}s, job {status_at_exit}")
    replacement = _replace_worker(ctx, name, queues)
    ctx.cluster.queues[replacement] = queues
    status, _ = _wait_finished(job, WAIT_SECONDS)
    return {"injected": True, "worker": name, "job": job, "exited": exited, "exit_s": exit_s,
            "job_at_exit": status_at_exit, "job_status": status, "recovery_s": round(now() - sent_at, 1)}


def _first_success_after(ctx: Context, op: str, since: float) -> float | None:
    with ctx.recorder.lock:
        times = [s.received for s in ctx.recorder.samples if s.op == op and s.sent >= since and 200 <= s.status < 300]
    return round(min(times) - since, 1) if times else None


def _recovery(ctx: Context, returned_at: float, wait: float = 30) -> dict:
    ctx.recorder.stop.wait(wait)
    return {op: _first_success_after(ctx, op, returned_at) for op in ("search", "upload")}


def _outage(ctx: Context, server: str, stop: Callable[[], object], start: Callable[[], object]) -> dict:
    """Stop a server, keep it down for ``ctx.down_seconds``, start it again; when it came back and
    how long the first request after that took to succeed."""
    stopped_at = now()
    stop()
    ctx.log(f"    {server} stopped for {ctx.down_seconds}s")
    ctx.recorder.stop.wait(ctx.down_seconds)
    start()
    returned_at = now()
    return {"injected": True, "down_s": round(returned_at - stopped_at, 1), "returned_at": returned_at,
            "first_success_after_return_s": _recovery(ctx, returned_at)}


def fault_postgres_restart(ctx: Context) -> dict:
    """Stop the embedded PostgreSQL (fast shutdown: connections drop), keep it down, start it again."""
    from django.db import connections

    def stop() -> None:
        embedded_services.stop_postgres()
        connections.close_all()

    return _outage(ctx, "PostgreSQL", stop, embedded_services.ensure_postgres)


def fault_redis_restart(ctx: Context) -> dict:
    """Stop the embedded Redis (broker and throttle counts; it keeps nothing on disk), then start it."""
    return _outage(ctx, "Redis", embedded_services.stop_redis, embedded_services.ensure_redis)


def fault_revoke_and_deactivate(ctx: Context) -> dict:
    """Revoke a reader's token and deactivate a member mid-run; the very next request must be refused."""
    actors = Actors(ctx.model, ctx.tenants, ctx.port, ctx.recorder, random.Random(1))
    client = Http(ctx.port)
    tenant = ctx.tenants[0]
    reader = next(m for m in tenant.readers if m.name.endswith("r-conf-beta"))  # the admin thread leaves it alone
    results = {}
    try:
        actors.rotate_token(client, tenant.admin, next(m for m in tenant.readers if m.name.endswith("r-all")))
        status = actors.set_membership(client, tenant.admin, reader, is_active=False)
        if status == 200:
            actors.deactivated_token(reader)
        probe, _, _, _ = actors.call(client, reader, "probe_inactive", "GET", "/api/v1/documents/")
        results = {"injected": True, "deactivate_status": status, "probe_status": probe}
        ctx.recorder.stop.wait(3)
        results["reactivate_status"] = actors.set_membership(client, tenant.admin, reader, is_active=True)
        if results["reactivate_status"] == 200:
            actors.reissue_token(client, tenant.admin, reader)  # deactivation revoked their tokens
    finally:
        client.close()
    return results


POISON_NEIGHBOURS = 3  # innocent documents imported in the same batch (one task) as the poison


def _batch_import(ctx: Context, tenant: Tenant, docs: list[DocRecord]) -> None:
    """Import documents as one batch, as ``manage.py kb_ingest`` does: their jobs share one task."""
    from accounts.models import Tenant as TenantRow
    from kb.models import Document, IngestionJob
    from kb.services import Upload, batch_create

    uploads = [Upload(content=ctx.model.content(d).encode(), title=d.title, source=f"handbook-{d.local}.md",
                      content_type="text/markdown", access_level=LEVEL_NAMES[d.default[0]]) for d in docs]
    batch = batch_create(tenant=TenantRow.objects.get(slug=tenant.slug), created_by=None, uploads=uploads)
    jobs = dict(IngestionJob.objects.filter(batch=batch).values_list("document__source", "id"))
    ids = dict(Document.objects.filter(tenant__slug=tenant.slug, source__in=list(jobs)).values_list("source", "id"))
    with ctx.model.lock:
        for doc in docs:
            source = f"handbook-{doc.local}.md"
            doc.server_id, doc.jobs = str(ids[source]), [str(jobs[source])]


def fault_poison(ctx: Context) -> dict:
    """A document that kills the worker process running it, every time -- as the kernel's OOM killer
    kills the pool process whose memory grew past the machine's: the harness SIGKILLs the pool process
    that holds its job whenever it runs. It is imported in one batch with innocent documents (one task,
    as ``kb_ingest`` sends them). The poison job must fail after BULKHEAD_JOB_MAX_ATTEMPTS attempts
    with a clear error; its batch neighbours and the other tenant's uploads must succeed."""
    from django.utils import timezone

    from kb.models import Document, IngestionJob

    since = timezone.now()
    tenant = ctx.tenants[0]
    poison = ctx.model.new_doc(tenant.slug, default="internal", big=True, poison=True)  # big: runs long enough
    neighbours = [ctx.model.new_doc(tenant.slug, default="internal") for _ in range(POISON_NEIGHBOURS)]
    for doc in neighbours:
        doc.pinned = True
    db_retry(lambda: _batch_import(ctx, tenant, [poison, *neighbours]))
    job = poison.jobs[-1]
    kills, started, killed_pids = 0, now(), set()
    while now() - started < 600:
        status, _, attempts = db_retry(lambda: _job_state(job))
        if status in ("succeeded", "failed", "missing"):
            break
        found = ctx.cluster.task_running(job) if status == "running" else None
        if found and found[1] and found[1] not in killed_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(found[1], signal.SIGKILL)
                killed_pids.add(found[1])
                kills += 1
                ctx.log(f"    poison: killed {found[0]}'s pool process {found[1]} (attempt {attempts})")
        time.sleep(0.1)
    neighbour_jobs = [d.jobs[-1] for d in neighbours]
    for neighbour in neighbour_jobs:
        _wait_finished(neighbour, WAIT_SECONDS)
    row = db_retry(lambda: IngestionJob.objects.filter(pk=job).values("status", "attempts", "error").first()) or {}
    rows = db_retry(lambda: list(IngestionJob.objects.filter(pk__in=neighbour_jobs).values_list(
        "status", "attempts", "error")))
    others = db_retry(lambda: IngestionJob.objects.filter(
        tenant__slug=ctx.tenants[1].slug, status="succeeded", finished_at__gte=since).count())
    document = db_retry(lambda: Document.objects.filter(pk=poison.server_id).values("status", "error").first()) or {}
    return {"injected": True, "kills": kills, "job_status": row.get("status"), "attempts": row.get("attempts"),
            "error": (row.get("error") or "")[:200], "document_status": document.get("status"),
            "document_id": poison.server_id,
            "seconds": round(now() - started, 1),
            "batch_neighbours": [{"status": st, "attempts": at, "error": er[:120]} for st, at, er in rows],
            "other_tenant_jobs_succeeded_meanwhile": others}


class DiskFull:
    """The data volume fills up: the tables ingestion writes move to a tablespace on a small tmpfs,
    which a filler file then fills (PostgreSQL's WAL stays on the real disk: a separate WAL volume).
    Needs root (mount)."""

    TABLES = ("kb_document", "kb_section", "kb_chunk", "kb_embeddingcacheentry", "kb_ingestionjob")
    NAME = "bulkhead_load_full"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.mount = embedded_services.data_path() / "fulldisk"
        self.mounted = False
        self.moved = False

    @staticmethod
    def feasible() -> str | None:
        if os.geteuid() != 0:
            return "needs root to mount a small tmpfs"
        if not shutil.which("mount"):
            return "no mount command"
        return None

    def prepare(self) -> None:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT sum(pg_table_size(c.oid)) FROM pg_class c WHERE relname = ANY(%s)",
                           [list(self.TABLES)])
            size = int(cursor.fetchone()[0] or 0)
        mb = size // 2**20 + 48
        self.mount.mkdir(exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mb}m", "tmpfs", str(self.mount)], check=True)
        self.mounted = True
        owner = (embedded_services.data_path() / "pg").stat()
        space = self.mount / "ts"
        space.mkdir()
        os.chown(space, owner.st_uid, owner.st_gid)
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLESPACE {self.NAME} LOCATION %s", [str(space)])
            for table in self.TABLES:
                cursor.execute(f"ALTER TABLE {table} SET TABLESPACE {self.NAME}")
        self.moved = True
        self.ctx.log(f"    disk-full: {len(self.TABLES)} tables on a {mb} MB tmpfs")

    def fill(self) -> None:
        free = shutil.disk_usage(self.mount).free
        subprocess.run(["fallocate", "-l", str(free), str(self.mount / "filler")], check=False)
        for i in range(64):  # whatever fallocate left: a few pages more
            with contextlib.suppress(OSError), open(self.mount / f"filler-{i}", "wb") as handle:
                handle.write(b"\0" * 65536)

    def free(self) -> None:
        for path in self.mount.glob("filler*"):
            path.unlink()

    def cleanup(self) -> None:
        from django.db import connection, connections

        self.free()
        if self.moved:
            connections.close_all()

            def back():
                with connection.cursor() as cursor:
                    for table in self.TABLES:
                        cursor.execute(f"ALTER TABLE {table} SET TABLESPACE pg_default")
                    cursor.execute(f"DROP TABLESPACE {self.NAME}")
            db_retry(back)
            self.moved = False
        if self.mounted:
            subprocess.run(["umount", str(self.mount)], check=False)
            self.mounted = False
            with contextlib.suppress(OSError):
                self.mount.rmdir()


def fault_disk_full(ctx: Context) -> dict:
    disk: DiskFull = ctx.events["disk"]
    filled_at = now()
    disk.fill()
    ctx.log(f"    disk-full: filled for {ctx.down_seconds * 2}s")
    ctx.recorder.stop.wait(ctx.down_seconds * 2)
    disk.free()
    returned_at = now()
    return {"injected": True, "full_s": round(returned_at - filled_at, 1), "returned_at": returned_at,
            "first_success_after_return_s": _recovery(ctx, returned_at)}


# ---------------------------------------------------------------------------- costly documents

# The documents the costly-document attacker sends (bench.costly_documents; plain ASCII PDFs, so that
# they travel as a JSON upload's content), each with the answer its preview must get.
COSTLY_PAUSE = 1.0  # seconds the attacker waits between requests (it sends one at a time)
COSTLY_UPLOAD_EVERY = 4  # every this many rounds it also uploads a document the bulk lane must take


def _costly_documents() -> dict[str, tuple[str, bytes, int]]:
    """name -> (file name, bytes, the preview's expected status; 0: either answer)."""
    from bench.costly_documents import repeated_page_pdf

    words = " ".join(VOCABULARY)
    return {
        # The attack PDF of the demo (36 KB): 4,999 references to one page of 2,000 lines; over any document's budget.
        "attack-pdf": ("attack.pdf", repeated_page_pdf(), 400),
        # 2.2 MB of page content in 36 KB: over the small-upload lane's (and the preview's) 2 MB, within a document's.
        "lane-pdf": ("lane.pdf", repeated_page_pdf(references=16), 400),
        # Just within the lane's budget: ~1.7 MB of drawing to interpret, a preview near its 10 s.
        "edge-pdf": ("edge.pdf", repeated_page_pdf(references=4, lines=20, drawing=20_000), 0),
        # 4 MB of text: over the preview's 1 MB of text.
        "big-text": ("big.txt", (words + ".\n\n").encode() * (4 * 1024 * 1024 // (len(words) + 3)), 400),
        # Uploaded now and then (100 KB, the small lane by its bytes): 2.6 MB of drawing to interpret, moved
        # to the bulk lane and read there.
        "bulk-pdf": ("bulk.pdf", repeated_page_pdf(references=6, lines=20, drawing=20_000), 0),
    }


def costly_document_attacker(ctx: Context) -> dict:
    """An editor of the first tenant keeps previewing and uploading documents that hit the budgets, one
    request at a time, until the scenario ends: the attack PDF (a preview and an upload, each refused
    or failed at once with its numbers), a PDF over the small lane's budget and 4 MB of text (previews
    refused at once: too costly), a PDF just within it (a preview near its time budget), and every few
    rounds an upload of a PDF the small lane hands to the bulk lane. Returns what it sent and got, and
    the documents it expects to fail (the verdict does not count them as lost)."""
    from accounts.models import Tenant as TenantRow
    from accounts.services import api_token_create, membership_create

    slug = ctx.tenants[0].slug
    row = TenantRow.objects.get(slug=slug)
    email = f"costly-{secrets.token_hex(3)}@{slug}.example"
    membership = membership_create(tenant=row, email=email, role="editor", clearance="restricted",
                                   group_slugs=list(GROUPS))
    token, key = api_token_create(membership=membership, name="costly")
    member = MemberRecord(name=f"{slug}/costly", tenant=slug, role="editor", email=email,
                          membership_id=membership.pk, token=key, token_id=token.pk, mutable=False,
                          state=History((LEVELS["restricted"], frozenset(GROUPS), True)))
    ctx.model.members[member.name] = member
    documents = _costly_documents()
    actors = Actors(ctx.model, ctx.tenants, ctx.port, ctx.recorder, random.Random(23))
    client = Http(ctx.port, timeout=120)
    sent: Counter = Counter()
    answers: dict[str, Counter] = {}
    unexpected: list[dict] = []
    expected_failures: list[str] = []
    moved: list[str] = []
    rounds = 0

    def body(name: str) -> tuple[bytes, str]:
        filename, data, _ = documents[name]
        return multipart({"title": f"Costly {name}", "access_level": "internal"}, filename, data)

    def preview(name: str) -> None:
        status, payload, _, _ = actors.call(client, member, "costly_preview", "POST", "/api/v1/documents/preview/",
                                            raw=body(name))
        sent[f"preview {name}"] += 1
        answers.setdefault(f"preview {name}", Counter())[str(status)] += 1
        wanted = documents[name][2]
        if status >= 500 or (wanted and status != wanted):
            unexpected.append({"request": f"preview {name}", "status": status, "body": payload[:200].decode(errors="replace")})

    def upload(name: str) -> tuple[str, str] | None:
        status, payload, _, _ = actors.call(client, member, "costly_upload", "POST", "/api/v1/documents/",
                                            raw=body(name))
        sent[f"upload {name}"] += 1
        answers.setdefault(f"upload {name}", Counter())[str(status)] += 1
        if status != 201:
            unexpected.append({"request": f"upload {name}", "status": status, "body": payload[:200].decode(errors="replace")})
            return None
        answer = json.loads(payload)
        return answer["id"], answer["job"]["id"]

    try:
        while not ctx.recorder.stop.is_set():
            rounds += 1
            for name in ("attack-pdf", "lane-pdf", "big-text", "edge-pdf"):
                if ctx.recorder.stop.is_set():
                    break
                preview(name)
                ctx.recorder.stop.wait(COSTLY_PAUSE)
            if ctx.recorder.stop.is_set():
                break
            created = upload("attack-pdf")
            if created:
                expected_failures.append(created[0])
            if rounds % COSTLY_UPLOAD_EVERY == 1:
                created = upload("bulk-pdf")
                if created:
                    moved.append(created[1])
            ctx.recorder.stop.wait(COSTLY_PAUSE)
    finally:
        client.close()
    return {"injected": True, "rounds": rounds, "sent": dict(sent),
            "answers": {k: dict(v) for k, v in sorted(answers.items())}, "unexpected": unexpected[:10],
            "expected_failures": expected_failures, "bulk_jobs": moved}


def costly_document_outcome(fault: dict) -> dict:
    """After the scenario settled: how the attacker's uploads ended (the attack PDFs failed at once with
    their numbers; the bulk PDFs moved to the bulk lane and were read there)."""
    from kb.models import Document, IngestionJob

    failed = list(Document.objects.filter(pk__in=fault.get("expected_failures", [])).values_list("status", "error"))
    jobs = list(IngestionJob.objects.filter(pk__in=fault.get("bulk_jobs", [])).values_list("status", "stats"))
    return {
        "attack_uploads": {"n": len(failed), "failed_with_numbers": sum(
            st == "failed" and "4,999 page references to 1 page object" in (er or "") for st, er in failed)},
        "bulk_uploads": {"n": len(jobs), "succeeded": sum(st == "succeeded" for st, _ in jobs),
                         "moved_to_bulk": sum((stats or {}).get("lane") == "bulk" for _, stats in jobs)},
    }


def poll_healthz(port: int, stop: threading.Event, every: float = 1.0) -> dict:
    """GET /healthz every ``every`` seconds until ``stop``: how many answers, and each one that was not 200."""
    client = Http(port, timeout=10)
    statuses: Counter = Counter()
    failures: list[dict] = []
    started = now()
    try:
        while not stop.is_set():
            status, _, body = client.request("GET", "/healthz", None)
            statuses[str(status)] += 1
            if status != 200 and len(failures) < 10:
                failures.append({"at_s": round(now() - started, 1), "status": status,
                                 "body": body[:200].decode(errors="replace")})
            stop.wait(every)
    finally:
        client.close()
    return {"polls": sum(statuses.values()), "statuses": dict(sorted(statuses.items())),
            "not_200": sum(v for k, v in statuses.items() if k != "200"), "failures": failures}


def tenant_measures(recorder: Recorder, model: AccessModel, tenants: list[str], since_wall: float) -> dict:
    """Per tenant: search p95 of its members (the load's own samples) and how long its small uploads took
    to be ready (document jobs created since ``since_wall`` -- uploads and replacements, not the
    re-derivations after a policy change -- ``finished_at - created_at``, from the database)."""
    from datetime import UTC, datetime

    from kb.models import IngestionJob

    since = datetime.fromtimestamp(since_wall, tz=UTC)
    result = {}
    for slug in tenants:
        searches = [1000 * (s.received - s.sent) for s in recorder.samples
                    if s.op == "search" and s.status == 200 and model.members.get(s.member)
                    and model.members[s.member].tenant == slug]
        rows = IngestionJob.objects.filter(
            tenant__slug=slug, kind="document", created_at__gte=since, finished_at__isnull=False,
        ).exclude(stats__has_key="rederive").values_list("created_at", "finished_at", "document__size_bytes")
        ready = [1000 * (done - created).total_seconds() for created, done, size in rows
                 if (size or 0) <= 1024 * 1024]
        result[slug] = {
            "search_n": len(searches), "search_p95_ms": _round(percentile(searches, 0.95)),
            "uploads_n": len(ready), "upload_ready_p50_ms": _round(percentile(ready, 0.5)),
            "upload_ready_p95_ms": _round(percentile(ready, 0.95)),
        }
    return result


# ----------------------------------------------------------------------------- the sync scenario

SYNC_FILES = 160  # files of the scenario's repository (the kill lands after a tenth of them)


def sync_repository_files(n: int, rng: random.Random, *, start: int = 0) -> dict[str, bytes]:
    """``n`` small Markdown files in a few folders (no canaries: the access oracle does not judge them)."""
    import textwrap

    files = {}
    for i in range(start, start + n):
        words = " ".join(rng.choice(VOCABULARY) for _ in range(60))
        details = " ".join(rng.choice(VOCABULARY) for _ in range(60))
        # Lines of prose length: Git's similarity (and dulwich's) compares lines, or 64-byte blocks of long ones.
        files[f"part-{i % 7}/page-{i:04}.md"] = (
            f"# Page {i}\n\n{textwrap.fill(f'The source page number {i}. {words}.', 72)}\n\n"
            f"## Details\n\n{textwrap.fill(details + '.', 72)}\n").encode()
    return files


def _git_commit(repo: Path, files: dict[str, bytes | None], message: str) -> str:
    from dulwich import porcelain

    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        porcelain.init(str(repo))
    for rel, content in files.items():
        path = repo / rel
        if content is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
    removed = [str(repo / r) for r, c in files.items() if c is None]
    if removed:
        porcelain.remove(str(repo), paths=removed, cached=True)
    added = [str(repo / r) for r, c in files.items() if c is not None]
    if added:
        porcelain.add(str(repo), paths=added)
    return porcelain.commit(str(repo), message=message.encode(), author=b"L <l@example.com>",
                            committer=b"L <l@example.com>").decode()


def sync_differences(files: dict[str, bytes], documents: list[tuple[str, bytes]], items: list[str]) -> dict:
    """What a source's documents (``(path, raw)``) and items (paths) get wrong against the repository's
    ``files``: a path with two documents (or two items), a file with none, a document of no file, a
    document whose bytes are not the file's. Every list empty: no duplicates, no losses."""
    per_path = Counter(path for path, _ in documents)
    per_item = Counter(items)
    return {
        "duplicate documents": sorted(p for p, n in per_path.items() if n > 1),
        "duplicate items": sorted(p for p, n in per_item.items() if n > 1),
        "files without a document": sorted(set(files) - set(per_path)),
        "files without an item": sorted(set(files) - set(per_item)),
        "documents of no file": sorted(set(per_path) - set(files)),
        "documents with other bytes": sorted({p for p, raw in documents if p in files and raw != files[p]}),
    }


def _source_state(source_id: int) -> tuple[list[tuple[str, bytes]], list[str]]:
    from kb.models import Document
    from sources.models import SourceItem

    documents = [(d.metadata.get("source_path", ""), bytes(d.raw))
                 for d in Document.objects.filter(metadata__source_id=source_id).only("metadata", "raw")]
    return documents, list(SourceItem.objects.filter(source_id=source_id).values_list("path", flat=True))


def _sync_state(sync_id: str) -> dict:
    from sources.models import SourceSync

    return SourceSync.objects.filter(pk=sync_id).values(
        "status", "stage", "attempts", "added", "changed", "renamed", "deleted", "unchanged", "skipped", "failed",
        "error", "errors").first() or {"status": "missing"}


def _wait_sync(sync_id: str, timeout: float) -> dict:
    deadline = now() + timeout
    while now() < deadline:
        state = db_retry(lambda: _sync_state(sync_id))
        if state["status"] in ("succeeded", "failed", "missing"):
            return state
        time.sleep(0.3)
    return {**db_retry(lambda: _sync_state(sync_id)), "status": "unfinished"}


def fault_sync_worker_kill(ctx: Context) -> dict:
    """A Git source of the first tenant, made here and set up through the API by its admin: its first sync
    has its worker's pool process SIGKILLed once a tenth of the files are written; the sync, delivered
    again, must end ``succeeded`` with every file once and nothing else. Then a commit that changes,
    renames (with edits), deletes and adds files, and a second sync: the same comparison."""
    tenant = ctx.tenants[0]
    rng = random.Random(29)
    n_files = max(40, int(ctx.events.get("sync_files") or SYNC_FILES))
    repo = ctx.cluster.source_root / tenant.slug / f"repo-{secrets.token_hex(3)}"  # the tenant's own folder
    files = sync_repository_files(n_files, rng)
    _git_commit(repo, files, "first")
    client = Http(ctx.port)
    token = tenant.admin.token
    status, _, body = client.request("POST", "/api/v1/sources/", token, {
        "kind": "git", "name": f"load-{repo.name}", "url": f"file://{repo}", "access_level": "internal",
        "access_map": [{"path": "part-3/**", "access_level": "confidential", "groups": []}]})
    if status != 201:
        return {"injected": False, "why": f"creating the source answered {status}: {body[:300]!r}"}
    source_id = json.loads(body)["id"]

    def start() -> str | None:
        status, _, body = client.request("POST", f"/api/v1/sources/{source_id}/sync/", token, {})
        return json.loads(body)["id"] if status in (200, 201, 202) else None

    sync_id = start()
    if sync_id is None:
        return {"injected": False, "why": "starting the sync failed"}
    found = None
    deadline = now() + 120
    while found is None and now() < deadline:
        state = db_retry(lambda: _sync_state(sync_id))
        if state["status"] not in ("queued", "running"):
            break
        if state["added"] >= n_files // 10:
            found = ctx.cluster.task_running(sync_id)
            found = found if found and found[1] else None
        else:
            time.sleep(0.02)
    if not found:
        return {"injected": False, "why": f"the sync was not caught mid-way on a worker ({state['status']}, "
                                          f"{state['added']} added)"}
    added_at_kill = db_retry(lambda: _sync_state(sync_id))["added"]
    killed_at = now()
    with contextlib.suppress(ProcessLookupError):
        os.kill(found[1], signal.SIGKILL)
    ctx.log(f"    SIGKILLed {found[0]}'s pool process {found[1]} with {added_at_kill}/{n_files} files synced")
    first = _wait_sync(sync_id, WAIT_SECONDS)  # redelivery waits for the new pool process (it loads the model first)
    recovery_s = round(now() - killed_at, 1)
    first_differences = sync_differences(files, *db_retry(lambda: _source_state(source_id)))

    # A second commit: 10 changed, 10 moved with a small edit, 10 deleted, 10 added.
    paths = sorted(files)
    change = {p: files[p] + b"\nA line added by the second commit.\n" for p in paths[0:10]}
    moves = {}
    for p in paths[10:20]:
        moves[p] = None
        moves[p.replace("page-", "moved-")] = files[p] + b"\nMoved by the second commit.\n"
    deletes = {p: None for p in paths[20:30]}
    adds = sync_repository_files(10, rng, start=n_files)
    _git_commit(repo, {**change, **moves, **deletes, **adds}, "change, move, delete, add")
    files = {p: c for p, c in {**files, **change, **moves, **deletes, **adds}.items() if c is not None}
    second_id = start()
    second = _wait_sync(second_id, WAIT_SECONDS) if second_id else {"status": "not started"}  # behind ingestion
    second_differences = sync_differences(files, *db_retry(lambda: _source_state(source_id)))
    client.close()
    return {"injected": True, "worker": found[0], "source_id": source_id, "files": n_files,
            "added_at_kill": added_at_kill, "recovery_s": recovery_s,
            "first_sync": {k: first.get(k) for k in ("status", "attempts", "added", "unchanged", "failed", "error")},
            "first_differences": first_differences,
            "second_sync": {k: second.get(k) for k in ("status", "added", "changed", "renamed", "deleted", "failed",
                                                        "error")},
            "second_differences": second_differences}


def sync_failures(fault: dict) -> list[str]:
    """The sync scenario's own verdict: both syncs succeeded, the first after a redelivery, the counts as
    committed, and the source's documents and items are the repository's files, once each, byte for byte."""
    failures = []
    first, second = fault.get("first_sync") or {}, fault.get("second_sync") or {}
    if first.get("status") != "succeeded":
        failures.append(f"the killed sync ended {first.get('status')}: {first.get('error')!r}")
    elif (first.get("attempts") or 0) < 2:
        failures.append("the killed sync was not delivered again")
    if first.get("added") != fault.get("files"):
        failures.append(f"the killed sync counted {first.get('added')} added of {fault.get('files')}")
    if second.get("status") != "succeeded":
        failures.append(f"the second sync ended {second.get('status')}: {second.get('error')!r}")
    elif [second.get(k) for k in ("added", "changed", "renamed", "deleted")] != [10, 10, 10, 10]:
        failures.append(f"the second sync counted {second}")
    for which in ("first_differences", "second_differences"):
        wrong = {k: v for k, v in (fault.get(which) or {}).items() if v}
        if wrong:
            failures.append(f"{which}: " + ", ".join(f"{k} ({len(v)})" for k, v in sorted(wrong.items())))
    return failures


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    fault: Callable[[Context], dict] | None
    what: str
    during: Callable[[Context], dict] | None = None  # runs in a thread of its own for the whole load


SCENARIOS = {
    "steady": ScenarioSpec("steady", None, "the mixed load, no fault"),
    "worker-sigkill": ScenarioSpec("worker-sigkill", fault_worker_sigkill, "SIGKILL a worker mid-embed"),
    "worker-oom": ScenarioSpec("worker-oom", fault_worker_oom, "SIGKILL a worker's pool process mid-embed"),
    "worker-sigterm": ScenarioSpec("worker-sigterm", fault_worker_sigterm, "SIGTERM a worker mid-task"),
    "postgres-restart": ScenarioSpec("postgres-restart", fault_postgres_restart, "restart PostgreSQL"),
    "redis-restart": ScenarioSpec("redis-restart", fault_redis_restart, "restart Redis (broker, throttle)"),
    "disk-full": ScenarioSpec("disk-full", fault_disk_full, "the database's data volume fills up"),
    "revoke-deactivate": ScenarioSpec("revoke-deactivate", fault_revoke_and_deactivate,
                                      "a token revoked and a member deactivated mid-run"),
    "poison": ScenarioSpec("poison", fault_poison, "a document that kills its worker every time"),
    "sync": ScenarioSpec("sync", fault_sync_worker_kill,
                         "a Git source synced while its worker's pool process is SIGKILLed mid-sync"),
    "costly-document": ScenarioSpec(
        "costly-document", None, "an editor of one tenant keeps previewing and uploading documents that hit the "
        "budgets", during=costly_document_attacker),
}


# ============================================================================ running


@dataclass
class LoadConfig:
    seconds: float = 60
    max_requests: int = 20_000
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    readers: int = 3  # reader threads per tenant
    reader_think: float = 0.25  # mean seconds between a reader's requests (0: back to back)
    editors: int = 1  # editor threads per tenant
    documents: int = 6  # documents per tenant before the first scenario
    web_workers: int = 2
    web_threads: int = 4
    workers: int = 2
    fault_at: float = 0.3  # share of the scenario's time before the fault
    down_seconds: float = 8
    settle_seconds: float = 120
    idle_searches: int = 40
    scale: bool = False
    scale_documents: int = 24
    scale_seconds: float = 20
    seed: int = 17
    sync_files: int = SYNC_FILES  # the sync scenario's repository
    keep_services: bool = False
    worker_pool: str = "prefork"  # as `make worker`; "solo" as the demo


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def summarize(recorder: Recorder, seconds: float) -> dict:
    by_op: dict[str, list[Sample]] = {}
    for sample in recorder.samples:
        by_op.setdefault(sample.op, []).append(sample)
    ops = {}
    for op, samples in sorted(by_op.items()):
        ms = [1000 * (s.received - s.sent) for s in samples]
        ops[op] = {"n": len(samples), "p50_ms": _round(percentile(ms, 0.5)), "p95_ms": _round(percentile(ms, 0.95)),
                   "p99_ms": _round(percentile(ms, 0.99)),
                   "statuses": dict(sorted(Counter(str(s.status) for s in samples).items()))}
    statuses = Counter(s.status for s in recorder.samples)
    return {
        "requests": len(recorder.samples), "seconds": round(seconds, 1),
        "throughput_rps": round(len(recorder.samples) / seconds, 1) if seconds else 0,
        "statuses": dict(sorted((str(k), v) for k, v in statuses.items())),
        "errors_by_status": dict(sorted((str(k), v) for k, v in statuses.items() if k >= 400 or k == 0)),
        "status_500": statuses.get(500, 0), "problems": dict(recorder.problems), "problem_examples": recorder.examples[:8],
        "leaks": len(recorder.leaks), "leak_examples": recorder.leaks[:10], "canaries_seen": recorder.canaries_seen,
        "stale_authority": len(recorder.stale), "stale_examples": recorder.stale[:10], "ops": ops,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def idle_search_latency(model: AccessModel, tenants: list[Tenant], port: int, n: int) -> dict:
    recorder = Recorder(10**9)
    actors = Actors(model, tenants, port, recorder, random.Random(5))
    client = Http(port)
    rng = random.Random(6)
    for i in range(n):
        member = tenants[i % len(tenants)].readers[i % len(READERS)]
        actors.call(client, member, "search", "POST", "/api/v1/search/", actors.search_body(member, rng))
    client.close()
    recorder.judge_all(model)
    ms = [1000 * (s.received - s.sent) for s in recorder.samples if s.status == 200]
    return {"n": len(ms), "p50_ms": _round(percentile(ms, 0.5)), "p95_ms": _round(percentile(ms, 0.95)),
            "leaks": len(recorder.leaks), "problems": dict(recorder.problems)}


def warm_web(model: AccessModel, tenants: list[Tenant], port: int, n: int) -> dict:
    """One search on each of ``n`` fresh connections at once, so that every gunicorn worker has loaded the
    embedding model (it does on its first search) before a scenario measures: the idle searches go over
    one kept-alive connection, to one worker, and a worker's first searches under load waited for the
    load -- up to the client's 60 s on the loaded 2-core machine. Not measured."""
    recorder = Recorder(10**9)
    actors = Actors(model, tenants, port, recorder, random.Random(8))

    def one(i: int) -> None:
        client = Http(port, timeout=180)
        member = tenants[i % len(tenants)].readers[0]
        actors.call(client, member, "warm_up", "POST", "/api/v1/search/", {"query": QUERIES[i % len(QUERIES)]})
        client.close()

    started = now()
    _run_threads(one, n)
    recorder.judge_all(model)
    return {"searches": n, "seconds": round(now() - started, 1),
            "statuses": dict(Counter(str(s.status) for s in recorder.samples)), "leaks": len(recorder.leaks)}


class Harness:
    def __init__(self, config: LoadConfig, log: Callable[[str], None]) -> None:
        self.config = config
        self.log = log
        self.rng = random.Random(config.seed)
        self.run = secrets.token_hex(3)
        data = embedded_services.data_path()
        self.run_dir = data / "load-runs" / time.strftime(f"%Y%m%d-%H%M%S-{self.run}")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.cluster = Cluster(self.run_dir, log)
        self.cluster.pool = config.worker_pool
        self.model = AccessModel(self.rng)
        self.tenants: list[Tenant] = []
        self.steady: dict | None = None  # the steady scenario's result, the costly-document's baseline

    # ------------------------------------------------------------------ set-up

    def start(self) -> None:
        from django.core.management import call_command

        killed = kill_leftovers(embedded_services.data_path())
        if killed:
            self.log(f"stopped {len(killed)} processes an earlier run left behind")
        embedded_services.ensure_started()
        call_command("migrate", verbosity=0)
        self.tenants = create_population(self.model, self.run)
        self.log(f"run {self.run}: tenants {', '.join(t.slug for t in self.tenants)}; logs in {self.run_dir}")
        self.cluster.start_beat()
        # As `make worker`: one worker on the interactive lane alone, the others on both lanes.
        for i in range(self.config.workers):
            queues = "celery" if i == 0 and self.config.workers > 1 else None
            self.cluster.queues[self.cluster.start_worker(queues, wait=False)] = queues
        port = self.cluster.start_web(self.config.web_workers, self.config.web_threads)
        for name in self.cluster.worker_names():
            self.cluster.wait_worker(name)
        self.port = port
        self.log(f"gunicorn on 127.0.0.1:{port} ({self.config.web_workers}x{self.config.web_threads}), "
                 f"{self.config.workers} workers, beat")

    def seed(self) -> None:
        recorder = Recorder(10**9)
        actors = Actors(self.model, self.tenants, self.port, recorder, self.rng)
        client = Http(self.port)
        for tenant in self.tenants:
            for i in range(self.config.documents):
                default = ["public", "internal", "confidential"][i % 3]
                actors.upload(client, tenant.editors[0], self.model.new_doc(tenant.slug, default=default))
        client.close()
        recorder.judge_all(self.model)
        took = settle(self.slugs, self.config.settle_seconds)
        self.log(f"seeded {self.config.documents} documents per tenant in {took}s; "
                 f"problems {dict(recorder.problems)}, leaks {len(recorder.leaks)}")

    @property
    def slugs(self) -> list[str]:
        return [t.slug for t in self.tenants]

    # ------------------------------------------------------------------ one scenario

    def scenario(self, name: str) -> dict:
        spec = SCENARIOS[name]
        config = self.config
        recorder = Recorder(config.max_requests)
        ctx = Context(self.cluster, self.model, self.tenants, recorder, self.log, self.port, config.down_seconds)
        disk = None
        ctx.events["sync_files"] = config.sync_files
        if name == "disk-full":
            why = DiskFull.feasible()
            if why:
                return {"name": name, "what": spec.what, "skipped": why}
            disk = ctx.events["disk"] = DiskFull(ctx)
            disk.prepare()
        self.log(f"scenario {name}: {spec.what}")
        failed_before = db_retry(lambda: failed_documents(self.slugs))
        actors = Actors(self.model, self.tenants, self.port, recorder, self.rng)
        actors.think = config.reader_think
        started, started_wall = now(), time.time()
        actors.start(readers=config.readers, editors=config.editors)
        health: dict = {}
        health_thread = threading.Thread(target=lambda: health.update(poll_healthz(self.port, recorder.stop)),
                                         daemon=True)
        health_thread.start()
        fault: dict = {}
        during: dict = {}
        during_thread = None
        if spec.during is not None:
            during_thread = threading.Thread(target=lambda: during.update(spec.during(ctx)), daemon=True)
            during_thread.start()
        try:
            if spec.fault is not None:
                recorder.stop.wait(config.seconds * config.fault_at)
                if not recorder.stop.is_set():
                    fault = spec.fault(ctx)
            remaining = config.seconds - (now() - started)
            if remaining > 0:
                recorder.stop.wait(remaining)
        finally:
            actors.join()
            health_thread.join(30)
            if during_thread is not None:
                during_thread.join(180)
            if disk is not None:
                disk.cleanup()
        fault = {**fault, **during}
        recorder.judge_all(self.model)
        seconds = now() - started
        fault.pop("returned_at", None)
        self.replace_dead_workers()
        settled = settle(self.slugs, config.settle_seconds)
        if spec.during is costly_document_attacker:
            fault["outcome"] = db_retry(lambda: costly_document_outcome(fault))
        invariants = db_retry(lambda: check_invariants(self.model, self.slugs))
        invariants["deleted documents found by search"] = deleted_search_probe(
            self.model, self.tenants, self.port, recorder)
        # A document of this scenario that ended failed is a lost document (its bytes were fine), unless
        # it is the poison, which must fail.
        expected = set(fault.get("expected_failures", ())) | {fault.get("document_id")}
        invariants["documents failed by the fault"] = [
            {"id": pk, "error": error[:200]}
            for pk, error in db_retry(lambda: failed_documents(self.slugs)).items()
            if pk not in failed_before and pk not in expected
        ]
        fault.pop("expected_failures", None)
        if settled is None:
            fault["unfinished_after_settle"] = db_retry(lambda: unfinished_detail(self.slugs))
        result = {"name": name, "what": spec.what, "fault": fault, "settle_s": settled, "load": summarize(recorder, seconds),
                  "invariants": invariants, "loadavg": os.getloadavg(), "healthz": health,
                  "tenants": db_retry(lambda: tenant_measures(recorder, self.model, self.slugs, started_wall))}
        if name == "costly-document":
            result["versus_steady"] = versus_steady(result, self.steady, self.slugs[1])
        result["verdict"] = verdict(result)
        if name == FAULT_FREE:
            self.steady = result
        self.log(f"  -> {result['verdict']}: {result['load']['requests']} requests, "
                 f"leaks {result['load']['leaks']}, 500s {result['load']['status_500']}, settle {settled}s")
        return result

    def replace_dead_workers(self) -> None:
        for name in self.cluster.worker_names():
            managed = self.cluster.processes[name]
            if managed.process.poll() is not None:
                queues = self.cluster.queues.get(name)
                self.cluster.wait_exit(name, 1)
                self.cluster.queues[self.cluster.start_worker(queues, wait=False)] = queues
        if "beat" in self.cluster.processes and self.cluster.processes["beat"].process.poll() is not None:
            self.cluster.start_beat()

    # ------------------------------------------------------------------ scale-out

    def scale_out(self) -> dict:
        from accounts.services import api_token_create, membership_create, tenant_create
        from kb.models import Chunk, Document

        config = self.config
        ingest = {}
        for count in (1, 2, 4):
            for name in self.cluster.worker_names():
                self.cluster.stop(name)
            names = [self.cluster.start_worker(None, wait=False) for _ in range(count)]
            for name in names:
                self.cluster.wait_worker(name)
            slug = f"ld-{self.run}-scale{count}"
            tenant = tenant_create(slug=slug, name=slug)
            member = membership_create(tenant=tenant, email=f"e@{slug}.example", role="editor", clearance="restricted")
            key = api_token_create(membership=member)[1]
            bodies = [{"title": f"Scale {i}", "content": _scale_document(i), "content_type": "text/markdown"}
                      for i in range(config.scale_documents)]
            started = now()
            _post_all(self.port, key, bodies)
            took = settle([slug], 600)
            chunks = Chunk.objects.filter(tenant=tenant).count()
            ready = Document.objects.filter(tenant=tenant, status="ready").count()
            seconds = now() - started
            ingest[count] = {"documents": ready, "chunks": chunks, "seconds": round(seconds, 1),
                             "chunks_per_s": round(chunks / seconds, 1), "settled": took is not None,
                             "loadavg": os.getloadavg()}
            self.log(f"  ingest with {count} workers: {ingest[count]}")
        for name in self.cluster.worker_names():
            self.cluster.stop(name)
        for i in range(config.workers):
            queues = "celery" if i == 0 and config.workers > 1 else None
            self.cluster.queues[self.cluster.start_worker(queues, wait=False)] = queues
        search = {}
        for count in (1, 2, 4):
            self.cluster.stop_web()
            self.port = self.cluster.start_web(count, config.web_threads)
            search[count] = self.search_throughput(count, config.scale_seconds)
            self.log(f"  search with {count} gunicorn workers: {search[count]}")
        self.cluster.stop_web()
        self.port = self.cluster.start_web(config.web_workers, config.web_threads)
        base_i, base_s = ingest[1]["chunks_per_s"], search[1]["rps"]
        return {
            "ingest": ingest, "search": search,
            "ingest_ratio": {k: round(v["chunks_per_s"] / base_i, 2) if base_i else None for k, v in ingest.items()},
            "search_ratio": {k: round(v["rps"] / base_s, 2) if base_s else None for k, v in search.items()},
        }

    def search_throughput(self, web_workers: int, seconds: float) -> dict:
        threads = 8
        recorder = Recorder(10**9)
        actors = Actors(self.model, self.tenants, self.port, recorder, random.Random(9))
        readers = [m for t in self.tenants for m in t.readers if not m.mutable]
        # Each gunicorn worker loads the model on its first search: warm them all first.
        warm = Recorder(10**9)
        warm_actors = Actors(self.model, self.tenants, self.port, warm, random.Random(8))
        _run_threads(lambda i: _searches(warm_actors, readers[i % len(readers)], 3 * web_workers, i), threads)
        stop = threading.Event()

        def loop(i: int) -> None:
            client, rng, member = Http(self.port), random.Random(i), readers[i % len(readers)]
            while not stop.is_set():
                actors.call(client, member, "search", "POST", "/api/v1/search/", actors.search_body(member, rng))
            client.close()

        pool = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(threads)]
        started = now()
        for thread in pool:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in pool:
            thread.join(60)
        elapsed = now() - started
        recorder.judge_all(self.model)
        warm.judge_all(self.model)
        ok = [s for s in recorder.samples if s.status == 200]
        ms = [1000 * (s.received - s.sent) for s in ok]
        return {"rps": round(len(ok) / elapsed, 1), "requests": len(recorder.samples), "ok": len(ok),
                "p50_ms": _round(percentile(ms, 0.5)), "p95_ms": _round(percentile(ms, 0.95)),
                "leaks": len(recorder.leaks), "loadavg": os.getloadavg()}

    # ------------------------------------------------------------------ the whole run

    def run_all(self) -> dict:
        config = self.config
        report: dict = {"run": self.run, "config": {k: v for k, v in vars(config).items()},
                        "harness_env": HARNESS_ENV, "machine": machine(), "scenarios": []}
        started = now()
        try:
            self.start()
            self.seed()
            report["idle_search"] = idle_search_latency(self.model, self.tenants, self.port, config.idle_searches)
            self.log(f"idle search: {report['idle_search']}")
            report["warm_up"] = warm_web(self.model, self.tenants, self.port, config.web_workers * config.web_threads)
            self.log(f"warm-up: {report['warm_up']}")
            for name in config.scenarios:
                report["scenarios"].append(self.scenario(name))
            if config.scale:
                self.log("scale-out")
                report["scale_out"] = self.scale_out()
        finally:
            self.cluster.stop_all()
            if not config.keep_services:
                embedded_services.stop_postgres()
                embedded_services.stop_redis()
        report["seconds"] = round(now() - started, 1)
        # A 500 the load did not see (a readiness probe, the scale-out's warm-up) still counts.
        report["internal_errors_logged"] = internal_errors_logged(self.run_dir)
        report["totals"] = totals(report)
        steady = next((s for s in report["scenarios"] if s["name"] == FAULT_FREE and "load" in s), None)
        idle_p95 = (report.get("idle_search") or {}).get("p95_ms")
        if steady and idle_p95 and "search" in steady["load"]["ops"]:
            loaded = steady["load"]["ops"]["search"]["p95_ms"]
            report["search_p95_under_load_vs_idle"] = {"idle_ms": idle_p95, "steady_ms": loaded,
                                                       "ratio": round(loaded / idle_p95, 2)}
        return report


def _scale_document(i: int) -> str:
    rng = random.Random(1000 + i)
    parts = [f"# Scale document {i}", ""]
    for s in range(6):
        parts += [f"## Part {s}", ""] + [" ".join(rng.choice(VOCABULARY) for _ in range(60)) + "." for _ in range(4)]
    return "\n\n".join(parts)


def _post_all(port: int, key: str, bodies: list[dict]) -> None:
    def post(i: int) -> None:
        client = Http(port)
        for body in bodies[i::4]:
            client.request("POST", "/api/v1/documents/", key, body)
        client.close()

    _run_threads(post, 4)


def _searches(actors: Actors, member: MemberRecord, n: int, seed: int) -> None:
    client, rng = Http(actors.port), random.Random(seed)
    for _ in range(n):
        actors.call(client, member, "search", "POST", "/api/v1/search/", actors.search_body(member, rng))
    client.close()


def _run_threads(target: Callable[[int], None], n: int) -> None:
    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)


COSTLY_FACTOR = 2.0  # the other tenant's p95s under the costly-document attack, at most this times steady's
COSTLY_MIN_SAMPLES = 10  # fewer small uploads (or searches) than this in either scenario: no comparison


def versus_steady(result: dict, steady: dict | None, other: str) -> dict:
    """The other tenant's search p95 and small-upload-ready p95 under the attack against ``steady``'s."""
    if steady is None:
        return {"steady": None}
    now_, then = result["tenants"].get(other, {}), steady["tenants"].get(other, {})
    out = {"tenant": other, "factor_allowed": COSTLY_FACTOR}
    for key, count in (("search_p95_ms", "search_n"), ("upload_ready_p95_ms", "uploads_n")):
        ratio = round(now_[key] / then[key], 2) if now_.get(key) and then.get(key) else None
        out[key] = {"steady": then.get(key), "costly": now_.get(key), "ratio": ratio,
                    "n": [then.get(count, 0), now_.get(count, 0)]}
    return out


def verdict(result: dict) -> str:
    """PASS when nothing leaked, no answer was a 500 or malformed, nothing is stuck or inconsistent,
    and the fault's own check held."""
    load, invariants, fault = result["load"], result["invariants"], result.get("fault") or {}
    failures = []
    if result["name"] == "costly-document":
        failures += _costly_failures(result)
    if load["leaks"]:
        failures.append("leaks")
    if load["stale_authority"]:
        failures.append("stale authority")
    if load["problems"]:
        failures.append("bad answers: " + ", ".join(sorted(load["problems"])))
    if result["settle_s"] is None:
        failures.append("did not settle")
    bad = {k: v for k, v in invariants["violations"].items() if v}
    if invariants.get("deleted documents found by search"):
        bad["deleted documents found by search"] = invariants["deleted documents found by search"]
    if invariants.get("documents failed by the fault"):
        bad["documents failed by the fault"] = invariants["documents failed by the fault"]
    if bad:
        failures.append("invariants: " + ", ".join(sorted(bad)))
    if fault and not fault.get("injected", True):
        failures.append("fault not injected: " + fault.get("why", ""))
    elif result["name"] == "sync":
        failures += sync_failures(fault)
    for key in ("job_status",):
        if key in fault and result["name"] != "poison" and fault[key] != "succeeded":
            failures.append(f"the faulted job ended {fault[key]}")
    if result["name"] == "poison":
        if fault.get("job_status") != "failed" or "gave up" not in fault.get("error", ""):
            failures.append(f"the poison job ended {fault.get('job_status')}: {fault.get('error')!r}")
        if not fault.get("other_tenant_jobs_succeeded_meanwhile"):
            failures.append("no job of the other tenant finished meanwhile")
        if any(n["status"] != "succeeded" for n in fault.get("batch_neighbours", [])):
            failures.append(f"the poison's batch neighbours ended {[n['status'] for n in fault['batch_neighbours']]}")
    recovery = fault.get("first_success_after_return_s") or {}
    if recovery and (recovery.get("search") is None or recovery["search"] > 30):
        failures.append(f"search not recovered within 30 s ({recovery.get('search')})")
    return "PASS" if not failures else "FAIL: " + "; ".join(failures)


def _costly_failures(result: dict) -> list[str]:
    """The costly-document scenario's own verdict: the other tenant within 2x of steady, no 5xx at all,
    /healthz green throughout, and the attacker's documents refused or moved as the budgets say."""
    failures = []
    against = result.get("versus_steady") or {}
    if against.get("steady", True) is None:
        failures.append("no steady scenario before it in this run to compare with")
    for key in ("search_p95_ms", "upload_ready_p95_ms"):
        measured = against.get(key) or {}
        if against.get("steady", True) is None:
            continue
        if min(measured.get("n") or [0]) < COSTLY_MIN_SAMPLES:
            failures.append(f"too few samples to compare the other tenant's {key} (steady, costly: {measured.get('n')})")
        elif measured.get("ratio") is None or measured["ratio"] > COSTLY_FACTOR:
            failures.append(f"the other tenant's {key} is {measured.get('ratio')}x steady's")
    fives = {k: v for k, v in result["load"]["statuses"].items() if int(k) >= 500}
    if fives:
        failures.append(f"5xx answers {fives}")
    health = result.get("healthz") or {}
    if not health.get("polls") or health.get("not_200"):
        failures.append(f"/healthz not green throughout ({health.get('statuses')})")
    fault = result.get("fault") or {}
    if fault.get("unexpected"):
        failures.append(f"the attacker got unexpected answers ({len(fault['unexpected'])})")
    outcome = fault.get("outcome") or {}
    attack, bulk = outcome.get("attack_uploads") or {}, outcome.get("bulk_uploads") or {}
    if attack.get("failed_with_numbers") != attack.get("n"):
        failures.append(f"attack uploads not failed with their numbers: {attack}")
    if bulk.get("n") and (bulk.get("succeeded") != bulk["n"] or bulk.get("moved_to_bulk") != bulk["n"]):
        failures.append(f"costly uploads not moved to the bulk lane and read there: {bulk}")
    return failures


def internal_errors_logged(run_dir: Path) -> int:
    """How many requests the web processes logged as 500 (Django's "Internal Server Error")."""
    return sum(path.read_text(errors="replace").count("Internal Server Error") for path in run_dir.glob("web*.log"))


def totals(report: dict) -> dict:
    scenarios = [s for s in report["scenarios"] if "load" in s]
    return {
        "internal_errors_logged": report.get("internal_errors_logged", 0),
        "requests": sum(s["load"]["requests"] for s in scenarios),
        "leaks": sum(s["load"]["leaks"] for s in scenarios) + report.get("idle_search", {}).get("leaks", 0),
        "status_500": sum(s["load"]["status_500"] for s in scenarios),
        "stale_authority": sum(s["load"]["stale_authority"] for s in scenarios),
        "passed": sum(s.get("verdict") == "PASS" for s in scenarios),
        "failed": [s["name"] for s in scenarios if s.get("verdict") != "PASS"],
        "skipped": [s["name"] for s in report["scenarios"] if "skipped" in s],
    }


def machine() -> dict:
    return {"cpus": os.cpu_count(), "loadavg_at_start": os.getloadavg(), "python": sys.version.split()[0],
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def format_report(report: dict) -> str:
    lines = [f"run {report['run']} on {report['machine']}", f"harness env: {report['harness_env']}"]
    idle = report.get("idle_search") or {}
    lines.append(f"idle search: n={idle.get('n')} p50={idle.get('p50_ms')} ms p95={idle.get('p95_ms')} ms")
    for s in report["scenarios"]:
        if "skipped" in s:
            lines.append(f"\n== {s['name']}: SKIPPED ({s['skipped']})")
            continue
        load = s["load"]
        lines.append(f"\n== {s['name']} ({s['what']}): {s['verdict']}")
        lines.append(f"   {load['requests']} requests in {load['seconds']} s = {load['throughput_rps']}/s; "
                     f"errors by status {load['errors_by_status']}; leaks {load['leaks']} "
                     f"(allowed canaries seen {load['canaries_seen']}); "
                     f"stale authority {load['stale_authority']}; settle {s['settle_s']} s; "
                     f"load average {tuple(round(x, 1) for x in s['loadavg'])}")
        if s.get("fault"):
            lines.append(f"   fault: {s['fault']}")
        if load["problems"]:
            lines.append(f"   problems: {load['problems']}")
        for op, stats in load["ops"].items():
            lines.append(f"   {op:>15}: n={stats['n']:>5} p50={stats['p50_ms']} p95={stats['p95_ms']} "
                         f"p99={stats['p99_ms']} ms  {stats['statuses']}")
        if s.get("healthz"):
            lines.append(f"   /healthz: {s['healthz'].get('polls')} polls, {s['healthz'].get('statuses')}")
        for slug, measures in (s.get("tenants") or {}).items():
            lines.append(f"   tenant {slug}: search p95 {measures['search_p95_ms']} ms (n={measures['search_n']}), "
                         f"small upload ready p50/p95 {measures['upload_ready_p50_ms']}/"
                         f"{measures['upload_ready_p95_ms']} ms (n={measures['uploads_n']})")
        if s.get("versus_steady"):
            lines.append(f"   versus steady: {s['versus_steady']}")
        bad = {k: v for k, v in s["invariants"]["violations"].items() if v}
        lines.append(f"   invariants: {'all hold' if not bad else bad}; documents {s['invariants']['documents']} "
                     f"(ready {s['invariants']['ready']}, failed {s['invariants']['failed']})")
        for leak in load["leak_examples"][:3]:
            lines.append(f"   leak: {leak}")
    if "scale_out" in report:
        scale = report["scale_out"]
        lines.append(f"\nscale-out: ingest chunks/s ratio {scale['ingest_ratio']}, search req/s ratio "
                     f"{scale['search_ratio']}")
    if "search_p95_under_load_vs_idle" in report:
        lines.append(f"search p95 under the steady mixed load vs idle: {report['search_p95_under_load_vs_idle']}")
    lines.append(f"\ntotals: {report['totals']} in {report['seconds']} s")
    return "\n".join(lines)
