import getpass
import sys

from django.core.management.base import BaseCommand, CommandError

from accounts.invitations import operator_password_set
from accounts.management.commands._cli import run_service
from accounts.models import Role
from accounts.policy import LEVEL_NAMES, AccessLevel
from accounts.services import api_token_create, membership_create
from accounts.tenancy import tenant_act_for


class Command(BaseCommand):
    help = (
        "Add a user to a tenant: `kb_user create EMAIL --tenant T --role R --clearance L [--groups a,b]` "
        "(prints a new API token once, as the last line). Set a user's console password: "
        "`kb_user set-password EMAIL [--revoke-tokens]` (asked twice at a terminal; one line read from a pipe): "
        "recorded in the audit trail of each tenant the password opens (the account's active memberships it agreed "
        "to); --revoke-tokens also revokes the API tokens of those memberships, each recorded, as a reset does."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a membership (and the user if new) and an API token")
        create.add_argument("email")
        create.add_argument("--tenant", required=True)
        create.add_argument("--role", required=True, help=f"one of {', '.join(Role.values)}")
        create.add_argument("--clearance", required=True, help=f"one of {', '.join(LEVEL_NAMES)}")
        create.add_argument("--groups", default="", help="comma-separated group slugs")
        set_password = sub.add_parser(
            "set-password",
            help="set the user's sign-in password, read from standard input (never an argument); recorded in the "
                 "audit trail of each tenant the password opens (active memberships the person agreed to)",
        )
        set_password.add_argument("email")
        set_password.add_argument(
            "--revoke-tokens", action="store_true",
            help="also revoke every live API token of those memberships (each recorded in its tenant), as a "
                 "password reset does: for an account that may be compromised",
        )

    def handle(self, *args, **options):
        if options["action"] == "set-password":
            return self._set_password(options)
        tenant = run_service(lambda: tenant_act_for(slug=options["tenant"]))
        groups = [g.strip() for g in options["groups"].split(",") if g.strip()]

        def create():
            membership = membership_create(
                tenant=tenant,
                email=options["email"],
                role=options["role"],
                clearance=options["clearance"],
                group_slugs=groups,
            )
            return membership, api_token_create(membership=membership, name="kb_user")[1]

        membership, key = run_service(create)
        self.stdout.write(
            f"created {membership.user.email} in {tenant.slug}: role {membership.role}, "
            f"clearance {AccessLevel(membership.clearance).label}, groups {','.join(groups) or '-'}"
        )
        self.stdout.write("API token (shown once):")
        self.stdout.write(key)

    def _set_password(self, options) -> None:
        password = self._read_password(options.get("stdin") or sys.stdin)
        done = run_service(lambda: operator_password_set(email=options["email"], password=password,
                                                         revoke_tokens=options["revoke_tokens"]))
        revoked = len(done.tokens_revoked)
        self.stdout.write(
            f"password set for {done.user.email}; recorded in {done.tenants} tenant{'' if done.tenants == 1 else 's'}"
            + (f"; {revoked} API token{'' if revoked == 1 else 's'} revoked" if options["revoke_tokens"] else "")
        )
        if not done.user.is_active:  # as the password's transaction found it, its row locked
            self.stderr.write(f"warning: the account {done.user.email} is deactivated: it cannot sign in until it is "
                              f"reactivated (\"Active\" on its page in the Django admin)", style_func=lambda text: text)

    @staticmethod
    def _read_password(stdin) -> str:
        """Twice without echo at a terminal; else the first line (its line ending dropped)."""
        if stdin.isatty():
            first = getpass.getpass("Password: ")
            if getpass.getpass("Password (again): ") != first:
                raise CommandError("the two passwords differ; nothing was changed", returncode=2)
            return first
        return stdin.readline().rstrip("\r\n")
