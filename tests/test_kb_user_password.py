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
    assert _set("Pat@pw.example", io.StringIO(GOOD + "\n")) == "password set for pat@pw.example; recorded in 1 tenant\n"
    user.refresh_from_db()
    assert user.check_password(GOOD)
    assert not user.check_password(GOOD + "\n")


@pytest.mark.parametrize("revoke", [False, True], ids=["tokens-kept", "revoke-tokens"])
def test_the_operators_password_is_recorded_where_agreed_to_and_revokes_tokens_when_asked(revoke):
    """Found attacking identity (2026-12-04): ``kb_user set-password`` set the password alone -- no tenant's trail
    heard of it and the account's API tokens, which outlive any password, stayed live (a reset revokes them when the
    person asks). Now each tenant the password opens (an active membership the person agreed to) records it, and
    ``--revoke-tokens`` revokes those memberships' tokens, each recorded. A tenant whose provider made a membership
    the person never agreed to, and one that deactivated them, hear nothing and lose nothing. Run as the
    application's role, under the tenant wall, as the command runs."""
    from accounts.models import ApiToken, Membership, MemberSource, Role
    from accounts.services import api_token_create, membership_update
    from accounts.tenancy import as_application_role
    from audit.models import Action, AuditEvent
    from audit.sentences import Names, render

    a, b, c, d = (tenant_create(slug=f"op-{x}", name=x.upper()) for x in "abcd")
    for t in (a, b, c, d):
        membership_create(tenant=t, email=f"boss@{t.slug}.example", role="admin", clearance="restricted")
    in_a = membership_create(tenant=a, email="pat@op.example", role="editor", clearance="internal")
    in_b = membership_create(tenant=b, email="pat@op.example", role="viewer", clearance="public")
    user = User.objects.get(email="pat@op.example")
    in_c = Membership.objects.create(user=user, tenant=c, role=Role.VIEWER, source=MemberSource.SCIM, consented=False)
    in_d = membership_create(tenant=d, email="pat@op.example", role="viewer", clearance="public")
    membership_update(membership=in_d, is_active=False)
    tokens = {m.tenant_id: api_token_create(membership=m, name="laptop")[0] for m in (in_a, in_b, in_c)}
    records = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    args = ["set-password", "pat@op.example", *(["--revoke-tokens"] if revoke else [])]
    out = io.StringIO()
    with as_application_role():
        call_command("kb_user", *args, stdin=io.StringIO(GOOD + "\n"), stdout=out)
    assert out.getvalue() == "password set for pat@op.example; recorded in 2 tenants" + (
        "; 2 API tokens revoked\n" if revoke else "\n")
    assert User.objects.get(pk=user.pk).check_password(GOOD)

    new = AuditEvent.objects.filter(pk__gt=records).order_by("pk")
    assert {e.tenant_id for e in new} == {a.pk, b.pk}  # c's provider and d (deactivated) hear nothing
    resets = [(e.tenant_id, e.target_type, e.target_id, e.membership_id, e.actor_email, e.details.get("on_server"))
              for e in new if e.action == Action.PASSWORD_RESET]
    assert sorted(resets) == sorted([(a.pk, "membership", str(in_a.pk), None, "", True),
                                     (b.pk, "membership", str(in_b.pk), None, "", True)])
    revocations = sorted((e.tenant_id, e.target_id, e.details["reason"]) for e in new if e.action == Action.TOKEN_REVOKE)
    live = set(ApiToken.objects.filter(revoked_at__isnull=True, membership__user=user).values_list("pk", flat=True))
    reason = "an operator set their password on the server"
    if revoke:
        assert revocations == sorted([(a.pk, str(tokens[a.pk].pk), reason), (b.pk, str(tokens[b.pk].pk), reason)])
        assert live == {tokens[c.pk].pk}
    else:
        assert revocations == [] and live == {tokens[a.pk].pk, tokens[b.pk].pk, tokens[c.pk].pk}
    said = str(render(new.get(tenant_id=a.pk, action=Action.PASSWORD_RESET), Names()))
    assert said == "An operator set a new password for pat@op.example on the server" + (
        " and revoked their API tokens" if revoke else "")


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


def test_a_deactivated_accounts_password_is_set_with_a_warning(user, client):
    """Found attacking identity (2026-12-04, the thirteenth session's third follow-up): on a deactivated account the
    command set the password and said only "password set", so the operator told the person it would work, and it
    did not. It is still set (the account may be turned on again), and the command says plainly that it cannot sign
    in until then; an active account gets no warning."""
    from accounts.services import user_active_set

    out, err = io.StringIO(), io.StringIO()
    call_command("kb_user", "set-password", user.email, stdin=io.StringIO(GOOD + "\n"), stdout=out, stderr=err)
    assert (out.getvalue(), err.getvalue()) == ("password set for pat@pw.example; recorded in 1 tenant\n", "")

    user_active_set(user=user, is_active=False)
    other = GOOD + " again"
    out, err = io.StringIO(), io.StringIO()
    call_command("kb_user", "set-password", user.email, stdin=io.StringIO(other + "\n"), stdout=out, stderr=err)
    assert out.getvalue() == "password set for pat@pw.example; recorded in 1 tenant\n"
    assert err.getvalue() == ("warning: the account pat@pw.example is deactivated: it cannot sign in until it is "
                              'reactivated ("Active" on its page in the Django admin)\n')
    user.refresh_from_db()
    assert user.check_password(other) and not user.is_active
    response = client.post("/sign-in/", {"username": user.email, "password": other})
    assert response.status_code == 200 and "_auth_user_id" not in client.session, response.status_code  # refused


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
