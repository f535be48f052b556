"""The evaluation's tables: flagged shares per split, family, genre, source, language, obfuscation
and chunks spanned (``python -m bench.screening evaluate`` and the cascade's ``cascade-evaluate``)."""

from __future__ import annotations

from collections import defaultdict


def rate(hits: list[bool]) -> str:
    return f"{sum(hits)}/{len(hits)} = {100 * sum(hits) / len(hits):.1f}%" if hits else "-"


def tables(cs: list[dict], ps: list[dict], clean_flags: list[bool], planted_flags: list[bool], misses: bool) -> dict:
    table: dict = {"clean_flagged": rate(clean_flags), "planted_flagged": rate(planted_flags)}
    by = defaultdict(list)
    for r, f in zip(cs, clean_flags, strict=True):
        by[r["genre"]].append(f)
    table["clean_flagged_by_genre"] = {k: rate(v) for k, v in sorted(by.items())}
    for key, get in (
        ("family", lambda r: r["attack"]["family"]),
        ("genre", lambda r: r["genre"]),
        ("source", lambda r: r["attack"]["source"]),
        ("language", lambda r: "en" if r["attack"]["lang"] == "en" else "other"),
        ("obfuscation", lambda r: r["attack"]["obfuscation"] or "none"),
        ("chunks_spanned", lambda r: str(min(len(r["chunks"]), 2)) + (" (+)" if len(r["chunks"]) > 2 else "")),
    ):
        by = defaultdict(list)
        for r, f in zip(ps, planted_flags, strict=True):
            by[get(r)].append(f)
        table[f"planted_flagged_by_{key}"] = {k: rate(v) for k, v in sorted(by.items())}
    if misses:
        table["missed"] = [r["attack"]["text"][:160] for r, f in zip(ps, planted_flags, strict=True) if not f]
        table["false_positives"] = [r["text"][:200] for r, f in zip(cs, clean_flags, strict=True) if f]
    return table
