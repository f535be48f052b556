#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

Commands that talk to the database or the broker need the embedded servers (when
DATABASE_URL / REDIS_URL do not name others): this is where they start. The commands in
``NO_SERVER_COMMANDS`` never touch either, so they start nothing.
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


def needs_servers(argv: list[str]) -> bool:
    """Whether ``manage.py`` must start PostgreSQL and Redis before running these arguments."""
    command = argv[1] if len(argv) > 1 else "help"  # Django reads the subcommand from argv[1] too
    if command == "check":
        return any(arg == "--database" or arg.startswith("--database=") for arg in argv[2:])
    return command not in NO_SERVER_COMMANDS | SELF_STARTING_COMMANDS


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    if needs_servers(sys.argv):
        from bulkhead import embedded_services

        embedded_services.ensure_started()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
