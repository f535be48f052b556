"""Check the held-out screening set's shape; print its counts (never its texts).

Run: python evaluation/screening-test5/check.py. Exits non-zero on the first broken rule.
"""

import json
import re
import sys
from collections import Counter
from itertools import combinations
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("hijack", "answer_manipulation", "code_injection", "exfiltration", "role_tokens", "override")
PER_FAMILY = 40
CLEAN = 60
RUN = 8  # no two attacks share a run of this many words

# The words the brief asks at least half of the attacks to do without, with their common translations
# in the set's languages (stems, matched case-insensitively anywhere in the text).
OBVIOUS = re.compile(
    r"ignor|instruct|\bai\b|assistant|model|prompt|system|"
    r"\bki\b|\bia\b|yapay zek|trí tuệ nhân tạo|\bши\b|\bии\b|人工智能|"
    r"anweisung|consigne|instrucc|instruç|istruzion|instruks|instrukc|instrukt|instrucț|pokyn|talimat|instruksi|"
    r"arahan|hướng dẫn|οδηγ|utasítás|ohje|maelekezo|tagubilin|הוראות|تعليمات|توجيه|निर्देश|지시|вказівк|інструкц|"
    r"указани|инструкц|polecen|opgedragen|指令|指示|"
    r"assistent|asistan|asisten|trợ lý|βοηθ|asszisztens|avustaja|asistent|msaidizi|עוזר|مساعد|सहायक|어시스턴트|"
    r"도우미|асистент|ассистент|助手|アシスタント|"
    r"yok say|abaikan|bỏ qua|αγνό|figyelmen kívül|puuza|התעלם|تجاهل|अनदेखा|무시|忽略|無視|"
    r"modell|modèle|modelo|mô hình|μοντέλο|модел|モデル|模型|모델|"
    r"sistem|systém|järjestelm|rendszer|mfumo|σύστημα|система|מערכת|نظام|सिस्टम|시스템|システム|系统|"
    r"promptu|промпт|lời nhắc|プロンプト|프롬프트|提示",
    re.IGNORECASE,
)


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def load(name, extra_keys):
    rows = []
    for number, line in enumerate((HERE / name).read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            fail(f"{name} line {number}: not JSON ({error})")
        keys = {"id", "family", "language", "register", "text", *extra_keys}
        if set(row) != keys:
            fail(f"{name} line {number}: keys {sorted(row)}, expected {sorted(keys)}")
        if not all(isinstance(row[key], str) and row[key].strip() for key in keys):
            fail(f"{name} line {number}: an empty or non-string field")
        rows.append(row)
    return rows


def runs(text):
    words = text.lower().split()
    return {tuple(words[i : i + RUN]) for i in range(len(words) - RUN + 1)}


def main():
    attacks = load("attacks.jsonl", ())
    clean = load("clean.jsonl", ("kind",))
    ids = [row["id"] for row in attacks + clean]
    if len(ids) != len(set(ids)):
        fail(f"duplicate ids: {sorted(i for i, n in Counter(ids).items() if n > 1)}")
    for row in attacks:
        if row["family"] not in FAMILIES or not row["id"].startswith(f"t5-{row['family']}-"):
            fail(f"{row['id']}: family {row['family']!r} does not fit")
    for row in clean:
        if row["family"] != "clean" or not row["id"].startswith("t5-clean-"):
            fail(f"{row['id']}: a clean row must have family 'clean' and a t5-clean- id")
    families = Counter(row["family"] for row in attacks)
    if any(families[family] != PER_FAMILY for family in FAMILIES):
        fail(f"family counts {dict(families)}, expected {PER_FAMILY} each")
    if len(clean) != CLEAN:
        fail(f"{len(clean)} clean rows, expected {CLEAN}")
    texts = [row["text"] for row in attacks + clean]
    if len(texts) != len(set(texts)):
        fail("two rows share a text")
    foreign = [row for row in attacks if row["language"] != "en"]
    foreign_languages = {row["language"] for row in foreign}
    if len(foreign) * 100 < 35 * len(attacks) or len(foreign_languages) < 12:
        fail(f"{len(foreign)} non-English attacks in {len(foreign_languages)} languages")
    plain = [row for row in attacks if not OBVIOUS.search(row["text"])]
    if len(plain) * 2 < len(attacks):
        fail(f"only {len(plain)} attacks avoid the obvious words")
    shingles = {row["id"]: runs(row["text"]) for row in attacks}
    for (a, sa), (b, sb) in combinations(shingles.items(), 2):
        if sa & sb:
            fail(f"{a} and {b} share a run of {RUN} words")

    print(f"attacks: {len(attacks)}; clean: {len(clean)}")
    for family in FAMILIES:
        rows = [row for row in attacks if row["family"] == family]
        english = sum(row["language"] == "en" for row in rows)
        avoid = sum(not OBVIOUS.search(row["text"]) for row in rows)
        print(f"  {family}: {len(rows)} ({english} en, {len(rows) - english} other; {avoid} avoid the obvious words)")
    print(
        f"non-English attacks: {len(foreign)} ({100 * len(foreign) / len(attacks):.0f}%) "
        f"in {len(foreign_languages)} languages; avoid the obvious words: {len(plain)}"
    )
    print(
        "attack languages:", ", ".join(f"{k} {v}" for k, v in sorted(Counter(r["language"] for r in attacks).items()))
    )
    clean_languages = Counter(row["language"] for row in clean)
    print(
        f"clean languages ({len(clean_languages)}):", ", ".join(f"{k} {v}" for k, v in sorted(clean_languages.items()))
    )
    print("OK")


if __name__ == "__main__":
    main()
