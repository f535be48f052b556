"""Link targets out of the text a model embeds (issue 30, eighteenth round; docs/benchmarks.md): a candidate
measured as a scratch (``bench.chunkeval``'s ``bulkhead:...,delink=1``) and **dropped** -- on the 96 development
sources it lost recall (-0.2 [-0.6, +0.2]; 18 questions gained, 23 lost) and leave-one-source-out never chose it.
Kept here with its record, not in the chunker.

A chunk of documentation often says little and links a lot: badge lines, reference definitions, sponsor
``<a><img>`` lines, inline links. The embedding is a mean over the model's tokens, and a URL is many tokens
(in the transfer suite's chunks that hold one, 41% of the tokens are URL tokens), so the targets dilute what
the chunk says. :func:`without_link_targets` keeps what a reader reads -- a link's text, an image's alt text, a
bare URL's host -- and drops the rest. Only the embedded text changes: a chunk's span, its stored text and
what a search returns are the document's own.

Pure Python (no Django, no model).
"""

from __future__ import annotations

import re

# A Markdown image or link with an inline target: ``![alt](target)`` / ``[text](target "title")``. The text holds no
# bracket (an image inside a link is replaced first, so ``[![alt](img)](href)`` becomes ``[alt](href)``, then ``alt``).
_MD_INLINE = re.compile(r"!?\[([^\[\]\n]*)\]\([^()\s]*(?:\s+\"[^\"\n]*\")?\)")
# A reference-style link or image: ``[text][ref]`` / ``![alt][ref]`` / ``[text][]``.
_MD_REFERENCE = re.compile(r"!?\[([^\[\]\n]*)\]\[[^\[\]\n]*\]")
# A line that only defines a Markdown reference: ``[ref]: target`` (maybe indented, maybe with a title).
_MD_DEFINITION = re.compile(r"^[ \t]{0,3}\[[^\[\]\n]+\]:[ \t]*\S+.*$", re.MULTILINE)
# A reST link with an embedded target: `` `text <target>`_ `` (or ``__``).
_RST_LINK = re.compile(r"`([^`<\n]*?)\s*<[^<>`\n]+>`__?")
# reST lines that only name a target or an image: ``.. _name: target``, ``.. image:: target``,
# ``.. |name| image:: target`` (their option lines, indented under them, stay: they are short words).
_RST_TARGET = re.compile(r"^[ \t]*\.\.[ \t]+(?:_[^:\n]+:|(?:\|[^|\n]+\|[ \t]+)?image::)[ \t]*\S*[ \t]*$", re.MULTILINE)
# An HTML ``<img>`` (its alt text is kept) and any other tag (dropped).
_IMG = re.compile(r"<img\b[^<>]*?>", re.IGNORECASE)
_ALT = re.compile(r"\balt\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.IGNORECASE)
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
# A bare URL; its host is kept.
_URL = re.compile(r"(?<![A-Za-z0-9])https?://(?:www\.)?([A-Za-z0-9.-]+)[^\s<>\"'`)\]]*")
_SPACES = re.compile(r"[ \t]{2,}")
_HAS_WORD = re.compile(r"[^\W_]")


def _alt(match: re.Match) -> str:
    found = _ALT.search(match.group(0))
    return (found.group(1) if found.group(1) is not None else found.group(2)) if found else ""


def without_link_targets(text: str) -> str:
    """``text`` as a reader reads it, without link targets (see the module docstring): a link's text, an image's alt
    text and a bare URL's host kept; reference definitions, reST target and image lines, and HTML tags dropped. The
    text unchanged when nothing of it would be left (no letter or digit)."""
    out = _MD_DEFINITION.sub("", text)
    out = _RST_TARGET.sub("", out)
    for _ in range(3):  # nested: an image inside a link, a link inside an image's alt (rare)
        replaced = _MD_REFERENCE.sub(r"\1", _MD_INLINE.sub(r"\1", out))
        if replaced == out:
            break
        out = replaced
    out = _RST_LINK.sub(r"\1", out)
    out = _IMG.sub(_alt, out)
    out = _TAG.sub("", out)
    out = _URL.sub(r"\1", out)
    out = _SPACES.sub(" ", out)
    out = re.sub(r"\n{3,}", "\n\n", out).strip()
    return out if _HAS_WORD.search(out) else text
