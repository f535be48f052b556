"""The benchmarks' readings of plain text (``bench.chunkeval``): ``bulkhead`` as the parser is now (Markdown's ``#``
headings read), ``bulkhead:atx=0`` as it was before the twentieth session, ``atx=1`` the same as now."""

from __future__ import annotations

from bench.chunkeval.cli import make_chunker

TEXT = "# Install\n\nRun the installer once.\n\n# Usage\n\nCall the tool with a file name.\n"


def _spans(name: str) -> list[tuple[int, int]]:
    _, chunk = make_chunker(name)
    return [(c.start, c.end) for c in chunk(TEXT)]


def test_the_reading_before_and_the_reading_now():
    now = _spans("bulkhead")
    assert now == _spans("bulkhead:atx=1") == _spans("bulkhead:pieces=0.5,atx=1")
    assert len(now) == 2  # a chunk per section
    assert _spans("bulkhead:atx=0") == [(0, len(TEXT.rstrip("\n")))]  # one block of the whole text
