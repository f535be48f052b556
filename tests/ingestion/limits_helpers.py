"""Functions that tests/ingestion/test_limits.py runs in the budgeted child (importable by module path),
and the DOCX builder the limit tests share."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import sys
import zipfile

import docx
import yaml

from ingestion.structure import ParseError


def add(a: int, b: int, *, times: int = 1) -> int:
    return (a + b) * times


def hog_memory(step_mb: int = 64) -> int:
    """Allocate (and touch) memory until something gives."""
    held = []
    while True:
        held.append(bytearray(step_mb * 1024 * 1024))
        held[-1][::4096] = b"x" * len(range(0, step_mb * 1024 * 1024, 4096))


def busy_loop() -> None:
    n = 0
    while True:
        n += 1


def busy_loop_under_cpu_limit(cpu_seconds: int) -> None:
    """A busy loop that the kernel stops with SIGXCPU before the caller's deadline."""
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    busy_loop()


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def raise_parse_error() -> None:
    raise ParseError("bad marker", line=7)


def raise_value_error() -> None:
    raise ValueError("not a number")


def loaded(module: str) -> bool:
    return module in sys.modules


def parent_pid() -> int:
    return os.getppid()


def address_space_bytes() -> int:
    """The child's current virtual size (what RLIMIT_AS counts)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


def laughs(depth: int) -> str:
    """A billion-laughs YAML document: each level is nine aliases of the one before."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, depth):
        previous, name = chr(ord("a") + level - 1), chr(ord("a") + level)
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join(lines) + "\n"


def naive_front_matter(source: str) -> int:
    """What a front-matter reader without an alias check does: load (aliases shared), then serialise."""
    data = yaml.load(source, Loader=yaml.SafeLoader)  # noqa: S506 - the point is a loader that allows aliases
    return len(json.dumps(data))


def big_result(size: int) -> bytes:
    return bytes(range(256)) * (size // 256)


def noisy(value: int) -> int:
    """Prints to stdout and stderr, as a chatty library would."""
    print("a parser that prints" * 1000)
    print("and warns", file=sys.stderr)
    return value


def docx_with_body(body_xml: str, styles: str = "") -> bytes:
    """A real DOCX (python-docx's blank document) whose body is ``body_xml`` (and ``styles``, ``w:style`` elements,
    added to its styles part)."""
    base = io.BytesIO()
    docx.Document().save(base)
    source = zipfile.ZipFile(io.BytesIO(base.getvalue()))
    document = source.read("word/document.xml").decode()
    head, rest = document.split("<w:body>", 1)
    tail = rest.split("</w:body>", 1)[1]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for item in source.infolist():
            data = source.read(item)
            if item.filename == "word/document.xml":
                data = (head + "<w:body>" + body_xml + "<w:sectPr/></w:body>" + tail).encode()
            elif item.filename == "word/styles.xml" and styles:
                data = data.decode().replace("</w:styles>", styles + "</w:styles>").encode()
            archive.writestr(item, data)
    return out.getvalue()


def wait_for(path: str) -> str:
    """Wait until ``path`` exists (the caller's budget ends a wait that never ends)."""
    import time

    while not os.path.exists(path):
        time.sleep(0.01)
    return "done"


def niceness() -> int:
    return os.nice(0)
