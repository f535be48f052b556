"""Parse time per file, best of N: for comparing parser versions (no Django, no database).

    python scripts/parse_cost.py FILE... [--repeat 5]
    python scripts/parse_cost.py --write-synthetic DIR   # a styled 1 MB page and a 1 MB Markdown file

Each file is parsed through the registry (``ingestion.parsers.parse``, as ingestion does), ``--repeat``
times in a row after one warm-up; the best CPU time of the process (``time.process_time``: steadier than
the wall clock on a shared machine) of each is printed, then the sum. Run it with another
checkout of ``ingestion`` first on ``PYTHONPATH`` to measure that version (docs/benchmarks.md, "Hidden text").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--write-synthetic", metavar="DIR", help="write styled.html and inline-html.md there")
    args = parser.parse_args(argv)
    if args.write_synthetic:
        _write_synthetic(Path(args.write_synthetic))
        return 0
    sys.path.append(str(Path(__file__).resolve().parent.parent))  # this checkout, after any PYTHONPATH
    from ingestion.parsers import parse

    print(f"# parsers from {Path(sys.modules['ingestion'].__file__).parent}")
    total = 0.0
    for name in args.files:
        data = Path(name).read_bytes()
        parse(data, filename=name)  # warm-up: imports, caches
        best = min(_timed(parse, data, name) for _ in range(args.repeat))
        total += best
        print(f"{Path(name).name}\t{len(data):>9,} B\t{best * 1000:9.1f} ms")
    print(f"total\t\t\t{total * 1000:9.1f} ms")
    return 0


def _write_synthetic(folder: Path) -> None:
    """Worst cases for the visibility rules: 60 style rules over 5,000 styled paragraphs; Markdown with
    inline HTML in every paragraph (each is then rendered and its tags located)."""
    folder.mkdir(parents=True, exist_ok=True)
    rules = "".join(f".c{i} span.k{i} {{ color: #{i:02x}{i:02x}{i:02x}; font-size: {10 + i % 5}px }}\n"
                    for i in range(60))
    paragraphs = "".join(
        f'<div class="c{i % 60}"><h3>Heading {i}</h3><p style="margin:0 1em">Paragraph {i} with '
        f'<span class="k{i % 60}">styled words</span>, <b>bold</b> and <a href="#x{i}">a link</a> in it.</p></div>\n'
        for i in range(5000))
    (folder / "styled.html").write_text(f"<html><head><style>{rules}</style></head><body>{paragraphs}</body></html>")
    markdown = "".join(
        f"## Section {i}\n\nParagraph {i} with <span class=\"k\">inline HTML</span>, **bold** and "
        f"[a link](https://example.com/{i}) in it.\n\n- item <b>one</b>\n- item two\n\n"
        for i in range(5000))
    (folder / "inline-html.md").write_text("# Synthetic\n\n" + markdown)


def _timed(parse, data: bytes, name: str) -> float:
    start = time.process_time()
    parse(data, filename=name)
    return time.process_time() - start


if __name__ == "__main__":
    raise SystemExit(main())
