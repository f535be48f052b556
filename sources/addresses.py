"""Which hosts a source may reach: every address of the host public, unless the operator allows
private ones (``BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES``; docs/security.md)."""

from __future__ import annotations

import ipaddress
import socket
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
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)


def check_url_host(url: str) -> str:
    """The one address to connect to for ``url``, after checking every address its host has."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ssh") or not parts.hostname:
        raise ListingError(f"not an http(s) URL: {url[:200]}")
    port = parts.port or {"http": 80, "https": 443, "ssh": 22}[parts.scheme]
    addresses = _addresses(parts.hostname, port)
    if not settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES:
        refused = [a for a in addresses if not address_allowed(a)]
        if refused or not addresses:
            raise UnsafeAddress(f"{parts.hostname} resolves to an address that is not public; refused")
    return addresses[0]
