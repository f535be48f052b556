"""Starting and stopping (bulkhead/launch.py): the pre-flight checks and the supervisor, with small
stand-in processes (no server, no database). The demo itself, started twice and with its web server
killed, is tests/test_demo_lifecycle.py.

No timed assertion: every wait is a bounded poll that fails with what it saw.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from bulkhead import launch
from tests.bounds import START_WAIT

ROOT = Path(__file__).resolve().parent.parent

# A stand-in server: it starts a helper of its own (in its process group, like a gunicorn worker or a
# Celery pool process), writes both pids to a file, and waits.
SERVER = textwrap.dedent("""
    import subprocess, sys, time
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(f"{__import__('os').getpid()} {helper.pid}")
    __import__('os').replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(600)
""")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _until(condition, what: str, seconds: float = START_WAIT):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"gave up waiting ({seconds:.0f} s) for {what}")


def _pids(path: Path) -> list[int]:
    _until(path.exists, f"the stand-in server to write {path}")
    return [int(pid) for pid in path.read_text().split()]


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("BULKHEAD_DATA_DIR", str(data))
    return data


# ----------------------------------------------------------------------------- pre-flight


def test_a_second_demo_on_the_data_folder_is_refused_naming_the_first(data_dir):
    first = launch.preflight("demo", launch.ROLES, command="make demo")
    try:
        with pytest.raises(launch.Refused) as refused:
            launch.preflight("demo", launch.ROLES, command="make demo")
        message = str(refused.value)
        assert f"a demo is already running on this data folder ({data_dir.resolve()}) as pid {os.getpid()}" in message
        assert "`make stop`" in message and "BULKHEAD_DATA_DIR" in message and "\n" not in message
        # make web and make worker are refused too: the demo runs both.
        for role in launch.ROLES:
            with pytest.raises(launch.Refused, match="a demo is already running"):
                launch.preflight(role, [role], command=f"make {role}")
    finally:
        first.release()
    launch.preflight("demo", launch.ROLES).release()  # once it ends, the folder is free again


def test_a_port_in_use_is_refused_naming_its_holder_and_nothing_is_held(data_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(launch.Refused) as refused:
            launch.preflight("web", ["web"], host="127.0.0.1", port=port, command="make web")
        message = str(refused.value)
        assert message.startswith(f"port {port} on 127.0.0.1 is in use by pid {os.getpid()} (")
        assert "BULKHEAD_PORT=" in message and "make web" in message and "\n" not in message
        # The refusal let go of the lock it had taken before the port check.
        launch.preflight("web", ["web"]).release()


def test_the_port_is_held_from_the_check_on(data_dir):
    held = launch.preflight("web", ["web"], host="127.0.0.1", port=0)
    try:
        port = held.listener.getsockname()[1]
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            with pytest.raises(OSError):
                other.bind(("127.0.0.1", port))
                other.listen()
    finally:
        held.release()


def test_a_host_that_is_not_this_machines_is_one_line(data_dir):
    with pytest.raises(launch.Refused, match=r"^cannot listen on 192\.0\.2\.1:8000: .*BULKHEAD_HOST"):
        launch.listen("192.0.2.1", 8000)  # TEST-NET-1: never a local address


def test_make_stop_stops_a_running_launcher_then_frees_the_folder(data_dir, tmp_path):
    script = (
        "import sys, time; from bulkhead import launch\n"
        "held = launch.preflight('worker', ['worker'], command='make worker')\n"
        "print('held', flush=True); time.sleep(600)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "held"
        assert launch.stop_running() == [f"the workers (`make worker`), pid {process.pid}: stopped"]
        assert process.wait(START_WAIT) == -signal.SIGTERM
        launch.preflight("worker", ["worker"]).release()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# ----------------------------------------------------------------------------- supervision


def test_when_one_process_exits_the_others_end_with_what_they_started(tmp_path):
    pids_file = tmp_path / "server.pids"
    with pytest.raises(launch.ChildExited) as exited, launch.Supervisor(stop_seconds=10) as supervisor:
        supervisor.start("the server", [sys.executable, "-c", SERVER, str(pids_file)])
        server, helper = _pids(pids_file)
        supervisor.start("the worker", [sys.executable, "-c", "raise SystemExit(3)"], log="worker.log")
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            supervisor.sleep(0.05)
    assert str(exited.value) == "the worker exited with status 3 (its log: worker.log)"
    assert not _alive(server) and not _alive(helper)


def test_an_error_during_start_up_ends_what_was_started(tmp_path):
    pids_file = tmp_path / "server.pids"
    with pytest.raises(RuntimeError, match="migrations failed"), launch.Supervisor(stop_seconds=10) as supervisor:
        supervisor.start("the server", [sys.executable, "-c", SERVER, str(pids_file)])
        pids = _pids(pids_file)
        raise RuntimeError("migrations failed")
    assert not any(_alive(pid) for pid in pids)


SUPERVISED = textwrap.dedent("""
    import sys
    from bulkhead import launch
    try:
        with launch.Supervisor(stop_seconds=10) as supervisor:
            supervisor.start("the server", [sys.executable, "-c", sys.argv[1], sys.argv[2]])
            supervisor.wait()
    except launch.Stopped as stopped:
        print("stopped by", stopped)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_supervisor_ends_everything(tmp_path, signum):
    pids_file = tmp_path / "server.pids"
    process = subprocess.Popen([sys.executable, "-c", SUPERVISED, SERVER, str(pids_file)], cwd=ROOT,
                               stdout=subprocess.PIPE, text=True)
    try:
        pids = _pids(pids_file)
        process.send_signal(signum)
        out, _ = process.communicate(timeout=START_WAIT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0 and out.strip() == f"stopped by {signal.Signals(signum).name}"
    assert not any(_alive(pid) for pid in pids)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_the_supervisor_killed_outright_still_ends_its_processes(tmp_path):
    pids_file = tmp_path / "server.pids"
    process = subprocess.Popen([sys.executable, "-c", SUPERVISED, SERVER, str(pids_file)], cwd=ROOT,
                               stdout=subprocess.DEVNULL)
    server, helper = _pids(pids_file)
    process.kill()
    process.wait()
    try:
        _until(lambda: not _alive(server), "the server to get its parent-death signal")
    finally:
        for pid in (server, helper):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_make_stop_signals_only_the_process_that_holds_the_lock(data_dir):
    """Whatever a lock file says, `make stop` signals the process that holds it open, no other."""
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    script = (
        "import fcntl, json, sys, time; from bulkhead import embedded_services\n"
        "f = open(embedded_services.data_dir() / 'web.lock', 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
        f"f.write(json.dumps({{'kind': 'demo', 'pid': {bystander.pid}}})); f.flush()\n"
        "print('held', flush=True); time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (said,) = launch.stop_running(seconds=1)
        assert said.endswith(f"not by pid {bystander.pid}, which it names: not stopping anything"), said
        assert bystander.poll() is None and holder.poll() is None
    finally:
        for process in (bystander, holder):
            process.kill()
            process.wait()


SETTINGS = textwrap.dedent("""
    import importlib, json, os, sys
    import bulkhead.settings
    out = {}
    for name, env in json.loads(sys.argv[1]).items():
        for key in ("BULKHEAD_HOST", "BULKHEAD_PORT", "ALLOWED_HOSTS"):
            os.environ.pop(key, None)
        os.environ.update(env)
        try:
            s = importlib.reload(bulkhead.settings)
            out[name] = [s.BULKHEAD_HOST, s.BULKHEAD_PORT, s.ALLOWED_HOSTS]
        except Exception as exc:
            out[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(out))
""")


def test_the_host_and_port_settings():
    import json

    cases = {
        "default": {},
        "a port": {"BULKHEAD_PORT": "8123"},
        "every interface": {"BULKHEAD_HOST": "0.0.0.0"},
        "one address": {"BULKHEAD_HOST": "10.1.2.3"},
        "IPv6": {"BULKHEAD_HOST": "::1"},
        "hosts set": {"BULKHEAD_HOST": "10.1.2.3", "ALLOWED_HOSTS": "kb.example"},
        "not a port": {"BULKHEAD_PORT": "80a"},
        "out of range": {"BULKHEAD_PORT": "70000"},
    }
    result = subprocess.run([sys.executable, "-c", SETTINGS, json.dumps(cases)], cwd=ROOT, capture_output=True,
                            text=True, timeout=START_WAIT)
    assert result.returncode == 0, result.stderr
    loopback = ["127.0.0.1", "localhost", "testserver"]
    assert json.loads(result.stdout) == {
        "default": ["127.0.0.1", 8000, loopback],
        "a port": ["127.0.0.1", 8123, loopback],
        # A wildcard names no host: requests by another name still answer 400 until ALLOWED_HOSTS names it.
        "every interface": ["0.0.0.0", 8000, loopback],
        "one address": ["10.1.2.3", 8000, [*loopback, "10.1.2.3"]],  # the banner's URLs answer
        "IPv6": ["::1", 8000, [*loopback, "[::1]"]],
        "hosts set": ["10.1.2.3", 8000, ["kb.example"]],
        "not a port": "ImproperlyConfigured: BULKHEAD_PORT must be a TCP port number (1-65535), got '80a'",
        "out of range": "ImproperlyConfigured: BULKHEAD_PORT must be a TCP port number (1-65535), got '70000'",
    }
