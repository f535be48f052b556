"""The one place that decides what text is embedded for a chunk.

The stored span (``document.text[start:end]``) is the chunk's body; what the
model embeds is the body with its context in front, so that a chunk deep in a
document still says what it is about (``Billing > Refunds > Enterprise
exceptions``).
"""

from __future__ import annotations

from collections.abc import Sequence

HEADING_SEPARATOR = " > "
# A blank line between prefix and body: whitespace keeps the token counts of the
# parts additive (the tokenizer splits on it), which the chunker relies on.
PART_SEPARATOR = "\n\n"


def build_prefix(heading_path: Sequence[str], context: str = "", *, policy: str = "heading_path") -> str:
    """The text put in front of every body of a section (empty for policy ``"none"``)."""
    if policy == "none":
        return ""
    parts = []
    path = HEADING_SEPARATOR.join(h.strip() for h in heading_path if h and h.strip())
    if path:
        parts.append(path)
    if context and context.strip():
        parts.append(context.strip())
    return PART_SEPARATOR.join(parts)


def join_embed_text(prefix: str, body: str) -> str:
    """Prefix and body joined the way the model will see them."""
    if not prefix:
        return body
    return prefix + PART_SEPARATOR + body


def build_embed_text(heading_path: Sequence[str], context: str, body: str, *, policy: str = "heading_path") -> str:
    """The text to embed for a chunk: heading path, context lines, then the body."""
    return join_embed_text(build_prefix(heading_path, context, policy=policy), body)
