"""Access-marker syntax shared by the Markdown and HTML parsers (BRIEF section 2).

Markers::

    <!-- access: restricted; groups: security-team, legal -->   opens a region / tags a heading
    <!-- /access -->                                          closes a region

Everything fails closed: anything that *looks like* a marker (``<!-- access`` or
``<!-- /access``, any case and spacing) but does not parse exactly, an unknown
level, or a group name that is not a slug raises :class:`ParseError` with the line.
Whether a group exists is checked later by the Django side, which knows the tenant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.structure import ACCESS_LEVELS, AccessPolicy, ParseError

MARKER_LIKE_RE = re.compile(r"<!--\s*/?\s*access\b", re.IGNORECASE)
_OPEN_RE = re.compile(r"<!--[ \t]*access[ \t]*:(?P<body>[^\n]*?)-->", re.IGNORECASE)
_CLOSE_RE = re.compile(r"<!--[ \t]*/[ \t]*access[ \t]*-->", re.IGNORECASE)
# Group slugs as the Django side stores them: lowercase letters, digits, - and _.
GROUP_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
_GROUP_SPLIT_RE = re.compile(r"[\s,]+")


@dataclass(frozen=True)
class Marker:
    """A parsed marker: ``policy`` for an opening one, None for ``<!-- /access -->``."""

    policy: AccessPolicy | None

    @property
    def closes(self) -> bool:
        return self.policy is None


_COMMENT_BODY_RE = re.compile(r"\s*/?\s*access\b", re.IGNORECASE)


def looks_like_marker_comment(content: str) -> bool:
    """True when an HTML comment's *content* (between ``<!--`` and ``-->``) looks like a marker."""
    return _COMMENT_BODY_RE.match(content) is not None


def looks_like_marker(text: str) -> bool:
    """True when ``text`` contains something that is (or tries to be) an access marker."""
    return "<!--" in text and MARKER_LIKE_RE.search(text) is not None


def parse_level(value: object, *, line: int | None, where: str = "access level") -> str:
    """A known access level (case-insensitive), else :class:`ParseError`."""
    level = value.strip().lower() if isinstance(value, str) else None
    if level not in ACCESS_LEVELS:
        raise ParseError(f"unknown {where} {value!r} (expected one of: {', '.join(ACCESS_LEVELS)})", line=line)
    return level


def parse_groups(value: object, *, line: int | None) -> tuple[str, ...]:
    """Group slugs from ``"a, b"``, ``"a b"``, ``"[a, b]"`` or a YAML list; :class:`ParseError` on bad syntax."""
    if value is None:
        return ()
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            stripped = stripped[1:-1]
        items: list[object] = [item for item in _GROUP_SPLIT_RE.split(stripped) if item]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ParseError(f"invalid groups {value!r}: expected a list of group names", line=line)
    groups = []
    for item in items:
        if not isinstance(item, str) or not GROUP_RE.match(item):
            raise ParseError(
                f"invalid group name {item!r} (group names are lowercase slugs: a-z, 0-9, '-', '_')", line=line
            )
        groups.append(item)
    return tuple(groups)


def parse_policy_spec(body: str, *, line: int | None) -> AccessPolicy:
    """The ``restricted; groups: a, b`` part of an opening marker."""
    parts = [part.strip() for part in body.split(";")]
    level = parse_level(parts[0], line=line)
    groups: tuple[str, ...] = ()
    seen_groups = False
    for part in parts[1:]:
        key, sep, value = part.partition(":")
        if not sep or key.strip().lower() != "groups" or seen_groups:
            raise ParseError(f"malformed access marker: unexpected {part!r} (expected 'groups: a, b')", line=line)
        seen_groups = True
        groups = parse_groups(value, line=line)
    return AccessPolicy(level=level, groups=groups)


def parse_marker(text: str, *, line: int | None) -> Marker:
    """Parse ``text`` (surrounding whitespace ignored) as exactly one marker, else :class:`ParseError`."""
    candidate = text.strip()
    if _CLOSE_RE.fullmatch(candidate):
        return Marker(policy=None)
    match = _OPEN_RE.fullmatch(candidate)
    if match is None:
        raise ParseError(
            f"malformed access marker {_excerpt(candidate)} (expected '<!-- access: LEVEL; groups: a, b -->' "
            "or '<!-- /access -->' alone on its line)",
            line=line,
        )
    return Marker(policy=parse_policy_spec(match["body"], line=line))


def split_trailing_marker(text: str, *, line: int | None) -> tuple[str, AccessPolicy | None]:
    """``("Title", policy)`` for a heading ``Title <!-- access: ... -->``; ``(text, None)`` without one.

    The marker must end the heading; any other marker-like text in it is an error.
    """
    stripped = text.rstrip()
    matches = list(_OPEN_RE.finditer(stripped))
    match = matches[-1] if matches else None
    if match is None or match.end() != len(stripped) or looks_like_marker(stripped[: match.start()]):
        raise ParseError(
            f"malformed access marker in heading {_excerpt(stripped)} (a heading marker must be "
            "'<!-- access: LEVEL; groups: a, b -->' at the end of the heading)",
            line=line,
        )
    return stripped[: match.start()].rstrip(), parse_policy_spec(match["body"], line=line)


def _excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
