"""The detector behind ``ingestion.screening`` (first version: rules only)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DETECTOR_VERSION = "rules-0"

# The families a reason names, in the order docs/screening.md describes them.
FAMILIES: tuple[str, ...] = (
    "override",  # "ignore previous instructions", "new system prompt"
    "hijack",  # "instead, do X" addressed to the assistant
    "answer_manipulation",  # language, encoding, format of the answer; promotion; fabricated facts
    "code_injection",  # code or commands the answer must include
    "exfiltration",  # links or images that carry data out; "send ... to ..."
    "role_tokens",  # chat-format and role tokens
)

EmbedFn = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Screening:
    """One chunk's verdict. ``spans`` are (start, end) character offsets of the triggering parts."""

    flagged: bool
    score: float
    reasons: tuple[str, ...]
    detector: str
    spans: tuple[tuple[int, int], ...] = ()

    def as_dict(self) -> dict:
        return {
            "flagged": self.flagged,
            "score": round(self.score, 4),
            "reasons": list(self.reasons),
            "detector": self.detector,
            "spans": [list(span) for span in self.spans],
        }


_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "override",
        re.compile(
            r"\b(ignore|disregard|forget)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all)\b[^.\n]{0,20}"
            r"\b(instructions?|prompts?|rules|context)\b",
            re.I,
        ),
    ),
    ("role_tokens", re.compile(r"<\|(im_start|im_end|system|user|assistant)\|>|\[/?INST\]|<</?SYS>>", re.I)),
    (
        "exfiltration",
        re.compile(r"!\[[^\]]*\]\(https?://[^)]*(\?|&)[^)]*=\s*[{<\[]?[^)]*\)", re.I),
    ),
)


def _screen_one(text: str) -> Screening:
    reasons: list[str] = []
    spans: list[tuple[int, int]] = []
    for family, pattern in _RULES:
        for match in pattern.finditer(text):
            if family not in reasons:
                reasons.append(family)
            spans.append(match.span())
    flagged = bool(reasons)
    return Screening(flagged, 1.0 if flagged else 0.0, tuple(reasons), DETECTOR_VERSION, tuple(sorted(spans)))


def screen_chunks(
    texts: Sequence[str], *, document_text: str | None = None, embed: EmbedFn | None = None
) -> list[Screening]:
    """One verdict per text, in order. ``document_text`` (the whole document) and ``embed`` (the
    pipeline's embedding function) are optional context a detector may use."""
    return [_screen_one(text) for text in texts]
