"""What every click command line of the project shares: the one table of exit statuses, running a command
in-process for its exit status, and the root's --verbose flag."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import IntEnum

import click


class ExitCode(IntEnum):
    """The exit status of every command (`newsloop`, `python -m retrain`, `python -m feedback`, `python app.py`),
    one meaning each (`meaning`). Scripts, cron jobs and the admin view's jobs read them; the CLI reference lists
    them."""

    OK = 0
    ERROR = 1
    BAD_INPUT = 2
    REFUSED = 3
    BUSY = 4
    ALERT = 5
    CONFIG = 6

    @property
    def meaning(self) -> str:
        return _MEANINGS[self]


# What each exit status means, in a line: the CLI reference's table is generated from it (newsloop.reference).
_MEANINGS = {
    ExitCode.OK: "done; for a retrain, its challenger was promoted",
    ExitCode.ERROR: "failed: no champion to work on, a file that cannot be written, or an unexpected error",
    ExitCode.BAD_INPUT: "bad input: the command line (a usage error), or an input file (data, pool, database) that "
    "is missing or whose rows or format are wrong",
    ExitCode.REFUSED: "a retrain kept the champion: the gate refused its challenger, or it had nothing to train on",
    ExitCode.BUSY: "another retrain holds the lock, or another maintainer changed the topics first: nothing was done",
    ExitCode.ALERT: "`status`: the champion's estimated accuracy on its served traffic raised the alert",
    ExitCode.CONFIG: "a setting that cannot be used (the message names it): nothing was done; the server does not start",
}

VERBOSE = click.option("-v", "--verbose", is_flag=True,
                       help="log debug messages too, and the libraries' INFO lines (Alembic, MLflow), quiet by default")


def verbose() -> bool:
    """Whether the command line's root (`newsloop` or `python -m retrain`) was given -v/--verbose."""
    return bool(click.get_current_context().find_root().params.get("verbose"))


def run(command: click.Command, argv: Sequence[str] | None, prog_name: str) -> int:
    """Run `command` on `argv` (default: the process's own arguments) as its program would, usage errors and
    all, and return the exit status instead of leaving the process (callers and tests read it)."""
    try:
        command.main(args=None if argv is None else list(argv), prog_name=prog_name, standalone_mode=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)  # as Python does for sys.exit("message")
        return ExitCode.ERROR
    return ExitCode.OK
