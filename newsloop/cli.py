"""`newsloop`: one command line for serving, the model commands (retrain.cli), the feedback commands
(feedback.cli) and the effective configuration. It only parses and calls; the work is where its package is."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict

import click

from core import command_line
from core.command_line import ExitCode
from core.settings.config import ConfigError
from feedback import cli as feedback_cli
from retrain import cli as retrain_cli


@click.command(help="Serve the page and the REST API (what `python app.py`, a Space's entry point, does): the "
               "champion, or the shipped starter when there is none, on NEWSLOOP_HOST:NEWSLOOP_PORT; prints the "
               "address once it listens.")
@click.option("--host", default=None, help="address to listen on (default NEWSLOOP_HOST, 127.0.0.1; 0.0.0.0: every one)")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="port to listen on (default NEWSLOOP_PORT, 7860)")
def serve(host: str | None, port: int | None) -> None:
    import app  # the server's wiring; imported here so that the other commands never load the web stack

    chosen = {name: value for name, value in (("host", host), ("port", port)) if value is not None}
    app.main(verbose=command_line.verbose(), **chosen)


@click.command(help="Print every setting with its effective value and where it came from: the default, the "
               "environment (env) or the NEWSLOOP_ENV_FILE file (file:<path>). Secrets show as ******** when set.")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list instead of a table")
def config(as_json: bool) -> None:
    from core.settings.reference import effective_settings

    try:
        rows = [asdict(row) for row in effective_settings()]
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.CONFIG)
    if as_json:
        print(json.dumps(rows, indent=2, default=str))
        return
    width = max((len(row["env"]) for row in rows), default=0)
    for row in rows:
        print(f"{row['env']:<{width}}  {row['value']}  ({row['source']})")


COMMANDS: dict[str, click.Command] = {
    "serve": serve,
    **{("retrain" if name == "run" else name): command for name, command in retrain_cli.COMMANDS.items()},
    **feedback_cli.COMMANDS,
    "config": config,
}


@click.group(commands=COMMANDS, context_settings={"max_content_width": 120},
             help="NewsLoop: a news-topic classifier that learns from its users' corrections. `python -m retrain "
             "...` (where `run` is `retrain`) and `python -m feedback ...` are aliases of these commands.")
@command_line.VERBOSE
def cli(verbose: bool) -> None:
    """`newsloop`."""


def main(argv: Sequence[str] | None = None) -> int:
    """The `newsloop` console script: the exit status."""
    return command_line.run(cli, argv, "newsloop")
