"""`make demo` started twice, and with its web server killed: nothing is left running.

One demo (``manage.py kb_demo``, as `make demo` runs it) on a data folder and a port of its own
(never 8000), with one small sample document. The embedded PostgreSQL and Redis are started first,
without the demo, so that every process carrying a demo run's mark (an environment variable its
children inherit) is one that demo started. No timed assertion: bounded polls.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.bounds import JOB_WAIT, START_WAIT

ROOT = Path(__file__).resolve().parent.parent
MARK = "BULKHEAD_TEST_DEMO_RUN"

pytestmark = pytest.mark.db  # it starts servers of its own: not for the unit tier


def _env(data: Path, port: int, run: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "BULKHEAD_OWNER_DATABASE_URL")}
    return env | {"BULKHEAD_DATA_DIR": str(data), "BULKHEAD_PORT": str(port), MARK: run}


def _processes_of(run: str) -> list[psutil.Process]:
    """Every live process carrying ``run``'s mark (zombies hold nothing and are not counted)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARK) == run and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


def _describe(processes: list[psutil.Process]) -> list[str]:
    described = []
    for process in processes:
        try:
            described.append(f"{process.pid} {' '.join(process.cmdline())[:120]}")
        except psutil.Error:
            described.append(str(process.pid))
    return described


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _servers(action: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "bulkhead.embedded_services", action], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=JOB_WAIT)
    if action == "start" and done.returncode != 0:  # say why, not only that it failed
        raise AssertionError(f"embedded_services start failed ({done.returncode}): {done.stderr[-2000:]}")


def _kb_demo(*args: str) -> list[str]:
    return [sys.executable, "manage.py", "kb_demo", "--web-workers", "1", "--web-threads", "2", *args]


class Demo:
    def __init__(self, process: subprocess.Popen, log: Path, env: dict[str, str]):
        self.process, self.log, self.env = process, log, env
        self.data, self.port, self.run = Path(env["BULKHEAD_DATA_DIR"]), int(env["BULKHEAD_PORT"]), env[MARK]

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def until(self, line: str, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while line not in self.output():
            assert self.process.poll() is None, f"the demo ended before printing {line!r}:\n{self.output()[-4000:]}"
            assert time.monotonic() < deadline, f"no {line!r} after {seconds} s:\n{self.output()[-4000:]}"
            time.sleep(0.5)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("demo")
    samples = base / "samples"
    samples.mkdir()
    (samples / "note.md").write_text("# On call\n\nPage the desk when an alert fires.\n")
    env = _env(base / "data", _free_port(), "first")
    _servers("start", {k: v for k, v in env.items() if k != MARK})
    log = base / "demo.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(_kb_demo("--samples", str(samples)), cwd=ROOT, env=env, stdout=handle,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    running = Demo(process, log, env)
    try:
        # Its web server and workers started (a fresh database: the migrations first); what the demo
        # holds -- the data folder, the port -- it holds from its first step.
        running.until("waiting for the web server and the workers", 2 * JOB_WAIT)
        yield running
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        for leftover in _processes_of("first"):  # only reached when the test has failed
            leftover.kill()
        _servers("stop", {k: v for k, v in env.items() if k != MARK})


def _refused(envs: dict[str, dict[str, str]]) -> dict[str, tuple[int, str, str]]:
    """Run ``kb_demo`` once per environment, all at once; each one's (status, stdout, stderr)."""
    started = {case: subprocess.Popen(_kb_demo(), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, start_new_session=True) for case, env in envs.items()}
    results = {}
    for case, process in started.items():
        try:
            out, err = process.communicate(timeout=JOB_WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
        results[case] = (process.returncode, out, err)
    return results


def test_a_second_demo_is_refused_in_one_line_and_leaves_nothing_running(demo, tmp_path):
    assert demo.process.poll() is None, "the first demo is not running (this test runs before the one that kills it)"
    gunicorn = {p.pid for p in _processes_of("first") if "gunicorn" in " ".join(p.cmdline())}
    assert gunicorn, _describe(_processes_of("first"))
    cases = {
        # `make demo` again in the same checkout, and again with another port.
        "same folder, same port": _env(demo.data, demo.port, "second"),
        "same folder, another port": _env(demo.data, _free_port(), "third"),
        # Another checkout's demo on the port this one serves: refused before any server starts.
        "another folder, same port": _env(tmp_path / "other", demo.port, "fourth"),
    }
    for case, (returncode, out, err) in _refused(cases).items():
        env = cases[case]
        assert returncode == 1, (case, out[-2000:], err[-2000:])
        assert out == "", (case, out[-2000:])
        (line,) = err.splitlines()
        if case.startswith("same folder"):
            assert line.startswith(
                f"Not started: a demo is already running on this data folder ({demo.data.resolve()}) as pid "
                f"{demo.process.pid}, serving http://127.0.0.1:{demo.port}/"
            ), (case, line)
            assert "`make stop`" in line, line
        else:
            assert line.startswith(f"Not started: port {demo.port} on 127.0.0.1 is in use by pid "), (case, line)
            # The master, or a worker it forked after the demo said it was waiting for them.
            holder = int(line.split(" by pid ")[1].split()[0])
            gunicorn |= {p.pid for p in _processes_of("first") if "gunicorn" in " ".join(p.cmdline())}
            assert holder in gunicorn, (line, gunicorn)
            assert "BULKHEAD_PORT=" in line, line
            assert not (tmp_path / "other" / "pg").exists() and not (tmp_path / "other" / "redis").exists()
        assert _describe(_processes_of(env[MARK])) == [], case
    assert demo.process.poll() is None, "the refused demos stopped the running one"


def test_killing_the_demos_web_server_ends_its_workers_and_the_demo(demo):
    demo.until("Ctrl-C stops", 2 * JOB_WAIT)  # ready: the workers loaded the model, the sample is ingested
    processes = _processes_of("first")
    (web,) = [p for p in processes if p.ppid() == demo.process.pid and "gunicorn" in " ".join(p.cmdline())]
    workers = [p for p in processes if "celery" in " ".join(p.cmdline())]
    assert workers, _describe(processes)
    web.kill()
    returncode = demo.process.wait(START_WAIT)  # the demo notices, stops the rest, and exits
    output = demo.output()
    assert returncode == 1, output[-4000:]
    assert "the web server (gunicorn) was killed by SIGKILL: stopped the demo's other processes" in output
    assert _describe(_processes_of("first")) == []
    # The embedded servers stay up for reuse.
    status = subprocess.run([sys.executable, "-m", "bulkhead.embedded_services", "status"], cwd=ROOT,
                            env={k: v for k, v in demo.env.items() if k != MARK}, capture_output=True, text=True,
                            timeout=START_WAIT)
    assert "postgres: running" in status.stdout and "redis:    running" in status.stdout, status.stdout
