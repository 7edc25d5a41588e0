"""The model commands' options, parsed with click: one definition that both `newsloop` and its alias
`python -m retrain` use (`newsloop retrain` is the alias's `run`). The work is in retrain.actions."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from core import command_line
from core.command_line import ExitCode
from core.data import DataSourceError
from core.logs import configure_logging
from core.settings.config import ConfigError, load_settings
from retrain import actions


def _with_settings(work: Callable[..., int]) -> Callable[..., None]:
    """A click callback around `work(settings, **options)`: logging set up, settings loaded, a bad setting or
    bad data said in one line (ExitCode.CONFIG, ExitCode.BAD_INPUT), and the process's exit status the one `work`
    returns."""

    @functools.wraps(work)
    def callback(**options: Any) -> None:
        configure_logging(logging.INFO, verbose=command_line.verbose())
        try:
            code = work(load_settings(), **options)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            code = ExitCode.CONFIG
        except DataSourceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            code = ExitCode.BAD_INPUT
        click.get_current_context().exit(code)

    return callback


def _command(name: str, work: Callable[..., int], text: str, *params: Callable[[Any], Any]) -> click.Command:
    """The command `name`, with the help `text` and its options and arguments (`params`, in the order its help lists
    them), that runs `work(settings, **options)` (`_with_settings`)."""
    callback: Any = _with_settings(work)
    for param in reversed(params):  # as decorators apply: the last listed first
        callback = param(callback)
    return click.command(name, help=text)(callback)


class _Forms(click.ParamType):
    """`--forms full,title:8000`: the input forms, or the reason they are not (a usage error)."""

    name = "forms"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        try:
            return actions.parse_forms(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


bootstrap = _command(
    "bootstrap", actions.bootstrap,
    "Train the first champion from NEWSLOOP_DATA (or the seed set), one output per topic of the "
    "data (AG News's four, or the names a CSV of your own uses); prints JSON.",
    click.option("--max-rows", type=int, default=None, help="cap on training rows (default NEWSLOOP_BOOTSTRAP_MAX_ROWS)"),
    click.option("--max-minutes", type=float, default=None,
                 help="training time budget (default NEWSLOOP_BOOTSTRAP_MAX_MINUTES)"),
    click.option("--forms", type=_Forms(), default="full", show_default=True,
                 help="input forms trained on, each with an optional row cap: e.g. full:8000,title,body:6000"),
    click.option("--init-from", default="",
                 help="continue training from this checkpoint folder (e.g. models/starter/checkpoint)"),
)

run = _command(
    "run", actions.retrain,
    "Retrain a challenger on base data + trusted feedback; promote it if it passes the gate. "
    f"Prints JSON. Exit status: {ExitCode.OK:d} promoted, {ExitCode.REFUSED:d} not promoted (the gate "
    f"refused it, or nothing to train on), {ExitCode.BUSY:d} another retrain is running, "
    f"{ExitCode.ERROR:d} failed.",
    click.option("--max-minutes", type=float, default=None, help="training time budget (default NEWSLOOP_RETRAIN_MAX_MINUTES)"),
    click.option("--base-rows", type=int, default=None, help="base rows replayed (default NEWSLOOP_RETRAIN_BASE_ROWS)"),
)

rollback = _command(
    "rollback", actions.rollback,
    "Restore the previous champion; prints JSON.",
    click.option("--reason", default="manual rollback", show_default=True, help="recorded with the rollback"),
    click.option("--expect", default=None, help="roll back only if this version is still the champion"),
)

promote = _command(
    "promote", actions.promote,
    "Serve a challenger the gate refused, on your word: your reason, who and when, and the gate's "
    "numbers go to the registry's history and to MLflow; `newsloop rollback` undoes it as any promotion. "
    "Prints JSON.",
    click.argument("version"),
    click.option("--reason", required=True, help="why you overrule the gate (recorded with the promotion)"),
    click.option("--by", default=None, help="who decides (default: the OS user)"),
    click.option("--expect", default=None, help="promote only if this version is still the champion"),
)

watch = _command(
    "watch", actions.watch,
    "Retrain whenever enough new trusted feedback has arrived (or, with "
    "NEWSLOOP_MONITOR_RETRAIN_ON_ALERT, any while the traffic alert is up).",
    click.option("--interval", type=float, default=None, help="seconds between checks (default 60)"),
    click.option("--min-new", type=int, default=None,
                 help="new trusted answers since the last run needed (default NEWSLOOP_RETRAIN_MIN_FEEDBACK)"),
    click.option("--once", is_flag=True, help="check once and exit"),
)

evaluate = _command(
    "evaluate", actions.evaluate,
    "Score the serving champion on a labelled CSV (AG News's numbered topics, or topic names it "
    "predicts); prints JSON.",
    click.option("--csv", required=True, help="a CSV of label,text or label,title,description rows"),
    click.option("--onnx-file", default=None, help="model.onnx or model.int8.onnx (default: the one served)"),
)

status = _command(
    "status", actions.status,
    "Print a summary of the model registry, the last retrain, the feedback a retrain would see and "
    f"the champion on its served traffic; exits {ExitCode.ALERT:d} when the traffic alert is up.",
    click.option("--json", "as_json", is_flag=True,
                 help="print the whole report as JSON instead (the champion's metadata and every day included)"),
)

baseline = _command(
    "baseline", actions.baseline,
    "TF-IDF + linear SVM on the same rows, for comparison; prints JSON.",
    click.option("--csv", default=None, help="also score on this AG-News-format CSV"),
)

starter = _command(
    "starter", actions.starter,
    "Pack the champion (or --version) as the starter model shipped with the project; prints JSON.",
    click.option("--version", default=None, help="model version to pack (default: the champion)"),
    click.option("--out", default=None, help="output folder (default: models/starter in the project)"),
    click.option("--command", default="", help="the command that trained it, recorded in the model card"),
    click.option("--reexport", is_flag=True,
                 help="instead, export the starter's own checkpoint again with the current export recipe, in place"),
    click.option("--calibrate", is_flag=True,
                 help="instead, fit the starter's temperature on validation (every input form) and record it, in place"),
)

label_errors = _command(
    "label-errors", actions.label_errors,
    "Search the base rows and trusted answers for labels that look wrong (out-of-fold probabilities, "
    "confident learning) and store the candidates for review: `newsloop review label-errors`, or the admin "
    f"page. Prints JSON. Exit status: {ExitCode.OK:d} done, {ExitCode.BAD_INPUT:d} too few rows or bad data.",
    click.option("--limit", type=click.IntRange(0), default=1000, show_default=True,
                 help="candidates stored, most likely error first; 0 = all"),
    click.option("--encoder", type=click.Choice(["base", "champion"]), default="base", show_default=True,
                 help="whose embeddings: the base encoder's (NEWSLOOP_BASE_MODEL, which never saw these labels; found "
                 "more wrong labels on the AG News rows), or the champion's (trained on them)"),
)


# The alias's names; `newsloop` names `run` "retrain".
COMMANDS: dict[str, click.Command] = {
    "bootstrap": bootstrap, "run": run, "rollback": rollback, "promote": promote, "watch": watch, "evaluate": evaluate,
    "status": status, "baseline": baseline, "starter": starter, "label-errors": label_errors,
}


@click.group(commands=COMMANDS, help="Train, evaluate and manage NewsLoop models (alias of `newsloop`'s model commands).")
@command_line.VERBOSE
def alias(verbose: bool) -> None:
    """`python -m retrain`."""


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m retrain ARGS`: the exit status."""
    return command_line.run(alias, argv, "python -m retrain")
