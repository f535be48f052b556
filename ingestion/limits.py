"""Per-document resource budgets: parsing and chunking run in a child process with a memory and a time ceiling.

No input may take a worker down: a zip bomb, a YAML alias bomb or a pathological
nesting that the parsers' own limits miss ends as :class:`ResourceLimitExceeded`
(a :class:`~ingestion.structure.ParseError`, so the pipeline fails the job with its
message) instead of an out-of-memory kill of the worker or an hour of CPU.

How (pure Python, no Django imports):

* A small **parse server** is started once per calling process
  (``python -c "...limits import _serve"``, a fresh interpreter: it never loads torch
  nor starts threads).  It imports the parsers, the chunker and the tokenizer once,
  then, for each call, ``fork``\\ s a child.  Forking the worker itself is not safe
  (torch's thread pools: a child can inherit a held lock and hang); forking this
  single-threaded server is, and costs a few milliseconds (measured in
  docs/benchmarks.md, "Fairness and parse budgets").
* Each call has a **socket of its own** (passed to the server over a control socket), so
  calls from several threads of one process (the web server's, previewing uploads of
  different tenants) run side by side; no lock is held while a child runs.
* The child sets ``RLIMIT_AS`` (address space: ``memory_bytes``) and ``RLIMIT_CPU``
  (``seconds`` + 1, a backstop), runs the function and sends back its pickled result
  or exception.  The caller waits at most ``seconds`` of wall-clock time, then kills it.
* ``MemoryError`` in the child, a child killed by a signal, or the deadline give
  :class:`ResourceLimitExceeded` with a plain message (``document exceeded the parse
  memory limit of 2048 MB`` / ``... the parse time limit of 120 s``: :class:`OverTimeLimit`).
  Any other exception of the function (``ParseError``, ``ValueError``, a bug) is raised again
  in the caller, the child's traceback attached as a note.
* A parse is also **priced** (:mod:`ingestion.costs`): :func:`parse_limited` takes the
  budgets the parsers charge their costs against (the document's, and the small-upload
  lane's or the preview's), so a costly input is refused with its numbers before its work.

The budgets are arguments here; the pipeline takes them from the settings
``BULKHEAD_PARSE_MEMORY_MB``, ``BULKHEAD_PARSE_SECONDS`` (and ``BULKHEAD_PARSE_SECONDS_SMALL`` on
the small-upload lane), the preview from ``BULKHEAD_PREVIEW_SECONDS``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
import pickle
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ingestion import costs
from ingestion.structure import ParsedDocument, ParseError

DEFAULT_MEMORY_BYTES = 2048 * 1024 * 1024
DEFAULT_SECONDS = 120.0
# Modules the server imports before it forks, so no child pays for them.
PRELOAD = (
    "ingestion.parsers",
    "ingestion.chunking",
    "docx",
    "docx.table",
    "docx.text.paragraph",
    "pypdf",
    "bs4",
)
# How long the server may take to answer a request (the child's work not included).
_SERVER_REPLY_SECONDS = 60.0
_HEADER = struct.Struct(">Q")
# Replies of the server: the child's pid, pieces of its pickled result, its wait status.
_PID, _DATA, _STATUS = b"P", b"D", b"S"
_PROTOCOL = pickle.HIGHEST_PROTOCOL


class ResourceLimitExceeded(ParseError):
    """A document needed more memory or time than its budget allows."""


class OverTimeLimit(ResourceLimitExceeded):
    """A document needed more time than its budget allows (a longer budget elsewhere may do)."""


# ----------------------------------------------------------------------------- the public calls


def run_limited(
    fn: Callable[..., Any], /, *args: Any, memory_bytes: int, seconds: float, label: str = "parse", nice: int = 0,
    **kwargs: Any
) -> Any:
    """``fn(*args, **kwargs)`` in a child process with an address-space and a time limit.

    ``fn``, its arguments and its result must pickle (``fn`` by reference: a module-level
    function).  Raises :class:`ResourceLimitExceeded` (``label`` names the step in its
    message) when the child runs out of memory, is killed, or outlives ``seconds``;
    re-raises whatever else ``fn`` raised. ``nice``: the child lowers its CPU priority by this
    much more than the server's (the bulk lane's parses yield to the small-upload lane's).
    """
    if memory_bytes <= 0 or seconds <= 0:
        raise ValueError("memory_bytes and seconds must be positive")
    payload = pickle.dumps((fn, args, kwargs), protocol=_PROTOCOL)
    request = pickle.dumps((memory_bytes, seconds, max(int(nice), 0), payload), protocol=_PROTOCOL)
    status, data, timed_out = _server().call(request, seconds)
    memory_mb = memory_bytes / (1024 * 1024)
    over_memory = ResourceLimitExceeded(f"document exceeded the {label} memory limit of {memory_mb:g} MB")
    over_time = OverTimeLimit(f"document exceeded the {label} time limit of {seconds:g} s")
    if timed_out:
        raise over_time
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            raise over_time
        # Killed (by the kernel's OOM killer, or a C library aborting on a failed
        # allocation): with the address space capped, memory is the likely cause.
        over_memory.add_note(f"the {label} process ended with signal {number} ({_signal_name(number)})")
        raise over_memory
    if not data:
        raise ResourceLimitExceeded(f"the {label} process ended without a result (exit status {status})")
    kind, *rest = pickle.loads(data)
    if kind == "ok":
        return rest[0]
    if kind == "memory":
        raise over_memory
    if kind == "parse_error":
        cls, message, line = rest
        raise cls(message, line=line)
    exc, child_traceback = rest
    exc.add_note(f"raised in the {label} process:\n{child_traceback}")
    raise exc


def parse_limited(
    raw: bytes,
    *,
    content_type: str | None = None,
    filename: str | None = None,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    seconds: float = DEFAULT_SECONDS,
    pricing: costs.Pricing | None = None,
    nice: int = 0,
) -> ParsedDocument:
    """:func:`ingestion.parsers.parse` under a budget, priced against ``pricing`` (default: a document's)."""
    return run_limited(
        _parse, raw, content_type, filename, pricing, memory_bytes=memory_bytes, seconds=seconds, label="parse",
        nice=nice,
    )


def chunk_limited(
    parsed: ParsedDocument,
    config=None,
    *,
    embed=None,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    seconds: float = DEFAULT_SECONDS,
    nice: int = 0,
) -> list:
    """:func:`ingestion.chunking.chunk_document` under a budget (default tokenizer).

    Semantic splitting needs the embedding model (``embed``), which lives in the
    worker and is never forked: with ``config.semantic_split`` the chunking runs in
    this process, without a budget (the parse before it had one).
    """
    if config is not None and config.semantic_split:
        from ingestion.chunking import chunk_document

        return chunk_document(parsed, config, embed=embed)
    return run_limited(_chunk, parsed, config, memory_bytes=memory_bytes, seconds=seconds, label="chunking",
                       nice=nice)


@dataclass(frozen=True)
class ChunkCounts:
    """What the preview shows of a chunking: no chunk, only counts (made and counted in the child)."""

    chunks: dict[str, int]  # section key -> chunks of that section
    tokens: list[int]  # model tokens of each section's own body, in section order
    total: int


def chunk_counts_limited(
    parsed: ParsedDocument,
    config=None,
    *,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    seconds: float = DEFAULT_SECONDS,
    nice: int = 0,
) -> ChunkCounts:
    """The chunks :func:`chunk_limited` would make, counted per section, and each section body's
    tokens, all in the child: only the counts come back. Semantic splitting needs the model, which
    is never forked: with ``config.semantic_split`` the counts are those without it."""
    return run_limited(_chunk_counts, parsed, config, memory_bytes=memory_bytes, seconds=seconds, label="chunking",
                       nice=nice)


def parse_and_chunk(
    raw: bytes,
    *,
    content_type: str | None = None,
    filename: str | None = None,
    config=None,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    seconds: float = DEFAULT_SECONDS,
) -> tuple[ParsedDocument, list]:
    """Parse and chunk in one child, under one budget (for callers that need no access policies first)."""
    if config is not None and config.semantic_split:
        raise ValueError("parse_and_chunk cannot run semantic splitting (the model stays in the worker)")
    return run_limited(
        _parse_and_chunk, raw, content_type, filename, config, memory_bytes=memory_bytes, seconds=seconds,
        label="parse",
    )


def warm() -> None:
    """Start the parse server now (at worker start), so the first document does not wait for it."""
    _server().ensure_running()


def shutdown() -> None:
    """Stop this process's parse server (a later call starts a new one)."""
    global _SERVER
    with _SERVER_LOCK:
        server, _SERVER = _SERVER, None
    if server is not None:
        server.stop()


def _parse(raw: bytes, content_type: str | None, filename: str | None,
           pricing: costs.Pricing | None = None) -> ParsedDocument:
    from ingestion.parsers import parse

    pricing = pricing or costs.Pricing()
    with costs.pricing(pricing.document, pricing.lane):
        return parse(raw, content_type=content_type, filename=filename)


def _chunk_counts(parsed: ParsedDocument, config) -> ChunkCounts:
    from ingestion.chunking import chunk_document
    from ingestion.chunking.tokens import default_counter

    if config is not None and config.semantic_split:
        config = dataclasses.replace(config, semantic_split=False)
    chunks: dict[str, int] = {}
    total = 0
    for chunk in chunk_document(parsed, config):
        chunks[chunk.section_key] = chunks.get(chunk.section_key, 0) + 1
        total += 1
    text = parsed.text
    bodies = ["\n".join(text[b.start : b.end] for b in s.blocks) for s in parsed.sections]
    counted = default_counter().count_batch(bodies) if bodies else []
    tokens = [count if section.blocks else 0 for section, count in zip(parsed.sections, counted, strict=True)]
    return ChunkCounts(chunks=chunks, tokens=tokens, total=total)


def _chunk(parsed: ParsedDocument, config) -> list:
    from ingestion.chunking import chunk_document

    return chunk_document(parsed, config)


def _parse_and_chunk(raw: bytes, content_type: str | None, filename: str | None, config):
    parsed = _parse(raw, content_type, filename)
    return parsed, _chunk(parsed, config)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown"


# ----------------------------------------------------------------------------- the caller's side


class _Server:
    """The parse server seen from the calling process: a subprocess and a control socket.

    Each call has a socket of its own: the caller sends the server one end (``SCM_RIGHTS``) over
    the control socket, the server forks a child that reads the request from it and answers on
    it, and the server adds the child's wait status when it has ended. ``lock`` is held only to
    start the server and to pass that socket, never while a child runs: the threads of a web
    process (several tenants' previews) parse side by side, each with its own budget.
    """

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.lock = threading.Lock()

    def ensure_running(self) -> None:
        with self.lock:
            self._start()

    def _start(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        self._discard(self.process)
        env = dict(os.environ)
        # The server imports by the caller's path (a test's helper module, the checkout).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
        # No tokenizer thread pool in a process that forks, and few malloc arenas
        # (each thread's arena reserves address space that RLIMIT_AS counts).
        env["TOKENIZERS_PARALLELISM"] = "false"
        env.setdefault("MALLOC_ARENA_MAX", "2")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", f"from ingestion.limits import _serve; _serve({theirs.fileno()}, {os.getpid()})"],
                stdin=subprocess.DEVNULL,
                env=env,
                close_fds=True,
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.control = ours

    def stop(self) -> None:
        with self.lock:
            process, control = self.process, self.control
            self.process = self.control = None
        if control is not None:
            control.close()  # the server's loop ends at the end of the control stream
        if process is None:
            return
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def _discard(self, process: subprocess.Popen | None) -> None:
        """Forget ``process`` (if it is still this one's server) and kill it. Called with the lock held."""
        if process is None or process is not self.process:
            return
        control, self.process, self.control = self.control, None, None
        if control is not None:
            control.close()
        with contextlib.suppress(OSError):
            process.kill()
        with contextlib.suppress(Exception):
            process.wait(5)

    def call(self, request: bytes, seconds: float) -> tuple[int, bytes, bool]:
        """Send one request; returns (the child's wait status, its message, whether it was killed at the deadline)."""
        for attempt in (1, 2):
            mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                with self.lock:
                    self._start()
                    process = self.process
                    try:
                        socket.send_fds(self.control, [b"R"], [theirs.fileno()])
                    except OSError:
                        self._discard(process)
                        if attempt == 2:
                            raise ResourceLimitExceeded("the parse server stopped; the document was not parsed") \
                                from None
                        continue
                theirs.close()
                try:
                    return self._call(mine, request, seconds)
                except _ServerGone:
                    # The server itself died (killed from outside): start a fresh one, once.
                    with self.lock:
                        if process is not None and process.poll() is not None:
                            self._discard(process)
                    if attempt == 2:
                        raise ResourceLimitExceeded("the parse server stopped; the document was not parsed") from None
            finally:
                mine.close()
                theirs.close()
        raise AssertionError("unreachable")

    def _call(self, channel: socket.socket, request: bytes, seconds: float) -> tuple[int, bytes, bool]:
        fd = channel.fileno()
        try:
            pid = pickle.loads(_expect(_read_frame(fd, time.monotonic() + _SERVER_REPLY_SECONDS), _PID))
        except TimeoutError:
            raise _ServerGone() from None
        channel.settimeout(_SERVER_REPLY_SECONDS)  # the child reads the request as soon as it starts
        try:
            channel.sendall(_HEADER.pack(len(request)))
            channel.sendall(request)
        except OSError:  # a timeout too: the child stopped reading
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            raise _ServerGone() from None
        channel.settimeout(None)  # blocking again: the reads below wait with select
        deadline = time.monotonic() + seconds
        timed_out = False
        parts: list[bytes] = []
        while True:
            # The deadline holds until the result starts to come (the child has finished then).
            if timed_out:
                wait_until: float | None = time.monotonic() + _SERVER_REPLY_SECONDS
            else:
                wait_until = None if parts else deadline
            try:
                frame = _read_frame(fd, wait_until)
            except TimeoutError:
                if timed_out:
                    raise _ServerGone() from None
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                continue
            if frame[:1] == _DATA:
                parts.append(memoryview(frame)[1:])  # no copy until the join
            else:
                status = pickle.loads(_expect(frame, _STATUS))
                return status, b"".join(parts), timed_out


def _expect(frame: bytes, kind: bytes) -> bytes:
    if frame[:1] != kind:
        raise _ServerGone()  # out of step: start afresh
    return frame[1:]


class _ServerGone(Exception):
    pass


def _read_exact(fd: int, size: int, deadline: float | None) -> bytes:
    """``size`` bytes from ``fd``; ``_ServerGone`` at the end of the stream.

    TimeoutError when nothing has come by ``deadline`` (once the first bytes are
    in, the rest is read to the end, so a frame is never left half read).
    """
    chunks = []
    remaining = size
    while remaining:
        if deadline is not None and remaining == size:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError
        try:
            chunk = os.read(fd, min(remaining, 1 << 20))
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            raise _ServerGone()
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int, deadline: float | None) -> bytes:
    """One frame; TimeoutError when its header has not come by ``deadline`` (the body follows at once)."""
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    return _read_exact(fd, size, None)


_SERVER: _Server | None = None
_SERVER_LOCK = threading.Lock()


def _server() -> _Server:
    global _SERVER
    with _SERVER_LOCK:
        if _SERVER is None or _SERVER_PID != os.getpid():
            # A forked worker (Celery's prefork pool) must not share its parent's sockets.
            _set_server(_Server())
        return _SERVER


_SERVER_PID = 0


def _set_server(server: _Server) -> None:
    global _SERVER, _SERVER_PID
    _SERVER, _SERVER_PID = server, os.getpid()


# ----------------------------------------------------------------------------- the server's side


def _serve(control_fd: int, parent_pid: int) -> None:
    """The parse server's main loop: a child per request, as many at once as the caller sends.

    The loop waits for three things: a request's socket on the control socket (it forks a child
    for it at once), the end of a child (it sends that child's wait status on the child's
    socket, then closes it), and the end of the calling process ``parent_pid``. The control
    stream's end (the caller closed it, or died) or the caller's end ends it; its children die
    with it.

    The caller's end is watched here, not with ``PR_SET_PDEATHSIG``: Linux sends that signal when the
    *thread* that started the process ends, and a web server's request thread starts this server --
    it was killed at the end of every such request, and the next request waited for a fresh one
    (a console preview or Ingest then outlasted the page's wait on a loaded machine; CI, 2026-12-05).
    The control socket alone is not enough: a process forked from the caller (a Celery pool child)
    holds it open after the caller died.
    """
    control = socket.socket(fileno=control_fd)
    # Whatever a parser prints goes to the caller's stderr.
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on the worker: the worker decides
    caller = _watch(parent_pid)
    if os.getppid() != parent_pid:  # the caller ended before the watch began
        return
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    from ingestion.chunking.tokens import default_counter

    default_counter()  # the tokenizer, loaded once for every child
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a child's end wakes the select below
    children: dict[int, socket.socket] = {}
    gc.collect()
    gc.freeze()  # children do not touch (and copy) the pages of what is loaded
    while True:
        ready = select.select([control, wake_r, *caller], [], [], None if caller else _PARENT_POLL_SECONDS)[0]
        if set(caller) & set(ready) or os.getppid() != parent_pid:
            return  # the caller ended; the children die with this process
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 512):
                    pass
        _reap(children)
        if control not in ready:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(control, 16, 4)
        except OSError:
            message, fds = b"", []
        if not message:
            for fd in fds:
                os.close(fd)
            return  # the caller closed the control socket or died; the children die with this process
        for extra in fds[1:]:
            os.close(extra)
        if not fds:
            continue
        channel = socket.socket(fileno=fds[0])
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            for fd in (wake_r, wake_w):
                os.close(fd)
            control.close()
            for other in children.values():
                other.close()
            _child(channel, server_pid)  # never returns
        children[pid] = channel


