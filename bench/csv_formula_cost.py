"""What reading a CSV's formula cells empty costs the CSV parser (twenty-second session, attack22x; docs/benchmarks.md,
"Twenty-second session: a CSV's formula cells").

Not a test: it parses, through the registry as an upload does, a CSV of 100,000 rows and four columns (a signed amount
in every row, so every row's cells go past the first-character check) without formulas, and the same with a formula
in every tenth row (10,000 cells cut, the file read twice), and prints the median of ``--rounds`` parses of each::

    python bench/csv_formula_cost.py --rounds 5                       # this checkout
    PYTHONPATH=/path/to/other/checkout python bench/csv_formula_cost.py  # another one (before the change)
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import time

from ingestion.parsers import parse


def sheet(rows: int, formula_every: int) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(["id", "name", "note", "amount"])
    for n in range(rows):
        formula = formula_every and n % formula_every == 0
        writer.writerow([n, f"name {n}", f'=IF(FALSE,"hidden {n}","ok")' if formula else f"plain note {n} - ok",
                         f"-{n}.50"])
    return out.getvalue().encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()
    for every in (0, 10):
        data = sheet(args.rows, every)
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            document = parse(data, filename="sheet.csv")
            times.append(time.perf_counter() - started)
        cut = sum(section.hidden_chars_removed for section in document.sections)
        print(f"{'a formula every 10th row' if every else 'no formula':>24}: {len(data) / 1e6:.1f} MB, median "
              f"{statistics.median(times):.2f} s (best {min(times):.2f} s), {cut} characters cut")


if __name__ == "__main__":
    main()
