"""Per-document budgets (ingestion/limits.py): real hogs, real busy loops, real bombs in a real child process.

No wall-time assertions: a budget either ends the child with ResourceLimitExceeded
(the message says which limit) or the result comes back.
"""

from __future__ import annotations

import io
import os
import random
import signal
import zipfile

import pytest

from ingestion import limits
from ingestion.chunking import ChunkingConfig, chunk_document
from ingestion.limits import ResourceLimitExceeded, run_limited
from ingestion.parsers import parse
from ingestion.structure import ParseError
from tests.bounds import START_WAIT
from tests.ingestion import limits_helpers as helpers
from tests.ingestion.limits_helpers import docx_with_body

MB = 1024 * 1024
GB = 1024 * MB


@pytest.fixture(scope="module")
def baseline() -> int:
    """The child's address space before it does anything (interpreter, parsers, tokenizer)."""
    return run_limited(helpers.address_space_bytes, memory_bytes=2 * GB, seconds=60)


def test_the_result_comes_back():
    assert run_limited(helpers.add, 2, 3, times=4, memory_bytes=GB, seconds=30) == 20


def test_the_child_is_not_a_fork_of_the_caller():
    # The worker has torch (and Django) loaded, possibly with threads: the child is forked
    # from the parse server, which never imported either.
    assert run_limited(helpers.parent_pid, memory_bytes=GB, seconds=30) != os.getpid()
    import django  # noqa: F401 - loaded here (pytest-django), never in the child

    assert not run_limited(helpers.loaded, "django", memory_bytes=GB, seconds=30)
    assert not run_limited(helpers.loaded, "torch", memory_bytes=GB, seconds=30)


def test_a_large_result_and_a_chatty_child_come_back_intact():
    # The result comes back in pieces (1 MB each); what the child prints never mixes in.
    data = run_limited(helpers.big_result, 5 * MB + 256, memory_bytes=GB, seconds=60)
    assert data == bytes(range(256)) * (5 * MB // 256 + 1)
    assert run_limited(helpers.noisy, 7, memory_bytes=GB, seconds=30) == 7
    assert run_limited(helpers.add, 1, 1, memory_bytes=GB, seconds=30) == 2


def test_parse_errors_and_value_errors_are_raised_again():
    with pytest.raises(ParseError) as info:
        run_limited(helpers.raise_parse_error, memory_bytes=GB, seconds=30)
    assert info.value.line == 7 and info.value.message == "bad marker"
    assert not isinstance(info.value, ResourceLimitExceeded)
    with pytest.raises(ValueError, match="not a number") as value_info:
        run_limited(helpers.raise_value_error, memory_bytes=GB, seconds=30)
    assert any("raise_value_error" in note for note in value_info.value.__notes__)


def test_a_memory_hog_is_stopped_at_the_memory_limit(baseline):
    limit = baseline + 256 * MB
    with pytest.raises(ResourceLimitExceeded, match=rf"exceeded the parse memory limit of {limit / MB:g} MB"):
        run_limited(helpers.hog_memory, memory_bytes=limit, seconds=60)
    # The server lives on: the next document is parsed as usual.
    assert run_limited(helpers.add, 1, 1, memory_bytes=GB, seconds=30) == 2


def test_a_busy_loop_is_stopped_at_the_time_limit():
    with pytest.raises(ResourceLimitExceeded, match="exceeded the chunking time limit of 1.5 s"):
        run_limited(helpers.busy_loop, memory_bytes=GB, seconds=1.5, label="chunking")
    assert run_limited(helpers.add, 1, 2, memory_bytes=GB, seconds=30) == 3


def test_the_cpu_limit_reads_as_the_time_limit():
    with pytest.raises(ResourceLimitExceeded, match="time limit of 60 s"):
        run_limited(helpers.busy_loop_under_cpu_limit, 1, memory_bytes=GB, seconds=60)


def test_a_killed_child_is_reported_not_raised_as_a_crash():
    with pytest.raises(ResourceLimitExceeded, match="memory limit") as info:
        run_limited(helpers.kill_self, memory_bytes=GB, seconds=30)
    assert "signal 9 (SIGKILL)" in info.value.__notes__[0]


def test_a_dead_server_is_replaced():
    server = limits._server()
    server.ensure_running()
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(10)
    assert run_limited(helpers.add, 2, 2, memory_bytes=GB, seconds=30) == 4


def test_yaml_alias_bomb_in_front_matter(baseline):
    # The Markdown parser refuses aliases outright (its own check), also inside the child ...
    source = "---\n" + helpers.laughs(9) + "---\n# Doc\n"
    with pytest.raises(ParseError, match="aliases are not allowed") as info:
        limits.parse_limited(source.encode(), filename="bomb.md", memory_bytes=2 * GB, seconds=60)
    assert not isinstance(info.value, ResourceLimitExceeded)
    # ... and a reader without that check (9^8 strings once serialised) is stopped by the budget.
    with pytest.raises(ResourceLimitExceeded, match="memory limit"):
        run_limited(helpers.naive_front_matter, helpers.laughs(8), memory_bytes=baseline + 256 * MB, seconds=120)


def _inflating_docx(paragraphs: int) -> bytes:
    """A real DOCX whose document.xml inflates over 10x: ``paragraphs`` paragraphs of random words."""
    rnd = random.Random(16)
    vocabulary = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))) for _ in range(150)]
    # Run properties as Word writes them: the markup is what compresses.
    run = '<w:r><w:rPr><w:rFonts w:ascii="Calibri" w:hAnsi="Calibri"/><w:sz w:val="22"/><w:szCs w:val="22"/></w:rPr>'
    return docx_with_body("".join(
        '<w:p><w:pPr><w:spacing w:after="160" w:line="259" w:lineRule="auto"/></w:pPr>' + run
        + '<w:t xml:space="preserve">' + " ".join(rnd.choice(vocabulary) for _ in range(rnd.randint(5, 20)))
        + "</w:t></w:r></w:p>"
        for _ in range(paragraphs)
    ))


