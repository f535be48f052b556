from django.core.management.base import BaseCommand

from accounts.management.commands._cli import run_service
from accounts.services import group_create
from accounts.tenancy import tenant_act_for


class Command(BaseCommand):
    help = "Manage groups: `kb_group create SLUG --tenant T [--name NAME]`, `kb_group list --tenant T`."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a group in a tenant")
        create.add_argument("slug")
        create.add_argument("--tenant", required=True)
        create.add_argument("--name", default="")
        listing = sub.add_parser("list", help="list a tenant's groups")
        listing.add_argument("--tenant", required=True)

    def handle(self, *args, **options):
        tenant = run_service(lambda: tenant_act_for(slug=options["tenant"]))
        if options["action"] == "create":
            group = run_service(lambda: group_create(tenant=tenant, slug=options["slug"], name=options["name"]))
            self.stdout.write(f"created group {group.slug} in tenant {tenant.slug}")
        else:
            for group in tenant.groups.order_by("slug"):
                self.stdout.write(f"{group.slug}\t{group.memberships.count()} members")
