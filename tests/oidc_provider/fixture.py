"""The ``oidc_provider`` fixture: the test OpenID provider as a process of its own, on a free port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.bounds import JOB_WAIT, START_WAIT

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "bulkhead-tests"
CLIENT_SECRET = "a-client-secret-for-the-tests-only"
PASSWORD = "provider password"
WAIT_SECONDS = START_WAIT  # a bounded wait for the process to answer, not a timing assertion


@dataclass
class Provider:
    issuer: str
    claims_path: Path
    people: dict

    def set_person(self, username: str, **claims) -> None:
        self.people[username] = claims
        self.claims_path.write_text(json.dumps(self.people))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _private_key() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


PEOPLE = {
    "alice": {"email": "alice@acme.example", "email_verified": True, "groups": ["SecOps", "Everyone"]},
    "bob": {"email": "bob@acme.example", "email_verified": True, "groups": ["Money"]},
    "eve": {"email": "eve@elsewhere.example", "email_verified": True, "groups": ["SecOps"]},
    "unverified": {"email": "carol@acme.example", "email_verified": False, "groups": []},
    "mallory": {"email": "mallory@acme.example", "email_verified": True, "break": "audience"},
    "late": {"email": "late@acme.example", "email_verified": True, "break": "expired"},
}


@pytest.fixture(scope="module")
def oidc_provider(live_server, tmp_path_factory):
    """A running provider whose client may send people back to ``live_server``'s ``/sso/<slug>/callback/``
    for the tenants ``acme`` and ``other``; its people are :data:`PEOPLE` (password :data:`PASSWORD`)."""
    folder = tmp_path_factory.mktemp("oidc-provider")
    (folder / "key.pem").write_text(_private_key())
    claims = folder / "claims.json"
    people = json.loads(json.dumps(PEOPLE))
    claims.write_text(json.dumps(people))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings", "PYTHONPATH": str(ROOT),
           "OIDC_PROVIDER_DB": str(folder / "provider.sqlite3"), "OIDC_PROVIDER_KEY": str(folder / "key.pem"),
           "OIDC_PROVIDER_CLAIMS": str(claims)}
    redirects = [f"{live_server.url}/sso/{slug}/callback/" for slug in ("acme", "other")]
    subprocess.run([sys.executable, "-m", "tests.oidc_provider.setup", CLIENT_ID, CLIENT_SECRET, *redirects],
                   cwd=ROOT, env=env, check=True, capture_output=True, timeout=JOB_WAIT)
    port = _free_port()
    env["OIDC_PROVIDER_ISSUER"] = f"http://127.0.0.1:{port}/o"
    log = open(folder / "provider.log", "wb")  # noqa: SIM115 -- closed below
    process = subprocess.Popen([sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
                               cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    issuer = f"http://127.0.0.1:{port}/o"
    previous = os.environ.get("AUTHLIB_INSECURE_TRANSPORT")
    os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"  # the test provider speaks plain HTTP on 127.0.0.1
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=5) as answer:
                    assert json.loads(answer.read())["issuer"] == issuer
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("the test provider did not start:\n"
                                         + (folder / "provider.log").read_text(errors="replace")[-3000:]) from None
                time.sleep(0.2)
        yield Provider(issuer=issuer, claims_path=claims, people=people)
    finally:
        if previous is None:
            os.environ.pop("AUTHLIB_INSECURE_TRANSPORT", None)
        else:
            os.environ["AUTHLIB_INSECURE_TRANSPORT"] = previous
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()
