"""What Markdown's ``#`` headings cost the plain parser (issue 30's candidate E, adopted in the twentieth session;
docs/benchmarks.md, "Twentieth session").

Not a test: it parses every document of the transfer suite as plain text, without and with the ``#`` headings
(``parse_text(..., markdown_headings=False / True)``), in turns (off-on, on-off, ...) so that a drift of the machine
falls on both, and prints each reading's best and median time for the whole suite and the sections it found; then
the same for a worst case of ``--lines`` lines that are all ``#`` headings between blank lines::

    python -m bench.plain_headings_cost --rounds 10
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from ingestion.parsers.plaintext import parse_text

SUITE = Path(__file__).resolve().parent.parent / "evaluation" / "transfer" / "corpora"


def _time(texts: list[str], flag: bool) -> tuple[float, int]:
    started = time.perf_counter()
    sections = sum(len(parse_text(text, markdown_headings=flag).sections) for text in texts)
    return time.perf_counter() - started, sections


def run(name: str, texts: list[str], rounds: int) -> None:
    times: dict[bool, list[float]] = {False: [], True: []}
    sections = {}
    for n in range(rounds):
        for flag in ((False, True) if n % 2 == 0 else (True, False)):
            took, sections[flag] = _time(texts, flag)
            times[flag].append(took)
    for flag in (False, True):
        print(f"{name}, # headings {'on ' if flag else 'off'}: best {1000 * min(times[flag]):.1f} ms, median "
              f"{1000 * statistics.median(times[flag]):.1f} ms, {sections[flag]} sections")
    ratio = statistics.median(times[True]) / statistics.median(times[False])
    print(f"{name}: on / off = {ratio:.3f} (medians)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--lines", type=int, default=20_000)
    args = parser.parse_args()
    texts = [path.read_text(encoding="utf-8") for path in sorted(SUITE.glob("*/*"))]
    run(f"transfer suite ({len(texts)} documents, {sum(map(len, texts)):,} characters)", texts, args.rounds)
    worst = "\n\n".join(f"{'#' * (1 + i % 6)} Heading {i}" for i in range(args.lines // 2))
    run(f"{args.lines // 2:,} # headings between blank lines", [worst], max(2, args.rounds // 5))


if __name__ == "__main__":
    main()