def _reap(children: dict[int, socket.socket]) -> None:
    """Send each ended child's wait status on its socket (after all it wrote), and close it."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        channel = children.pop(pid, None)
        if channel is None:
            continue
        # The caller reads to the end of the child's result before this: it fits at once, or the
        # caller is gone (then the send fails at once).
        channel.settimeout(_SERVER_REPLY_SECONDS)
        with contextlib.suppress(OSError):
            channel.sendall(_frame(_STATUS + pickle.dumps(status, protocol=_PROTOCOL)))
        channel.close()


def _frame(data: bytes) -> bytes:
    return _HEADER.pack(len(data)) + data


def _write_frame(fd: int, kind: bytes, data: bytes) -> None:
    """One frame of ``kind``, without a copy of ``data`` (a parsed document can be large)."""
    _write_all(fd, _HEADER.pack(len(kind) + len(data)) + kind)
    _write_all(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# A parse child's exit status when its server ended before the child asked for the signal (no one reads it).
_SERVER_ENDED_FIRST = 5


def _child(channel: socket.socket, server_pid: int) -> None:
    """One request, in a child the server ``server_pid`` forked (its pid read before the fork)."""
    code = 0
    try:
        if not _die_with_parent(server_pid):
            code = _SERVER_ENDED_FIRST
            return  # ends below, before a word to the caller
        fd = channel.fileno()
        _write_frame(fd, _PID, pickle.dumps(os.getpid(), protocol=_PROTOCOL))
        (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, None))
        memory_bytes, seconds, nice, payload = pickle.loads(_read_exact(fd, size, None))
        if nice:
            os.nice(nice)
        cpu = math.ceil(seconds) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 2))
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        try:
            fn, args, kwargs = pickle.loads(payload)
            del payload
            message = ("ok", fn(*args, **kwargs))
            data = pickle.dumps(message, protocol=_PROTOCOL)
        except MemoryError:
            data = pickle.dumps(("memory",), protocol=_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the caller
            if _near_memory_limit(memory_bytes):
                # A library that reports a failed allocation as something else (lxml's
                # "unknown error", wrapped in a ParseError by the parser).
                data = pickle.dumps(("memory",), protocol=_PROTOCOL)
            elif isinstance(exc, ParseError):
                data = _pickled_parse_error(exc)
            else:
                data = _pickled_error(exc)
        _write_frame(fd, _DATA, data)
    except MemoryError:
        code = 3
        with contextlib.suppress(BaseException):
            _write_frame(channel.fileno(), _DATA, pickle.dumps(("memory",), protocol=_PROTOCOL))
    except BaseException:  # noqa: BLE001 - a child never returns into the server's loop
        code = 4
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


def _near_memory_limit(memory_bytes: int) -> bool:
    """Whether this process's address space reached (nearly) the limit: an allocation failed."""
    try:
        with open("/proc/self/status") as status:
            peak = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmPeak:"))
    except (OSError, StopIteration, ValueError):
        return False
    return peak >= memory_bytes - max(64 * 1024 * 1024, memory_bytes // 10)


def _pickled_parse_error(exc: ParseError) -> bytes:
    cls = type(exc)
    message = getattr(exc, "message", str(exc))
    line = getattr(exc, "line", None)
    try:
        pickle.loads(pickle.dumps(cls))
        cls(message, line=line)
    except Exception:  # noqa: BLE001 - a subclass that cannot be rebuilt is sent as its base
        cls = ParseError
    return pickle.dumps(("parse_error", cls, message, line), protocol=_PROTOCOL)


def _pickled_error(exc: BaseException) -> bytes:
    text = "".join(traceback.format_exception(exc))
    try:
        data = pickle.dumps(("error", exc, text), protocol=_PROTOCOL)
        pickle.loads(data)
        return data
    except Exception:  # noqa: BLE001 - an exception that does not pickle becomes a RuntimeError
        return pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}"), text), protocol=_PROTOCOL)


# Where the kernel cannot tell the server of its caller's end (no pidfd), it looks this often.
_PARENT_POLL_SECONDS = 1.0


def _watch(pid: int) -> list[int]:
    """A descriptor that becomes readable when process ``pid`` ends (a pidfd, Linux 5.3), or none:
    then the server looks at its parent every ``_PARENT_POLL_SECONDS``."""
    try:
        return [os.pidfd_open(pid)]
    except (AttributeError, OSError):
        return []


def _die_with_parent(parent_pid: int) -> bool:
    """Linux: get SIGKILL when the parent process dies (no orphaned server or runaway child); whether the parent
    is still ``parent_pid`` (the process that forked this one, its pid read before the fork) once the signal is
    asked for. A parent that ended before that sends no signal: this process is another's child already, and
    should end at once.

    Only for a process started by a process's only thread (the server's children): the signal
    comes when the starting *thread* ends."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    return os.getppid() == parent_pid
