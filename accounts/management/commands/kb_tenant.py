from django.core.management.base import BaseCommand

from accounts.management.commands._cli import run_service
from accounts.models import Tenant
from accounts.services import tenant_create
from accounts.tenancy import acting_tenant


class Command(BaseCommand):
    help = ("Manage tenants: `kb_tenant create SLUG --name NAME`, `kb_tenant list`, `kb_tenant scim-token SLUG` "
            "(mints a SCIM bearer token for the tenant's identity provider; printed once, as the last line), "
            "`kb_tenant release-folder SLUG` (once the folders a deleted or renamed tenant left under "
            "BULKHEAD_SOURCE_ROOTS/SLUG are moved away, the tenant holding SLUG now may read its folders).")

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a tenant")
        create.add_argument("slug")
        create.add_argument("--name", default="")
        sub.add_parser("list", help="list tenants")
        scim = sub.add_parser("scim-token", help="mint a SCIM token for a tenant (printed once, last line)")
        scim.add_argument("slug")
        scim.add_argument("--name", default="", help="what the token is for, e.g. the identity provider")
        release = sub.add_parser("release-folder", help=(
            "after moving away what a deleted or renamed tenant left in <root>/SLUG, let the tenant holding SLUG "
            "now read its folders"))
        release.add_argument("slug")

    def handle(self, *args, **options):
        if options["action"] == "create":
            tenant = run_service(lambda: tenant_create(slug=options["slug"], name=options["name"]))
            self.stdout.write(f"created tenant {tenant.slug} ({tenant.name})")
        elif options["action"] == "release-folder":
            from accounts.services import tenant_slug_release

            released = run_service(lambda: tenant_slug_release(slug=options["slug"]))
            self.stdout.write(f"released the folders of {options['slug']} ({released} earlier holder"
                              f"{'' if released == 1 else 's'} forgotten)")
        elif options["action"] == "scim-token":
            from accounts.scim import scim_token_create
            from accounts.tenancy import tenant_act_for

            tenant = run_service(lambda: tenant_act_for(slug=options["slug"]))
            token, key = run_service(lambda: scim_token_create(tenant=tenant, name=options["name"] or "kb_tenant"))
            self.stdout.write(f"SCIM token {token.prefix} for tenant {tenant.slug}; base URL: <your server>/scim/v2/")
            self.stdout.write(key)
        else:
            for tenant in Tenant.objects.order_by("slug"):
                with acting_tenant(tenant.pk):  # each tenant's members are visible only as that tenant
                    members = tenant.memberships.count()
                self.stdout.write(f"{tenant.slug}\t{tenant.name}\t{members} members")
