"""The `agenticos` command.

agenticos up                      start everything (see agenticos.launcher)
agenticos test [pytest args]      run the suite against real PostgreSQL and Redis
agenticos bootstrap               first organization and owner (idempotent)
agenticos create-org --name N --owner-email E
agenticos create-api-key --org SLUG --email EMAIL
agenticos channels-listen         the Mattermost bots' websockets (agenticos up starts it)
agenticos <command> [args]        any management command, dashes for underscores
                                  (audit-verify, tools, spec, ...)
"""

from __future__ import annotations

import os
import sys


def _django_command(argv: list[str]) -> int:
    """Run a management command in this process; its failure becomes a message and an exit code."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings.base")
    import django
    from django.core.management import CommandError, call_command, execute_from_command_line

    name, *rest = argv
    command = name.replace("-", "_")
    if {"-h", "--help"} & set(rest):
        execute_from_command_line(["agenticos", command, *rest])
        return 0
    django.setup()
    try:
        call_command(command, *rest)
    except CommandError as error:
        print(f"agenticos {name}: {error}", file=sys.stderr)
        return error.returncode
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help", "help"}:
        print(__doc__)
        return 0
    command = argv[0]
    if command == "up":
        from .launcher import up

        return up()
    if command == "test":
        from .testrun import run_tests

        return run_tests(argv[1:])
    if command == "manage":
        return _django_command(argv[1:])
    return _django_command(argv)


if __name__ == "__main__":
    sys.exit(main())
