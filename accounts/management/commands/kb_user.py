from django.core.management.base import BaseCommand

from accounts.access import AccessLevel
from accounts.management.commands._cli import run_service
from accounts.models import Role
from accounts.selectors import tenant_get
from accounts.services import api_token_create, membership_create


class Command(BaseCommand):
    help = (
        "Add a user to a tenant: `kb_user create EMAIL --tenant T --role R --clearance L [--groups a,b]`. "
        "Prints a new API token once, as the last line."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a membership (and the user if new) and an API token")
        create.add_argument("email")
        create.add_argument("--tenant", required=True)
        create.add_argument("--role", required=True, help=f"one of {', '.join(Role.values)}")
        create.add_argument("--clearance", required=True, help=f"one of {', '.join(AccessLevel.labels)}")
        create.add_argument("--groups", default="", help="comma-separated group slugs")

    def handle(self, *args, **options):
        tenant = run_service(lambda: tenant_get(slug=options["tenant"]))
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
