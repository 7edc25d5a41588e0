"""The feedback store's command options, parsed with click: one definition that both `newsloop` and its alias
`python -m feedback` use. The work is in feedback.actions."""

from __future__ import annotations

import contextlib
import functools
import logging
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from core import command_line
from core.command_line import ExitCode
from core.data import DataSourceError
from core.logs import configure_logging
from core.settings.config import ConfigError, Settings, load_settings
from core.taxonomy import LEARNING, Taxonomy, TaxonomyConflict, TaxonomyError
from feedback import actions, home_topics
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from feedback.topics import changes
from feedback.trust.bulk import ANY, MAX_SHOWN, narrowing
from feedback.trust.label_errors import Action, Source
from feedback.trust.review import HELD, ReviewFilter
from feedback.trust.rules import MAINTAINER
from feedback.validate import EXPORT_FORMATS, STATUSES


@contextlib.contextmanager
def _exit_statuses() -> Iterator[None]:
    """Logging for a feedback command, and its errors as one line and an exit status (never a traceback): the
    table is core.command_line.ExitCode."""
    configure_logging(logging.WARNING, verbose=command_line.verbose(), fmt="%(levelname)s %(message)s")
    try:
        yield
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.CONFIG)
    except DataSourceError as exc:  # NEWSLOOP_DATA names a file that is not there or that it refuses
        print(f"error: {exc}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.BAD_INPUT)
    except TaxonomyConflict as exc:  # before TaxonomyError, its parent: someone else changed the topics first
        print(f"error: {exc}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.BUSY)
    except TaxonomyError as exc:  # a refused name or change, an unknown topic
        print(f"error: {exc}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.BAD_INPUT)
    except (FeedbackError, sqlite3.DatabaseError) as exc:  # bad rows, a missing file, a database that is not one
        print(f"error: {exc}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.BAD_INPUT)
    except BrokenPipeError:  # the reader stopped reading (`| head`): click ends quietly (status 1), as a pipe wants
        raise
    except OSError as exc:
        detail = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        print(f"error: {detail}", file=sys.stderr)
        click.get_current_context().exit(ExitCode.ERROR)


def _with_store(work: Callable[..., None]) -> Callable[..., None]:
    """A click callback around `work(settings, store, **options)` on the configured feedback database (its
    folder made if missing)."""

    @functools.wraps(work)
    def callback(**options: Any) -> None:
        with _exit_statuses():
            settings = load_settings()
            settings.paths.feedback_db.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.closing(FeedbackStore.from_settings(settings)) as store:
                work(settings, store, **options)

    return callback


@click.command("import", help="Add texts from a CSV or JSONL file (UTF-8) to the labelling pool. CSV: a header with a "
               "'text' column, or 'title' and 'description'. JSONL: one object per line with 'text', or 'title' and "
               "'description'. Any 'label' is ignored unless --checks. Texts may be as long as Classify takes "
               "(NEWSLOOP_MAX_INPUT_CHARS). If any row is bad, nothing is imported and the bad lines are listed; with "
               "--skip-bad the good rows are imported and the bad lines listed.")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--source", default=None, help="name recorded with the items (default: the file name)")
@click.option("--checks", is_flag=True,
              help="the rows are known-answer checks: each needs a 'label' (a topic's name, or its position from 1 in "
              "`newsloop topics list`, as AG News numbers its four 1-4); the "
              "queue mixes them in and annotators who fail them are not trained on")
@click.option("--skip-bad", is_flag=True, help="import the good rows and list the bad ones (default: nothing is "
              "imported when any row is bad)")
@_with_store
def import_(settings: Settings, store: FeedbackStore, file: Path, source: str | None, checks: bool,
            skip_bad: bool) -> None:
    actions.import_pool(store, file, source=source, checks=checks, skip_bad=skip_bad)


@click.command(help="Write every answer as CSV or JSONL, undone and rejected ones included, oldest first.")
@click.option("--format", "fmt", required=True, type=click.Choice(EXPORT_FORMATS), help="the file format")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="output file (default: standard output)")
@_with_store
def export(settings: Settings, store: FeedbackStore, fmt: str, out: Path | None) -> None:
    actions.export(store, fmt=fmt, out=out)


@click.command(help="Print answer and pool counts as JSON.")
@_with_store
def stats(settings: Settings, store: FeedbackStore) -> None:
    actions.stats(store)


@click.command(help="Print the tables of a SQLite feedback FILE (e.g. NEWSLOOP_HOME/feedback.db or a retrain's "
               "backups/ copy) as JSON: tables, row counts, columns and schema version, read only: the file is "
               "neither created nor migrated, so an old backup shows as it is.")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def tables(file: Path) -> None:
    with _exit_statuses():
        actions.tables(file)


@click.group(help="Review answers as the admin view's review panel does: list them by filter, accept or reject "
             "many at once, settle a text people disagree on. Prints JSON.")
def review() -> None:
    """`newsloop review`."""


@review.command("list", help="List the answers the filters match (signed-in or checked people's first, newest "
                "first) and how many match in all.")
@click.option("--status", type=click.Choice([*STATUSES, HELD, ANY]), default="suspicious", show_default=True,
              help=f"the answers' review status; '{HELD}': corrections held out of the queue until one is accepted")
@click.option("--reason", default=None, help="why suspicious: a SQL LIKE pattern, e.g. 'model was % sure of World'")
@click.option("--label", default=None, help="the label the annotator gave")
@click.option("--annotator", default=None, help="the annotator's id, e.g. user:ann")
@click.option("--text", default="", help="a case-insensitive part of the text")
@click.option("--limit", type=click.IntRange(1, MAX_SHOWN), default=200, show_default=True, help="answers listed")
@_with_store
def review_list(settings: Settings, store: FeedbackStore, status: str, reason: str | None, label: str | None,
                annotator: str | None, text: str, limit: int) -> None:
    where = ReviewFilter(status=narrowing(status), reason=narrowing(reason), label=narrowing(label),
                         annotator=narrowing(annotator), text=text, limit=limit)
    actions.review_list(store, where, settings.trust_policy())


def _set_status(status: str) -> click.Command:
    verb = {"accepted": "Accept", "rejected": "Reject"}[status]
    outcome = {"accepted": "they may train", "rejected": "they never will"}[status]

    @click.command(verb.lower(), help=f"{verb} the answers with these IDS at once ({outcome}), in one transaction; "
                   "says which changed, which had that status already, which were taken back and which do not exist.")
    @click.argument("ids", nargs=-1, type=int, required=True)
    @_with_store
    def command(settings: Settings, store: FeedbackStore, ids: Sequence[int]) -> None:
        actions.review_set(store, ids, status)

    return command


review.add_command(_set_status("accepted"))
review.add_command(_set_status("rejected"))


@review.command("resolve", help="Settle the text with this TEXT_HASH (64 hex characters) with a reviewed LABEL: "
                "its answers giving LABEL are accepted, the others rejected, and the maintainer's own answer "
                "records the label.")
@click.argument("text_hash")
@click.argument("label")
@_with_store
def review_resolve(settings: Settings, store: FeedbackStore, text_hash: str, label: str) -> None:
    actions.review_resolve(store, text_hash, label)


@review.group("label-errors", help="Possible label errors, as the admin page's panel shows them: list the newest "
              "search's candidates (`newsloop label-errors` finds them), relabel, keep or exclude them one at a time or "
              "many at once, list the decisions and undo one. Prints JSON.")
def label_errors() -> None:
    """`newsloop review label-errors`."""


_BY = click.option("--by", default=MAINTAINER, show_default=True, help="who decides, recorded with the decision")


@label_errors.command("list", help="The newest search's candidates nobody has decided on, most likely error first, and "
                      "how many there are in all.")
@click.option("--source", type=click.Choice([*(s.value for s in Source), ANY]), default=ANY, show_default=True,
              help="base rows, trusted answers, or any")
@click.option("--limit", type=click.IntRange(0), default=50, show_default=True,
              help="candidates listed; 0 = all (as `newsloop label-errors --limit 0` stores all)")
@_with_store
def label_errors_list(settings: Settings, store: FeedbackStore, source: str, limit: int) -> None:
    actions.label_errors_list(store, narrowing(source), limit)


def _decide(action: Action) -> click.Command:
    words = {Action.RELABEL: "Relabel the candidates with these IDS (each to its suggested label, or --label): they "
             "train with the new label", Action.KEEP: "Keep the label of the candidates with these IDS: never "
             "proposed again while they have it", Action.EXCLUDE: "Exclude the rows of the candidates with these IDS "
             "from training (and from the validation a retrain judges on)"}[action]

    @click.command(action.value, help=f"{words}; in one transaction. Says which were decided, which had a decision "
                   "already and which do not exist.")
    @click.argument("ids", nargs=-1, type=int, required=True)
    @_BY
    @click.option("--label", default=None, hidden=action is not Action.RELABEL,
                  help="the new label for every one (default: each one's suggested label)")
    @_with_store
    def command(settings: Settings, store: FeedbackStore, ids: Sequence[int], by: str, label: str | None) -> None:
        actions.label_errors_decide(store, ids, action, by, label)

    return command


for _action in Action:
    label_errors.add_command(_decide(_action))


@label_errors.command("undo", help="Take back the decisions with these IDS (see `decisions`): their rows train as "
                      "before, and their candidates are listed again.")
@click.argument("ids", nargs=-1, type=int, required=True)
@_BY
@_with_store
def label_errors_undo(settings: Settings, store: FeedbackStore, ids: Sequence[int], by: str) -> None:
    actions.label_errors_undo(store, ids, by)


@label_errors.command("decisions", help="The decisions, newest first, with who, when, the label before and after, "
                      "and whether each was undone.")
@click.option("--limit", type=click.IntRange(0), default=50, show_default=True, help="decisions listed; 0 = all")
@click.option("--live", is_flag=True, help="only those not undone")
@_with_store
def label_errors_decisions(settings: Settings, store: FeedbackStore, limit: int, live: bool) -> None:
    actions.label_errors_decisions(store, limit, live)


@click.group(help="The topics labellers answer and the next challenger learns, versioned in the feedback database: "
             "list them, or add, rename, merge, split or describe one. Each change first says how many base rows, "
             "answers, checks and queued items it touches; --dry-run stops there.")
def topics() -> None:
    """`newsloop topics`."""


def _current(settings: Settings, store: FeedbackStore) -> Taxonomy:
    """The stored topics, or version 1 made of the serving champion's when none is stored yet."""
    return store.topics.current(changes.champion_labels(settings))


@topics.command("list", help="The topics in order (the keys 1-9 on the page follow it), with their descriptions, and "
                f"which the serving model does not predict yet ('{LEARNING}').")
@click.option("--json", "as_json", is_flag=True, help="print JSON (version, topics, every change so far)")
@_with_store
def topics_list(settings: Settings, store: FeedbackStore, as_json: bool) -> None:
    actions.list_topics(_current(settings, store), changes.champion_labels(settings), as_json=as_json)


def _topic_change(name: str, help: str, arguments: Sequence[str], plan: Callable[..., Taxonomy],
                  description: bool = False) -> click.Command:
    """A change command: ARGUMENTS, then --dry-run, --by, --why (and --description where a topic is made)."""

    @_with_store
    def command(settings: Settings, store: FeedbackStore, dry_run: bool, by: str | None, why: str,
                **values: Any) -> None:
        who = {"by": by or _os_user(), "why": why}
        actions.change_topics(store, _current(settings, store), lambda t: plan(t, who=who, **values),
                                     lambda: changes.base_data(settings), dry_run=dry_run)

    command = click.option("--why", default="", help="why, recorded with the change")(command)
    command = click.option("--by", default=None, help="who makes it, recorded with the change (default: the OS user)")(command)
    command = click.option("--dry-run", is_flag=True, help="print what it would touch and write nothing")(command)
    if description:
        command = click.option("--description", default="", help="a one-line description of the new topic")(command)
    for argument in reversed(arguments):
        command = click.argument(argument)(command)
    return click.command(name, help=help)(command)


def _os_user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in a bare container
        return MAINTAINER


topics.add_command(_topic_change(
    "add", "Add a topic NAME: labellers can answer it at once; it is new until a champion predicts it.", ["name"],
    lambda t, who, name, description: t.add(name, description, **who), description=True))
topics.add_command(_topic_change(
    "rename", "Rename TOPIC to NAME: display only; answers, data and models keep its key, and no retrain is needed.",
    ["topic", "name"], lambda t, who, topic, name: t.rename(topic, name, **who)))
topics.add_command(_topic_change(
    "merge", "Merge TOPIC into INTO: its answers and base rows count as INTO from now on; the next challenger has "
    "no TOPIC.", ["topic", "into"], lambda t, who, topic, into: t.merge(topic, into, **who)))
topics.add_command(_topic_change(
    "split", "Split a new topic NAME out of TOPIC: answers and base rows labelled TOPIC before the split become "
    "'TOPIC or NAME' (a set of allowed topics, not a guess); new answers are exact.", ["topic", "name"],
    lambda t, who, topic, name, description: t.split(topic, name, description, **who), description=True))
@topics.command("adopt", help="Make this home's topic list the serving champion's topics (with --data, the topics "
                "NEWSLOOP_DATA names), as its next version: the fix `newsloop serve` and `newsloop bootstrap` name "
                "when a champion or data of other topics meets this home. Earlier answers stay stored; those naming "
                "a topic no longer listed train nothing. A list nobody answered under is replaced outright.")
@click.option("--data", "from_data", is_flag=True,
              help="the data's topics instead of the champion's (before bootstrapping on that data)")
@click.option("--by", default=None, help="who makes it, recorded with the change (default: the OS user)")
@_with_store
def topics_adopt(settings: Settings, store: FeedbackStore, from_data: bool, by: str | None) -> None:
    from core.data import data_name, source_labels

    if from_data:
        labels, whose = source_labels(settings.data.source, settings.data.use_extra), f"{data_name(settings.data.source)}'s"
    else:
        labels, whose = changes.champion_labels(settings), "the champion's"
    adopted = home_topics.adopt(store, labels, by=by or _os_user(), why=f"adopted {whose} topics")
    print(adopted.words())


topics.add_command(_topic_change(
    "describe", "Give TOPIC the one-line description TEXT (what labellers read beside it).", ["topic", "text"],
    lambda t, who, topic, text: t.describe(topic, text, **who)))


@click.group(help="The labelling queue: push the articles a search finds to the front of every annotator's queue "
             "(to find examples of a new topic), or clear them.")
def queue() -> None:
    """`newsloop queue`."""


@queue.command("push", help="Put the pool articles nearest QUERY (words, or a whole article: more like this) first in "
               "every annotator's queue, after due checks, until answered. Answered articles, checks and the traffic "
               "set are never pushed.")
@click.argument("query")
@click.option("--count", default=50, show_default=True, type=click.IntRange(1, 1000), help="articles to push")
@click.option("--by", default=None, help="who pushes them, recorded with them (default: the OS user)")
@_with_store
def queue_push(settings: Settings, store: FeedbackStore, query: str, count: int, by: str | None) -> None:
    actions.queue_push(store, query, count, by or _os_user())


@queue.command("clear", help="Take every pushed article out of the front of the queue.")
@_with_store
def queue_clear(settings: Settings, store: FeedbackStore) -> None:
    actions.queue_clear(store)


@topics.group("unlisted", invoke_without_command=True,
              help='The "None of these" answers labellers gave (no topic fitted), grouped into candidate topics by the '
              "names they typed and by what the texts say; create a topic from a group's answers, or dismiss them.")
@click.option("--json", "as_json", is_flag=True, help="print JSON (each group with its answers)")
@click.pass_context
def topics_unlisted(ctx: click.Context, as_json: bool) -> None:
    if ctx.invoked_subcommand is None:
        _list_unlisted(as_json=as_json)  # settings and store come from _with_store


@_with_store
def _list_unlisted(settings: Settings, store: FeedbackStore, as_json: bool) -> None:
    actions.list_unlisted(store, as_json=as_json)


def _ids(value: str) -> list[int]:
    try:
        return [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter("ids are whole numbers separated by commas, as `newsloop topics unlisted` lists them") from None


@topics_unlisted.command("create", help="Create the topic NAME (or use the current topic of that name) with the "
                         "answers --ids as its first labels, accepted: the answers you confirm belong to it.")
@click.argument("name")
@click.option("--ids", required=True, help="the answers' ids, comma-separated (from `newsloop topics unlisted`)")
@click.option("--description", default="", help="a one-line description of a new topic")
@click.option("--by", default=None, help="who makes it, recorded with the change (default: the OS user)")
@_with_store
def topics_unlisted_create(settings: Settings, store: FeedbackStore, name: str, ids: str, description: str,
                           by: str | None) -> None:
    placed = store.unlisted.place(_ids(ids), name, by=by or _os_user(), description=description,
                                  taxonomy=_current(settings, store))
    print(placed.words())


@topics_unlisted.command("dismiss", help="Set aside the answers --ids: no topic is missing for them.")
@click.option("--ids", required=True, help="the answers' ids, comma-separated (from `newsloop topics unlisted`)")
@click.option("--by", default=None, help="who decides, recorded with them (default: the OS user)")
@_with_store
def topics_unlisted_dismiss(settings: Settings, store: FeedbackStore, ids: str, by: str | None) -> None:
    print(f"dismissed {store.unlisted.dismiss(_ids(ids), by=by or _os_user())} answer(s)")


@click.group(help="The golden set: your own labelled articles that judge every new model and are never trained on. "
             "Once there are enough of your own held-out articles (NEWSLOOP_GATE_OWN_ROWS, this set included), they "
             "decide promotions.")
def golden() -> None:
    """`newsloop golden`."""


@golden.command("import", help="Add or relabel the articles of a CSV or JSONL file (UTF-8): a 'label' (a topic's name, "
                "or its position from 1 in `newsloop topics list`) and a 'text' (or 'title' and 'description'). If "
                "any row is bad, nothing is imported and the bad lines are listed.")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--by", default=None, help="who imports it, recorded with the rows (default: the OS user)")
@_with_store
def golden_import(settings: Settings, store: FeedbackStore, file: Path, by: str | None) -> None:
    actions.golden_import(store, file, by=by or _os_user())


@golden.command("status", help="How many golden articles there are, per topic, and the newest import.")
@_with_store
def golden_status(settings: Settings, store: FeedbackStore) -> None:
    actions.golden_status(store)


@golden.command("clear", help="Remove every golden article (answers and the pool are untouched).")
@click.option("--yes", is_flag=True, required=True, help="confirm: the set cannot be brought back but by importing it")
@_with_store
def golden_clear(settings: Settings, store: FeedbackStore, yes: bool) -> None:
    print(f"removed {store.golden.clear()} golden article(s)")


COMMANDS: dict[str, click.Command] = {
    "import": import_, "export": export, "stats": stats, "tables": tables, "review": review, "topics": topics,
    "queue": queue, "golden": golden,
}


@click.group(commands=COMMANDS, help="Manage the NewsLoop feedback database (NEWSLOOP_HOME/feedback.db); "
             "the alias of `newsloop`'s feedback commands.")
def alias() -> None:
    """`python -m feedback`."""


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m feedback ARGS`: the exit status."""
    return command_line.run(alias, argv, "python -m feedback")
