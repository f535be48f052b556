"""Rebuild the evaluation suite's corpora and golden spans from their public sources.

    python evaluation/suite/build_suite.py DJANGO_DOCS_DIR

DJANGO_DOCS_DIR is ``docs/`` of the Django 5.2.19 sdist
(``pip download --no-deps --no-binary :all: django==5.2.19``, unpacked).  The
corpora are written under ``corpora/<genre>/``; ``questions.jsonl`` (the JSONL
golden format: question, document, spans) is computed from ``questions.src.jsonl``
(question, document, quote): each quote must occur exactly once in its document,
and its character range becomes the span.  A question of a ``structured/`` file
is repeated for the same file's ``stripped/`` variant (headings removed).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from ingestion.parsers.plaintext import find_headings  # noqa: E402

STRUCTURED = {
    "sessions.txt": "topics/http/sessions.txt",
    "timezones.txt": "topics/i18n/timezones.txt",
    "checklist.txt": "howto/deployment/checklist.txt",
    "signals.txt": "topics/signals.txt",
    "pagination.txt": "topics/pagination.txt",
}
PROSE = ["misc/design-philosophies.txt", "faq/general.txt", "internals/release-process.txt", "topics/security.txt"]
RECORDS = [f"releases/4.2.{n}.txt" for n in range(1, 31)]
TABLE_RE = re.compile(r"^=+( +=+)+ *$")


def read(docs: Path, rel: str) -> str:
    return (docs / rel).read_text(encoding="utf-8")


def strip_headings(text: str) -> str:
    """Drop every heading construct the plain-text parser recognises (title and adornment lines)."""
    lines = text.split("\n")
    drop = {n for h in find_headings(lines) for n in range(h.first, h.last + 1)}
    out = [line for n, line in enumerate(lines) if n not in drop]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n") + "\n"


def convert_tables(text: str, sep: str) -> str:
    """reST simple tables -> one line per row, cells joined by ``sep`` (continuation lines merged)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not TABLE_RE.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        border = lines[i]
        cols = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
        bounds = [(s, cols[k + 1][0] if k + 1 < len(cols) else None) for k, (s, _e) in enumerate(cols)]
        rows: list[list[str]] = []
        borders = 1
        i += 1
        while i < len(lines) and borders < 3:
            line = lines[i]
            i += 1
            if TABLE_RE.match(line):
                borders += 1
                continue
            if not line.strip():
                continue
            cells = [line[s:e].strip() if e else line[s:].strip() for s, e in bounds]
            if rows and not cells[0] and any(cells):
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
            else:
                rows.append(cells)
        out.extend(sep.join(c for c in row if c) if sep == " | " else sep.join(row) for row in rows)
    return "\n".join(out)


def build(docs: Path) -> dict[str, str]:
    corpora: dict[str, str] = {}
    for name, rel in STRUCTURED.items():
        text = read(docs, rel)
        corpora[f"structured/{name}"] = text
        corpora[f"stripped/{name}"] = strip_headings(text)
    corpora["prose/django-essays.txt"] = "\n".join(strip_headings(read(docs, rel)) for rel in PROSE)
    corpora["records/bugfixes-4.2.txt"] = "\n".join(strip_headings(read(docs, rel)) for rel in RECORDS)
    builtins = read(docs, "ref/templates/builtins.txt").split("\n")
    corpora["tables/template-formats.txt"] = strip_headings(convert_tables("\n".join(builtins[1559:2140]), " | "))
    corpora["tables/messages.txt"] = strip_headings(convert_tables(read(docs, "ref/contrib/messages.txt"), "\t"))
    return corpora


def spans(corpora: dict[str, str]) -> list[dict]:
    out = []
    errors = []
    with open(HERE / "questions.src.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            q = json.loads(line)
            quotes = q["quote"] if isinstance(q["quote"], list) else [q["quote"]]
            docs = [q["document"]]
            if q["document"].startswith("structured/"):
                docs.append("stripped/" + q["document"].split("/", 1)[1])
            for doc in docs:
                text = corpora[doc]
                found = []
                for quote in quotes:
                    n = text.count(quote)
                    if n != 1:
                        errors.append(f"{doc}: quote occurs {n} times: {quote[:70]!r}")
                        continue
                    s = text.index(quote)
                    found.append([s, s + len(quote)])
                out.append({"question": q["question"], "document": doc, "spans": found})
    if errors:
        raise SystemExit("\n".join(errors))
    return out


def main() -> None:
    corpora = build(Path(sys.argv[1]))
    for name, text in corpora.items():
        path = HERE / "corpora" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if (HERE / "questions.src.jsonl").exists():
        rows = spans(corpora)
        with open(HERE / "questions.jsonl", "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{len(rows)} questions")
    print({k: len(v) for k, v in corpora.items()})


if __name__ == "__main__":
    main()
