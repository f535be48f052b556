"""What a listing is made of: its entries, and the two ways an item or a listing fails."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

# A lister's rename detection: (vanished path -> version, new path -> version) -> new path -> old path.
RenameFinder = Callable[[dict[str, str], dict[str, str]], dict[str, str]]


class ListingError(Exception):
    pass


class Skip(Exception):
    """An item that is not ingested, with the reason (binary, a submodule, an LFS pointer, ...)."""


@dataclass
class Entry:
    path: str
    version: str
    read: Callable[[], bytes]
    size: int | None = None
    skip: str = ""
    etag: str = ""
    last_modified: str = ""
    not_modified: bool = False  # a web page the server answered 304 for
    content_type: str = ""


@dataclass
class Listing:
    entries: list[Entry]
    revision: str = ""
    complete: bool = True
    errors: list[dict] = field(default_factory=list)
    # Content renames beyond identical content (Git's rename detection); None: identical content only.
    renames: RenameFinder | None = None


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
