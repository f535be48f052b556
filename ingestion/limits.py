"""Per-document resource budgets: parsing and chunking run in a child process with a memory and a time ceiling.

No input may take a worker down: a zip bomb, a YAML alias bomb or a pathological
nesting that the parsers' own limits miss ends as :class:`ResourceLimitExceeded`
(a :class:`~ingestion.structure.ParseError`, so the pipeline fails the job with its
message) instead of an out-of-memory kill of the worker or an hour of CPU.

How (pure Python, no Django imports):

* A small **parse server** is started once per worker process
  (``python -c "...limits import _serve"``, a fresh interpreter: it never loads torch
  nor starts threads).  It imports the parsers, the chunker and the tokenizer once,
  then, for each call, ``fork``\\ s a child.  Forking the worker itself is not safe
  (torch's thread pools: a child can inherit a held lock and hang); forking this
  single-threaded server is, and costs a few milliseconds (measured in
  docs/benchmarks.md, "Fairness and parse budgets").
* The child sets ``RLIMIT_AS`` (address space: ``memory_bytes``) and ``RLIMIT_CPU``
  (``seconds`` + 1, a backstop), runs the function and sends back its pickled result
  or exception.  The caller waits at most ``seconds`` of wall-clock time, then kills it.
* ``MemoryError`` in the child, a child killed by a signal, or the deadline give
  :class:`ResourceLimitExceeded` with a plain message (``document exceeded the parse
  memory limit of 2048 MB`` / ``... the parse time limit of 120 s``).  Any other
  exception of the function (``ParseError``, ``ValueError``, a bug) is raised again
  in the caller, the child's traceback attached as a note.

The budgets are arguments here; the pipeline takes them from the settings
``BULKHEAD_PARSE_MEMORY_MB`` and ``BULKHEAD_PARSE_SECONDS``.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import pickle
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

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


# ----------------------------------------------------------------------------- the public calls


def run_limited(
    fn: Callable[..., Any], /, *args: Any, memory_bytes: int, seconds: float, label: str = "parse", **kwargs: Any
) -> Any:
    """``fn(*args, **kwargs)`` in a child process with an address-space and a time limit.

    ``fn``, its arguments and its result must pickle (``fn`` by reference: a module-level
    function).  Raises :class:`ResourceLimitExceeded` (``label`` names the step in its
    message) when the child runs out of memory, is killed, or outlives ``seconds``;
    re-raises whatever else ``fn`` raised.
    """
    if memory_bytes <= 0 or seconds <= 0:
        raise ValueError("memory_bytes and seconds must be positive")
    payload = pickle.dumps((fn, args, kwargs), protocol=_PROTOCOL)
    request = pickle.dumps((memory_bytes, seconds, payload), protocol=_PROTOCOL)
    status, data, timed_out = _server().call(request, seconds)
    memory_mb = memory_bytes / (1024 * 1024)
    over_memory = ResourceLimitExceeded(f"document exceeded the {label} memory limit of {memory_mb:g} MB")
    over_time = ResourceLimitExceeded(f"document exceeded the {label} time limit of {seconds:g} s")
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
) -> ParsedDocument:
    """:func:`ingestion.parsers.parse` under a budget."""
    return run_limited(
        _parse, raw, content_type, filename, memory_bytes=memory_bytes, seconds=seconds, label="parse"
    )


def chunk_limited(
    parsed: ParsedDocument,
    config=None,
    *,
    embed=None,
    memory_bytes: int = DEFAULT_MEMORY_BYTES,
    seconds: float = DEFAULT_SECONDS,
) -> list:
    """:func:`ingestion.chunking.chunk_document` under a budget (default tokenizer).

    Semantic splitting needs the embedding model (``embed``), which lives in the
    worker and is never forked: with ``config.semantic_split`` the chunking runs in
    this process, without a budget (the parse before it had one).
    """
    if config is not None and config.semantic_split:
        from ingestion.chunking import chunk_document

        return chunk_document(parsed, config, embed=embed)
    return run_limited(_chunk, parsed, config, memory_bytes=memory_bytes, seconds=seconds, label="chunking")


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


def _parse(raw: bytes, content_type: str | None, filename: str | None) -> ParsedDocument:
    from ingestion.parsers import parse

    return parse(raw, content_type=content_type, filename=filename)


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
    """The parse server seen from the worker: a subprocess and two pipes."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def ensure_running(self) -> None:
        with self.lock:
            self._start()

    def _start(self) -> None:
        if self.process is not None and self.process.poll() is None:
            return
        env = dict(os.environ)
        # The server imports by the caller's path (a test's helper module, the checkout).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if isinstance(p, str) and p)
        # No tokenizer thread pool in a process that forks, and few malloc arenas
        # (each thread's arena reserves address space that RLIMIT_AS counts).
        env["TOKENIZERS_PARALLELISM"] = "false"
        env.setdefault("MALLOC_ARENA_MAX", "2")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from ingestion.limits import _serve; _serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )

    def stop(self) -> None:
        with self.lock:
            process, self.process = self.process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        with contextlib.suppress(OSError):
            process.stdout.close()

    def call(self, request: bytes, seconds: float) -> tuple[int, bytes, bool]:
        """Send one request; returns (the child's wait status, its message, whether it was killed at the deadline)."""
        with self.lock:
            for attempt in (1, 2):
                self._start()
                try:
                    return self._call(request, seconds)
                except _ServerGone:
                    # The server itself died (killed from outside): start a fresh one, once.
                    self._discard()
                    if attempt == 2:
                        raise ResourceLimitExceeded("the parse server stopped; the document was not parsed") from None
        raise AssertionError("unreachable")

    def _discard(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(Exception):
                process.wait(5)

    def _call(self, request: bytes, seconds: float) -> tuple[int, bytes, bool]:
        process = self.process
        assert process is not None and process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(_HEADER.pack(len(request)))
            process.stdin.write(request)
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _ServerGone() from None
        fd = process.stdout.fileno()
        try:
            pid = pickle.loads(_expect(_read_frame(fd, time.monotonic() + _SERVER_REPLY_SECONDS), _PID))
        except TimeoutError:
            raise _ServerGone() from None
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
                parts.append(frame[1:])
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
        chunk = os.read(fd, min(remaining, 1 << 20))
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
            # A forked worker (Celery's prefork pool) must not share its parent's pipes.
            _set_server(_Server())
        return _SERVER


_SERVER_PID = 0


def _set_server(server: _Server) -> None:
    global _SERVER, _SERVER_PID
    _SERVER, _SERVER_PID = server, os.getpid()


# ----------------------------------------------------------------------------- the server's side


def _serve() -> None:
    """The parse server's main loop: one request at a time from stdin, each run in a forked child."""
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    replies = os.dup(1)
    # Whatever a parser prints must not mix into the replies.
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on the worker: the worker decides
    _die_with_parent()
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    from ingestion.chunking.tokens import default_counter

    default_counter()  # the tokenizer, loaded once for every child
    gc.collect()
    gc.freeze()  # children do not touch (and copy) the pages of what is loaded
    request_fd = requests.fileno()
    while True:
        try:
            header = _read_exact(request_fd, _HEADER.size, None)
        except _ServerGone:
            return  # the worker closed the pipe or died
        (size,) = _HEADER.unpack(header)
        memory_bytes, seconds, payload = pickle.loads(_read_exact(request_fd, size, None))
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(result_r)
            os.close(request_fd)
            os.close(replies)
            _child(result_w, payload, memory_bytes, seconds)  # never returns
        os.close(result_w)
        _write_frame(replies, _PID + pickle.dumps(pid, protocol=_PROTOCOL))
        # The result is passed on as it comes: the server never holds a whole one.
        while chunk := os.read(result_r, 1 << 20):
            _write_frame(replies, _DATA + chunk)
        os.close(result_r)
        _, status = os.waitpid(pid, 0)
        _write_frame(replies, _STATUS + pickle.dumps(status, protocol=_PROTOCOL))


def _write_frame(fd: int, data: bytes) -> None:
    _write_all(fd, _HEADER.pack(len(data)) + data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _child(result_fd: int, payload: bytes, memory_bytes: int, seconds: float) -> None:
    code = 0
    try:
        _die_with_parent()
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
        _write_all(result_fd, data)  # the server reads to the end: no frame needed
    except MemoryError:
        code = 3
        with contextlib.suppress(BaseException):
            _write_all(result_fd, pickle.dumps(("memory",), protocol=_PROTOCOL))
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


def _die_with_parent() -> None:
    """Linux: get SIGKILL when the parent process dies (no orphaned server or runaway child)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
