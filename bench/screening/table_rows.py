"""Planted instructions written into a bare-row table, against the same instructions in prose (issue 30's
reports write tables as ``cell | cell | cell`` lines; ``lexical-5.1`` reads their separators as cell
boundaries, docs/screening.md).

Each distinct one-line attack of the validation, test4 and test5 splits is put three ways into a short
document: as a sentence of prose (``prose``), as one cell of a three-column table (``cell``), and with its
words spread over three cells of a four-column table (``spread``), and two words a cell (``narrow``); every text is screened alone with itself
as the document. Prints the flagged counts per split and way, as JSON (run it on two checkouts to compare
detector versions).

    python -m bench.screening.table_rows
"""

from __future__ import annotations

import json

LEAD = "The table below lists each service with its owner and a note."


def planted_text(attack: str, way: str) -> str:
    if way == "prose":
        return f"{LEAD} {attack} Each service is reviewed every quarter."
    if way == "cell":
        rows = ["Service | Owner | Note", "Billing | finance-team | monthly close", f"Search | platform-team | {attack}",
                "Mail | it-team | none"]
    elif way == "narrow":  # two words a cell, as many cells as it takes
        words = attack.split(" ")
        parts = [" ".join(words[i : i + 2]) for i in range(0, len(words), 2)]
        rows = [" | ".join(["Service", *[f"N{i}" for i in range(len(parts))]]), " | ".join(["Billing", *["-"] * len(parts)]),
                " | ".join(["Search", *parts]), " | ".join(["Mail", *["-"] * len(parts)])]
    else:
        words = attack.split(" ")
        k = max(len(words) // 3, 1)
        parts = [" ".join(words[:k]), " ".join(words[k : 2 * k]), " ".join(words[2 * k :]) or "-"]
        rows = ["Service | Note A | Note B | Note C", "Billing | - | - | -", "Search | " + " | ".join(parts),
                "Mail | - | - | -"]
    return "\n".join([LEAD, *rows])


def planted_flags(planted_text, ways: tuple[str, ...]) -> dict:
    """For each way of writing (``planted_text(attack, way)``), how many of the development set's one-line planted
    instructions (its val, test4 and test5 splits) the detector flags, per split."""
    from bench.screening.devset import load
    from ingestion.screening import DETECTOR_VERSION, screen_chunks

    _clean, planted = load()
    split_of: dict[str, str] = {}
    for r in planted:
        text = r["attack"]["text"]
        if r["split"] in ("val", "test4", "test5") and "\n" not in text:
            split_of.setdefault(text, r["split"])
    out: dict = {"detector": DETECTOR_VERSION}
    for way in ways:
        flags: dict[str, list[bool]] = {}
        for attack, split in sorted(split_of.items()):
            text = planted_text(attack, way)
            flags.setdefault(split, []).append(screen_chunks([text], document_text=text)[0].flagged)
        out[way] = {split: f"{sum(v)}/{len(v)}" for split, v in sorted(flags.items())}
    return out


def main() -> None:
    print(json.dumps(planted_flags(planted_text, ("prose", "cell", "spread", "narrow"))))


if __name__ == "__main__":
    main()
