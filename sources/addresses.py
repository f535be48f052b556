"""Which hosts a source may reach: every address of the host public, unless the operator allows
private ones (``BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES``; docs/security.md). And what a Git source's
url is by Git's own reading: a URL, a local path or the scp-like SSH form ``user@host:path``."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from sources.entries import ListingError


class UnsafeAddress(ListingError):
    pass


def _addresses(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise ListingError(f"cannot resolve {host}") from None
    return sorted({info[4][0] for info in infos})


def address_allowed(address: str) -> bool:
    """Whether ``address`` is public. IPv6 forms that carry an IPv4 address or reach a private network
    count as what they lead to: IPv4-mapped as its IPv4 address; 6to4 (``2002::/16``: a 6to4 relay or
    tunnel sends it to the IPv4 address inside, ``2002:7f00:1::`` to 127.0.0.1), Teredo and the
    deprecated site-local ``fec0::/10`` (routed inside a site), which Python counts as global, are
    refused outright (found attacking the demo)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.sixtofour is not None or ip.teredo is not None or ip.is_site_local:
            return False
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def check_url_host(url: str, *, allow_private: bool | None = None) -> str:
    """The one address to connect to for ``url``, after checking every address its host has."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # a bracketed host that is no address, a port that is no number (urllib quotes them)
        host = port = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https", "ssh") or not host:
        raise ListingError(f"not an http(s) URL: {url[:200]}")
    return check_host(host, port or {"http": 80, "https": 443, "ssh": 22}[parts.scheme], allow_private=allow_private)


def check_host(host: str, port: int, *, allow_private: bool | None = None) -> str:
    """The one address to connect to for ``host``, after checking every address it has. Without private
    addresses allowed (``allow_private``; None: ``BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES``), a name that
    does not resolve is refused in the same words as one that resolves to a private address: two
    messages would tell a tenant's admin which internal names exist (found attacking the demo)."""
    refusal = f"{host} is not public or does not resolve; refused"
    if settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES if allow_private is None else allow_private:
        return _addresses(host, port)[0]
    try:
        addresses = _addresses(host, port)
    except ListingError:
        raise UnsafeAddress(refusal) from None
    if not addresses or any(not address_allowed(a) for a in addresses):
        raise UnsafeAddress(refusal)
    return addresses[0]


# ----------------------------------------------------------------------------- a Git source's url

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?\Z")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*\Z")


@dataclass(frozen=True)
class ScpAddress:
    """Git's scp-like SSH form ``[user@]host:path``: ``ssh://[user@]host/path`` but for the path, which
    is sent as written (relative to the login's home folder unless it starts with ``/``)."""

    user: str  # "" when the url names none
    host: str
    path: str


def git_url_form(url: str) -> str:
    """``"url"``, ``"local"`` or ``"scp"``: how ``git clone`` reads ``url``. ``scheme://...`` is a URL;
    else a string with no ``:``, or with a ``/`` before its first ``:``, is a local path
    (``/srv/repos/a:b``); anything else is the scp-like SSH form, ``host:path`` (``foo:bar`` is the
    host ``foo``)."""
    if _SCHEME.match(url):
        return "url"
    colon, slash = url.find(":"), url.find("/")
    if colon == -1 or -1 < slash < colon:
        return "local"
    return "scp"


def scp_address(url: str) -> ScpAddress:
    """``url`` (of the scp-like form, :func:`git_url_form`) parsed, or :class:`ListingError` naming what
    is refused. Stricter than Git where Git's reading is ambiguous or dangerous: the bracketed
    ``[host:port]:path`` and IPv6 forms are refused (``ssh://`` says the same unambiguously), as are a
    host or user that is not a plain name (one starting with ``-`` would be an option of ``ssh``), an
    empty path, a path starting with ``-`` (an option of ``git-upload-pack``) and control characters."""
    if any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise ListingError("url: control characters are not allowed in a Git url")
    login, path = url.split(":", 1)
    user, at, host = login.rpartition("@")
    if "[" in login:
        raise ListingError("url: the bracketed form [host]:path is not accepted; write ssh://user@[host]:port/path")
    if not _HOST.match(host):
        raise ListingError(f"url: {host[:100]!r} is not a host name (user@host:path)")
    if at and not _USER.match(user):
        raise ListingError("url: the user before @ is letters, digits, '.', '_' or '-' (not first) (user@host:path)")
    if not path:
        raise ListingError("url: no repository path after the ':' (user@host:path)")
    if path.startswith("-"):
        raise ListingError("url: a repository path starting with '-' is refused")
    return ScpAddress(user=user, host=host, path=path)


def credential_origin(url: str) -> tuple[str, str, int | None]:
    """Where a Git source's credentials go for ``url``: (scheme, host, port), the port Git's default when the url
    names none; ``("local", "", None)`` for a local path. ``ssh://host/path`` and ``host:path`` are the same
    origin; ``http`` and ``https`` are not. A url that cannot be read is its own origin (it matches no other)."""
    url = url.strip()
    form = git_url_form(url)
    if form == "local":
        return ("local", "", None)
    if form == "scp":
        login = url.split(":", 1)[0]
        return ("ssh", login.rpartition("@")[2].lower(), 22)
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:  # a port that is not a number
        return ("unreadable", url, None)
    if scheme == "file":
        return ("local", "", None)
    return (scheme, host, port or {"http": 80, "https": 443, "ssh": 22}.get(scheme))
