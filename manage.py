#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

Commands that talk to the database or the broker need the embedded servers (when
DATABASE_URL / REDIS_URL do not name others): this is where they start. The commands in
``NO_SERVER_COMMANDS`` never touch either, so they start nothing. The project's own commands
(``kb_*``) that use the database need its tables: on a database with unapplied migrations they are
refused in one line (``bulkhead.schema_check``) instead of failing with a traceback.
"""

import os
import sys

# Pure commands: chunking a file, evaluating chunkers, help, version, system checks (without
# --database), collecting static files (the image build runs it with no database).
NO_SERVER_COMMANDS = {"kb_chunk", "kb_chunkeval", "kb_transfer", "help", "version", "--version", "--help", "-h", "check",
                      "collectstatic"}
# Commands that start the servers themselves, once their own checks pass: the demo refuses to start
# (and starts nothing) when another demo runs on the data folder or its port is taken.
SELF_STARTING_COMMANDS = {"kb_demo"}
# Commands that migrate the database themselves (a new data folder has no tables yet).
SELF_MIGRATING_COMMANDS = {"kb_demo", "kb_bench"}


def needs_servers(argv: list[str]) -> bool:
    """Whether ``manage.py`` must start PostgreSQL and Redis before running these arguments."""
    command = argv[1] if len(argv) > 1 else "help"  # Django reads the subcommand from argv[1] too
    if command == "check":
        return any(arg == "--database" or arg.startswith("--database=") for arg in argv[2:])
    return command not in NO_SERVER_COMMANDS | SELF_STARTING_COMMANDS


def needs_migrated_database(argv: list[str]) -> bool:
    """Whether ``manage.py`` must refuse these arguments on a database with unapplied migrations: the
    ``kb_*`` commands that use the database, but for those that migrate it and for ``--help``. Django's
    own commands (``migrate``, ``showmigrations``, ``makemigrations``, ``shell``, ``dbshell``, ...) run as
    they always have."""
    command = argv[1] if len(argv) > 1 else "help"
    if not command.startswith("kb_") or command in SELF_MIGRATING_COMMANDS:
        return False
    if any(arg in ("-h", "--help") for arg in argv[2:]):
        return False
    return needs_servers(argv)


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    if needs_servers(sys.argv):
        from bulkhead import embedded_services

        embedded_services.ensure_started()
    if needs_migrated_database(sys.argv):
        import django

        django.setup()
        from bulkhead import schema_check

        try:
            schema_check.require_migrated()
        except schema_check.NotSetUp as exc:
            print(f"Not set up: {exc}", file=sys.stderr)
            sys.exit(1)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