def test_a_docx_that_inflates_big_is_stopped_by_the_budget(baseline):
    data = _inflating_docx(90_000)  # ~2 MB zipped, ~25 MB of XML: within every DOCX limit
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("word/document.xml")
    assert info.file_size > 10 * info.compress_size and info.file_size > 20 * MB
    with pytest.raises(ResourceLimitExceeded, match="parse memory limit"):
        limits.parse_limited(data, filename="big.docx", memory_bytes=baseline + 160 * MB, seconds=120)


def test_parse_and_chunk_steps_give_what_the_in_process_calls_give():
    raw = b"---\ntitle: Refunds\n---\n# Billing\n\nInvoices go out monthly.\n\n## Refunds\n\nAsk within 30 days.\n"
    expected = parse(raw, filename="a.md")
    parsed = limits.parse_limited(raw, filename="a.md", memory_bytes=GB, seconds=30)
    assert parsed == expected
    config = ChunkingConfig(target_tokens=100, max_tokens=128)
    assert limits.chunk_limited(parsed, config, memory_bytes=GB, seconds=30) == chunk_document(expected, config)
    both = limits.parse_and_chunk(raw, filename="a.md", config=config, memory_bytes=GB, seconds=30)
    assert both == (expected, chunk_document(expected, config))
    with pytest.raises(ValueError, match="semantic splitting"):
        limits.parse_and_chunk(raw, config=ChunkingConfig(semantic_split=True), memory_bytes=GB, seconds=30)


def test_semantic_chunking_stays_in_the_worker_with_its_model():
    import numpy as np

    text = " ".join(f"Sentence {i} is about {'cats' if i < 20 else 'stocks'} and more." for i in range(40))
    parsed = parse(text.encode(), filename="a.txt")
    config = ChunkingConfig(semantic_split=True, target_tokens=100, max_tokens=128)
    calls = []

    def embed(texts):  # a closure over the model: it could not be sent to a child
        calls.append(len(texts))
        vectors = np.array([[1.0, 0.0] if "cats" in t else [0.0, 1.0] for t in texts])
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    chunks = limits.chunk_limited(parsed, config, embed=embed, memory_bytes=GB, seconds=30)
    assert calls and chunks == chunk_document(parsed, config, embed=embed)


