"""A real SMTP server for the tests (aiosmtpd, on a free loopback port), and the fixture that points
Django's SMTP backend at it. Nothing is mocked: the console's e-mails leave through Django's SMTP
backend, cross a socket and are parsed here as a mail client would."""

from __future__ import annotations

import email
import email.policy
import re
import socket
import threading
import time
from dataclasses import dataclass, field

import pytest

from tests.bounds import START_WAIT

WAIT_SECONDS = START_WAIT  # a bounded wait for a mail sent off the request's thread, not a timing assertion


@dataclass
class Inbox:
    messages: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            self.messages.append((list(envelope.rcpt_tos), message))
        return "250 OK"

    def to(self, address: str) -> list:
        with self.lock:
            return [m for rcpt, m in self.messages if address in rcpt]

    def wait_for(self, address: str, count: int = 1):
        """The ``count``-th message to ``address``, waiting (bounded) for it to arrive."""
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            found = self.to(address)
            if len(found) >= count:
                return found[count - 1]
            time.sleep(0.05)
        raise AssertionError(f"no message #{count} to {address} within {WAIT_SECONDS} s; got {self.messages!r}")


def link_in(message, path_prefix: str) -> str:
    """The first link in ``message``'s body whose path starts with ``path_prefix``."""
    body = message.get_body(preferencelist=("plain",)).get_content()
    found = re.search(r"https?://[^\s/]+(" + re.escape(path_prefix) + r"\S*)", body)
    assert found, f"no {path_prefix} link in:\n{body}"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def smtp_inbox(settings):
    """A running SMTP server; Django's e-mail goes to it for this test. Yields its inbox."""
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 60  # the socket's to the server above (a thread of this process): a bound
    try:
        yield inbox
    finally:
        controller.stop()
