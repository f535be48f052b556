"""`kb_user set-password EMAIL`: the password comes from standard input, never from the command line,
and Django's validators decide what is acceptable."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from accounts.models import User
from accounts.services import membership_create, tenant_create

pytestmark = pytest.mark.django_db

GOOD = "correct horse battery staple"


@pytest.fixture
def user():
    tenant = tenant_create(slug="pw-co", name="Pw Co")
    membership_create(tenant=tenant, email="pat@pw.example", role="viewer", clearance="internal")
    return User.objects.get(email="pat@pw.example")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _set(email: str, stdin) -> str:
    out = io.StringIO()
    call_command("kb_user", "set-password", email, stdin=stdin, stdout=out)
    return out.getvalue()


def test_a_piped_line_becomes_the_password(user):
    assert _set("Pat@pw.example", io.StringIO(GOOD + "\n")) == "password set for pat@pw.example\n"
    user.refresh_from_db()
    assert user.check_password(GOOD)
    assert not user.check_password(GOOD + "\n")


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("\n", "the password is empty"),
        ("", "the password is empty"),
        ("k3#x\n", "This password is too short. It must contain at least 10 characters."),
        ("12345678901234\n", "This password is entirely numeric."),
        ("password123\n", "This password is too common."),
    ],
)
def test_refused_passwords_change_nothing(user, typed, message):
    before = user.password
    with pytest.raises(CommandError, match=message) as refused:
        _set(user.email, io.StringIO(typed))
    assert refused.value.returncode == 2
    user.refresh_from_db()
    assert user.password == before


def test_at_a_terminal_it_asks_twice_without_echo(user, monkeypatch):
    answers = iter([GOOD, GOOD])
    prompts = []
    monkeypatch.setattr("getpass.getpass", lambda prompt: prompts.append(prompt) or next(answers))
    _set(user.email, Terminal())
    assert prompts == ["Password: ", "Password (again): "]
    user.refresh_from_db()
    assert user.check_password(GOOD)


def test_at_a_terminal_two_different_answers_change_nothing(user, monkeypatch):
    answers = iter([GOOD, GOOD + "!"])
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(answers))
    with pytest.raises(CommandError, match="the two passwords differ"):
        _set(user.email, Terminal())
    user.refresh_from_db()
    assert not user.check_password(GOOD)


def test_an_unknown_user_is_refused(user):
    with pytest.raises(CommandError, match="no user 'nobody@pw.example'"):
        _set("nobody@pw.example", io.StringIO(GOOD + "\n"))


def test_the_password_signs_in_to_the_console(user, client):
    _set(user.email, io.StringIO(GOOD + "\n"))
    response = client.post("/sign-in/", {"username": user.email, "password": GOOD})
    assert response.status_code == 302 and response.url == "/"


def test_make_demo_prints_the_console_and_a_working_password_per_member(client):
    from bulkhead.management.commands.kb_demo import DEMO_URLS, MEMBERS, Command

    out = io.StringIO()
    command = Command(stdout=out)
    tokens, passwords = command._tenant_and_members()
    command._print_help(tokens, passwords, "127.0.0.1", 8123, Path("demo-worker.log"))
    printed = out.getvalue()
    for label, path in DEMO_URLS:  # every URL on the host and port it serves
        assert any(line.split() == [*label.split(), f"http://127.0.0.1:8123{path}"] for line in printed.splitlines())
    assert ("Console", "/") in DEMO_URLS
    for email, *_ in MEMBERS:
        line = next(line for line in printed.splitlines() if line.strip().startswith(email))
        assert passwords[email] in line.split() and tokens[email] in line.split()
        assert printed.count(passwords[email]) == 1  # once, beside the token
        assert User.objects.get(email=email).check_password(passwords[email])
    alice = MEMBERS[0][0]
    response = client.post("/sign-in/", {"username": alice, "password": passwords[alice]})
    assert response.status_code == 302 and response.url == "/"