def test_calls_from_several_threads_run_side_by_side(tmp_path):
    # Found by an attack on the demo: the process's one parse server took one call at a time and held
    # its lock for the whole child run, so one tenant's costly preview held every other preview of that
    # web process for the parse limit. Now each call has its own socket: while one child waits, another
    # call of the same process comes back. (Before: the second call waited for the first child's
    # deadline, and came back after the first thread had already ended with the time limit.)
    import threading

    flag = tmp_path / "go"
    outcome = {}

    def slow() -> None:
        try:
            outcome["slow"] = run_limited(helpers.wait_for, str(flag), memory_bytes=GB, seconds=60)
        except Exception as exc:  # noqa: BLE001 - reported below
            outcome["slow"] = exc

    waiting = threading.Thread(target=slow)
    waiting.start()
    try:
        assert run_limited(helpers.add, 20, 22, memory_bytes=GB, seconds=60) == 42
        assert waiting.is_alive() and "slow" not in outcome, outcome
    finally:
        flag.touch()
        waiting.join(START_WAIT)
    assert outcome["slow"] == "done"


def test_the_pricing_reaches_the_child_and_its_refusal_comes_back_as_itself():
    from bench.costly_documents import repeated_page_pdf
    from ingestion import costs

    data = repeated_page_pdf(references=16)  # 2.2 MB of page content: a document may, the small lane may not
    with pytest.raises(costs.OverLaneBudget, match="16 page references to 1 page object"):
        limits.parse_limited(data, filename="a.pdf", memory_bytes=GB, seconds=60,
                             pricing=costs.Pricing(lane=costs.SMALL_LANE))
    with pytest.raises(costs.TooCostly, match="4,999 page references to 1 page object"):
        limits.parse_limited(repeated_page_pdf(), filename="a.pdf", memory_bytes=GB, seconds=60)


def test_chunk_counts_are_the_chunkings_counted_in_the_child():
    raw = b"# Billing\n\n" + b"Invoices go out monthly, with every line explained. " * 60 + b"\n\n## Refunds\n\nAsk.\n"
    parsed = parse(raw, filename="a.md")
    config = ChunkingConfig(target_tokens=100, max_tokens=128)
    counted = limits.chunk_counts_limited(parsed, config, memory_bytes=GB, seconds=30)
    chunks = chunk_document(parsed, config)
    assert counted.total == len(chunks) > 3
    assert counted.chunks == {key: sum(c.section_key == key for c in chunks) for key in {c.section_key for c in chunks}}
    from ingestion.chunking.tokens import default_counter

    assert counted.tokens[1] == default_counter().count("\n".join(parsed.text[b.start:b.end] for b in parsed.sections[1].blocks))


def test_a_child_can_run_below_the_servers_cpu_priority():
    # The bulk lane's parses yield the CPU to the small-upload lane's worker and the web server.
    base = run_limited(helpers.niceness, memory_bytes=GB, seconds=30)
    assert run_limited(helpers.niceness, memory_bytes=GB, seconds=30, nice=5) == min(base + 5, 19)
    assert run_limited(helpers.niceness, memory_bytes=GB, seconds=30) == base  # each child starts afresh


def test_the_server_outlives_the_thread_that_started_it():
    # CI (2026-12-05): a web server's request thread started the parse server, and the server asked
    # Linux for SIGKILL at its parent's end (PR_SET_PDEATHSIG) -- which comes when the starting *thread*
    # ends. So it died with every such request, and the next preview waited for a fresh one to import
    # its parsers and tokenizer (a console Ingest outlasted the page's wait on a loaded machine).
    import subprocess
    import threading

    limits.shutdown()
    started = threading.Thread(target=run_limited, args=(helpers.add, 1, 1), kwargs={"memory_bytes": GB,
                                                                                     "seconds": 30})
    started.start()
    started.join(START_WAIT)
    process = limits._server().process
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(2)  # a window: with the signal the server was gone within milliseconds
    assert run_limited(helpers.add, 2, 3, memory_bytes=GB, seconds=30) == 5
    assert limits._server().process is process  # the same server answered


