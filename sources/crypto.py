"""A source's credentials, encrypted at rest with Fernet (AES-128-CBC + HMAC-SHA256).

The key is ``BULKHEAD_SOURCE_KEY`` (a Fernet key), else one derived from ``SECRET_KEY``. The
credentials are decrypted only in the worker that fetches the source; no API, page, log line or
audit record shows them again (the API answers ``has_credentials``).
"""

from __future__ import annotations

import base64
import hashlib
import json

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


def _fernet() -> Fernet:
    key = settings.BULKHEAD_SOURCE_KEY
    if not key:
        key = base64.urlsafe_b64encode(hashlib.sha256(b"bulkhead-source-credentials:" + settings.SECRET_KEY.encode()).digest())
    return Fernet(key)


def credentials_encrypt(credentials: dict | None) -> str:
    if not credentials:
        return ""
    return _fernet().encrypt(json.dumps(credentials).encode()).decode()


class CredentialsError(ValueError):
    """A source's credentials that cannot be decrypted: its message names nothing of them, read by every admin."""


def credentials_decrypt(token: str) -> dict:
    if not token:
        return {}
    try:
        return json.loads(_fernet().decrypt(token.encode()))
    except InvalidToken:
        raise CredentialsError("the source's credentials cannot be decrypted with this key (BULKHEAD_SOURCE_KEY changed?)") from None
