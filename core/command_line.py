"""What every click command line of the project shares: running a command in-process for its exit status,
and the root's --verbose flag."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

VERBOSE = click.option("-v", "--verbose", is_flag=True, help="log debug messages too")


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
        return 1
    return 0
