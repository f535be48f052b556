"""``migrate``, run as the tables' owner: the ``owner`` database alias unless ``--database`` names another.

The application's own login (the ``default`` alias) may read and write rows but owns no table and
may create none (docs/security.md, "The tenant wall in the database")."""

from django.core.management.commands.migrate import Command as MigrateCommand

from accounts.tenancy import owner_alias


class Command(MigrateCommand):
    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(database=None)

    def execute(self, *args, **options):
        options["database"] = options.get("database") or owner_alias()
        return super().execute(*args, **options)
