"""A transfer suite of some sources only (issue 30): their corpora and their questions, copied out of
``evaluation/transfer`` into a folder that ``kb_eval --load-corpora`` and ``kb_transfer --suite`` read::

    python -m bench.subsuite DEST SOURCE [SOURCE ...]

A source is a folder of ``evaluation/transfer/corpora`` (``npm-semver``, ``report-saltworks``). DEST is replaced.
Not product code: nothing in the product imports this module.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

SUITE = Path("evaluation/transfer")


def build(dest: Path, sources: list[str], suite: Path = SUITE) -> int:
    missing = [s for s in sources if not (suite / "corpora" / s).is_dir()]
    if missing:
        raise SystemExit(f"no such source in {suite / 'corpora'}: {', '.join(missing)}")
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "corpora").mkdir(parents=True)
    for source in sources:
        shutil.copytree(suite / "corpora" / source, dest / "corpora" / source)
    count = 0
    with open(suite / "questions.jsonl", encoding="utf-8") as lines, open(
        dest / "questions.jsonl", "w", encoding="utf-8"
    ) as out:
        for line in lines:
            if json.loads(line)["document"].split("/", 1)[0] in sources:
                out.write(line)
                count += 1
    return count


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    print(build(Path(sys.argv[1]), sys.argv[2:]), "questions")
