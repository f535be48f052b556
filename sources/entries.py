"""What a listing is made of: its entries, and the two ways an item or a listing fails."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# A lister's rename detection: (vanished path -> version, new path -> version) -> new path -> old path.
RenameFinder = Callable[[dict[str, str], dict[str, str]], dict[str, str]]


class ListingError(Exception):
    """A listing that failed. When its message names a path of the source -- a subfolder that could not be listed
    (``path`` ending in ``/``, relative to the source's root), a website's page -- ``path`` says which,
    ``without_path`` is the message as an admin who may not read that path reads it, and ``listing`` is what had
    been listed by then (the access files read so far: the root's and those above it), which decides who may
    (``sources.services.listing_error_access``; docs/sources.md, "Who sees a source's paths")."""

    def __init__(self, message: str = "", *, path: str = "", without_path: str = "", listing: Listing | None = None):
        super().__init__(message)
        self.path = path
        self.without_path = without_path
        self.listing = listing


class OutOfTime(ListingError):
    """The listing's caller ran out of time (a preview, ``BULKHEAD_SOURCE_PREVIEW_SECONDS``); ``done`` says how far
    it got ("after reading 3 of the 13 pages found so far"). Nothing is synced or deleted on a listing that stops."""

    def __init__(self, done: str):
        super().__init__(f"out of time {done}")
        self.done = done


def out_of_time(deadline: float | None) -> bool:
    """Whether ``deadline`` (``time.monotonic()``; None: none) has passed."""
    return deadline is not None and time.monotonic() > deadline


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
class AccessAbove:
    """A folder between the tenant's folder and a folder source's root or a local Git repository (its parent
    included): its files
    that are the access file or named like it, each an :class:`Entry` named by its file name."""

    folder: str  # relative to the tenant's folder ("": the tenant's folder itself)
    prefix: str  # the source's root relative to ``folder``: its globs match ``prefix/<path>``
    entries: list[Entry]


@dataclass
class Listing:
    entries: list[Entry]
    revision: str = ""
    complete: bool = True
    errors: list[dict] = field(default_factory=list)
    # Content renames beyond identical content (Git's rename detection); None: identical content only.
    renames: RenameFinder | None = None
    # A folder source, or a local Git repository, below the tenant's folder: the folders above its root, outermost first.
    above: list[AccessAbove] = field(default_factory=list)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
