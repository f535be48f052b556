"""What a listing is made of: its entries, and the two ways an item or a listing fails."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field


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


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
