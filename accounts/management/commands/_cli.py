"""Shared behaviour of the bootstrap commands: errors become a clear message and exit status 2."""

from __future__ import annotations

from django.core.management.base import CommandError

from accounts.errors import ApplicationError


def run_service(call):
    try:
        return call()
    except ApplicationError as exc:
        raise CommandError(exc.message, returncode=2) from None
