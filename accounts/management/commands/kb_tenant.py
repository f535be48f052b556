from django.core.management.base import BaseCommand

from accounts.management.commands._cli import run_service
from accounts.models import Tenant
from accounts.services import tenant_create
from accounts.tenancy import acting_tenant


class Command(BaseCommand):
    help = "Manage tenants: `kb_tenant create SLUG --name NAME`, `kb_tenant list`."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a tenant")
        create.add_argument("slug")
        create.add_argument("--name", default="")
        sub.add_parser("list", help="list tenants")

    def handle(self, *args, **options):
        if options["action"] == "create":
            tenant = run_service(lambda: tenant_create(slug=options["slug"], name=options["name"]))
            self.stdout.write(f"created tenant {tenant.slug} ({tenant.name})")
        else:
            for tenant in Tenant.objects.order_by("slug"):
                with acting_tenant(tenant.pk):  # each tenant's members are visible only as that tenant
                    members = tenant.memberships.count()
                self.stdout.write(f"{tenant.slug}\t{tenant.name}\t{members} members")