def test_the_server_ends_with_its_caller_even_while_a_fork_of_the_caller_lives(tmp_path):
    # Without the thread-bound signal the server watches its caller's process itself: a Celery pool child
    # forked from the caller keeps the control socket open, so the socket's end alone would not tell it.
    import subprocess
    import sys

    import psutil

    script = tmp_path / "caller.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from ingestion import limits\n"
        "limits.run_limited(os.getpid, memory_bytes=1 << 30, seconds=60)  # the server is in its loop\n"
        "print(limits._server().process.pid, flush=True)\n"
        "if os.fork() == 0:\n"
        "    time.sleep(600)\n"
        "    os._exit(0)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    caller = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              cwd=os.getcwd(), env={**os.environ, "PYTHONPATH": os.getcwd()})
    server = psutil.Process(int(caller.stdout.readline()))
    caller.wait(START_WAIT)
    survivors = [p for p in psutil.process_iter() if p.pid != server.pid and _is_sleeping_fork(p, script)]
    assert survivors  # the fork that holds the control socket open
    try:
        server.wait(START_WAIT)  # psutil.TimeoutExpired when the server outlives its caller
    finally:
        for fork in survivors:
            fork.kill()


def _is_sleeping_fork(process, script) -> bool:
    import psutil

    try:
        return str(script) in " ".join(process.cmdline())
    except psutil.Error:
        return False


def test_a_child_whose_server_ended_before_it_asked_for_the_signal_ends_at_once():
    # The parse server forks a child, and the child asks Linux for SIGKILL at the server's end (PR_SET_PDEATHSIG).
    # A server that ended between the fork and that request sends no signal: the child, an orphan, went on to read
    # its request and parse under its limits alone. Here the server (a process standing for it) forks a child and
    # ends first; the child runs the parse child's code only once it is another process's child. It must end at
    # once, before it asks the caller for its request. The test's interpreter takes the orphan in
    # (PR_SET_CHILD_SUBREAPER), so it is reaped there whatever happens.
    import subprocess
    import sys

    from tests.bounds import JOB_WAIT

    code = (
        "import ctypes, os, select, signal, socket\n"
        "from ingestion import limits\n"
        "ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
        "ours, theirs = socket.socketpair()\n"
        "told_r, told_w = os.pipe()\n"
        "server = os.fork()\n"
        "if server == 0:\n"
        "    ours.close()\n"
        "    os.close(told_r)\n"
        "    server_pid = os.getpid()\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        os.close(told_w)\n"
        "        try:\n"
        "            select.select([os.pidfd_open(server_pid)], [], [])  # until the server has ended\n"
        "        except ProcessLookupError:\n"
        "            pass  # ended and reaped already\n"
        "        if os.getppid() == server_pid:\n"
        "            os._exit(97)\n"
        "        try:\n"
        "            limits._child(theirs, server_pid)\n"
        "        finally:\n"
        "            os._exit(98)  # _child never returns, nor raises\n"
        "    os.write(told_w, str(child).encode())\n"
        "    os._exit(0)\n"
        "theirs.close()\n"
        "os.close(told_w)\n"
        "child = int(os.read(told_r, 32))\n"
        "os.waitpid(server, 0)\n"
        f"said = ours.recv(64) if select.select([ours], [], [], {START_WAIT})[0] else None\n"
        "if said != b'':\n"
        "    os.kill(child, signal.SIGKILL)\n"
        "_, status = os.waitpid(child, 0)\n"
        "what = {b'': 'ENDED', None: 'STILL RUNNING'}.get(said, 'ASKED FOR ITS REQUEST')\n"
        "print('CHILD', what, os.waitstatus_to_exitcode(status))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=os.getcwd(), capture_output=True, text=True,
                         timeout=JOB_WAIT, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(line for line in run.stdout.splitlines() if line.startswith("CHILD"))
    assert line == f"CHILD ENDED {limits._SERVER_ENDED_FIRST}", line  # 97: never orphaned; 98: _child returned
