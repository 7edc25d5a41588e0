"""A home knows its data: a champion or data of other topics than the home's topic list is refused in one sentence
naming the fix, before anything is trained or served (feedback.home_topics); a list nobody worked under simply
becomes the new topics; `newsloop topics adopt` is the fix that keeps the home; a page never offers topics the model
cannot answer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.command_line import ExitCode
from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.settings.config import PROJECT_ROOT
from feedback.__main__ import main as feedback_main
from feedback.home_topics import ADOPT, HomeMismatch, adopt, data_fits_home, fits, foreign
from feedback.labelling.answers import AnswerInput
from feedback.store import FeedbackStore
from testkit.data import OWN_TOPICS, own_topics_csv
from testkit.models import build_tiny_champion, tiny_settings
from testkit.pg_cluster import StoreFactory

TOPICS = tuple(OWN_TOPICS.values())  # Politics, Sport, Money


@pytest.fixture(scope="module")
def own_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose champion was bootstrapped (tiny random encoder) on the three-topic CSV, with no feedback yet."""
    folder = tmp_path_factory.mktemp("own_home")
    build_tiny_champion(folder / "home", data=str(own_topics_csv(folder / "own.csv")))
    return folder / "home"


def ag_news_home(store: FeedbackStore, answers: int = 0) -> None:
    """What a first `newsloop serve` of a fresh clone leaves: the AG News list stored, the demo pool, `answers`."""
    store.topics.seed(LABELS, why="the champion's topics, when the app first served it")
    store.pool.offer_demo()
    for i in range(answers):
        store.answers.record(AnswerInput(text=f"Ceasefire talks resume, day {i}", user_label="World", annotator="ann", kind="correct"))


def test_labels_a_list_never_had_are_foreign_and_a_grown_list_still_fits() -> None:
    from core.taxonomy import starting

    grown = starting(LABELS).add("Health").merge("Sci/Tech", "Business")  # maintainers' steps since the champion
    assert foreign(grown, LABELS) == ()  # a champion trained before them: every topic was on the list once
    assert foreign(grown, ("World", "Sports", "Business", "Health")) == ()
    assert foreign(grown, TOPICS) == TOPICS


def test_a_list_nobody_worked_under_becomes_the_new_topics_and_its_demo_articles_leave(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    store = make_store(tmp_path / "feedback.db")
    assert fits(store, TOPICS, whose="own.csv's", fresh="a fresh home") is None  # nothing stored yet
    ag_news_home(store)
    assert store.stats()["pool"]["items"] == 40
    said = fits(store, TOPICS, whose="own.csv's", fresh="a fresh home")
    assert said == ("this home's topic list was World, Sports, Business, Sci/Tech, with nothing answered under it: "
                    "it is now own.csv's topics, Politics, Sport, Money")
    assert store.topics.current().version == 1 and store.topics.current().names == TOPICS
    assert store.stats()["pool"]["items"] == 0  # the app offers the data's own demo articles next
    assert fits(store, TOPICS, whose="own.csv's", fresh="a fresh home") is None


def test_a_home_with_work_under_other_topics_is_refused_in_one_sentence_naming_both_fixes(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    store = make_store(tmp_path / "feedback.db")
    ag_news_home(store, answers=2)
    with pytest.raises(HomeMismatch) as refused:
        fits(store, TOPICS, whose="the champion v0002's", fresh="serve a fresh home (NEWSLOOP_HOME=x newsloop serve)")
    message = str(refused.value)
    assert message == ("the champion v0002's topics are Politics, Sport, Money, but this home's topic list is World, "
                       "Sports, Business, Sci/Tech, with 2 answers: serve a fresh home (NEWSLOOP_HOME=x newsloop "
                       f"serve), or run `{ADOPT}` to make the champion v0002's topics this home's list (its 2 answers "
                       "stay stored; those naming a topic no longer listed train nothing)")
    assert store.topics.current().names == LABELS  # nothing changed


def test_adopting_makes_the_topics_the_next_version_and_keeps_what_stays(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    store = make_store(tmp_path / "feedback.db")
    ag_news_home(store, answers=2)
    described = store.topics.current().describe("Sports", "Games, teams and results")
    store.topics.commit(described, 1)
    adopted = adopt(store, ("World", "Local", "Sports"), by="maintainer", why="adopted the champion's topics")
    assert adopted.after.version == 3 and adopted.after.names == ("World", "Local", "Sports")
    assert adopted.after.topics[2].description == "Games, teams and results"  # a topic that stays keeps it
    assert adopted.stranded.none and adopted.demo_removed == 40  # the answers were World: still listed
    assert "the topic list is now version 3: World, Local, Sports (it was World, Sports, Business, Sci/Tech)" in (
        adopted.words())
    assert fits(store, ("World", "Local", "Sports"), whose="x's", fresh="y") is None
    again = adopt(store, TOPICS, by="maintainer", why="adopted own.csv's topics")
    assert again.stranded.answers == 2 and "2 answers name a topic no longer listed" in again.words()
    assert [a["user_label"] for a in store.answers.rows()] == ["World", "World"]  # kept, for audit


def test_bootstrapping_other_topics_into_a_home_with_work_is_refused_before_training(tmp_path: Path) -> None:
    settings = tiny_settings(tmp_path / "home", data=str(own_topics_csv(tmp_path / "own.csv")))
    settings.paths.feedback_db.parent.mkdir(parents=True)
    store = FeedbackStore(settings.paths.feedback_db)
    ag_news_home(store, answers=1)
    with pytest.raises(HomeMismatch, match=r"^own.csv's topics are Politics, Sport, Money, but this home's topic list "
                                           r"is World, Sports, Business, Sci/Tech, with 1 answer: bootstrap into a "
                                           r"fresh home \(NEWSLOOP_HOME=<another folder> newsloop bootstrap\), or run "
                                           r"`newsloop topics adopt --data`"):
        build_tiny_champion(settings.paths.home, data=settings.data.source)
    assert ModelRegistry(settings.paths.models_dir).champion() is None  # nothing was trained
    # The fix the sentence names: the data's topics become the list; the bootstrap then trains.
    adopt(store, TOPICS, by="maintainer", why="adopted own.csv's topics")
    data_fits_home(settings.paths.feedback_db, settings.data)  # no longer refused
    store.close()


def test_a_bootstrap_into_a_home_nobody_worked_in_says_in_one_line_that_the_list_follows_the_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = tiny_settings(tmp_path / "home", data=str(own_topics_csv(tmp_path / "own.csv")))
    settings.paths.feedback_db.parent.mkdir(parents=True)
    store = FeedbackStore(settings.paths.feedback_db)
    ag_news_home(store)
    with caplog.at_level("WARNING", logger="feedback.home_topics"):
        data_fits_home(settings.paths.feedback_db, settings.data)
    assert [r.getMessage() for r in caplog.records] == [
        "this home's topic list was World, Sports, Business, Sci/Tech, with nothing answered under it: it is now "
        "own.csv's topics, Politics, Sport, Money"]
    assert store.topics.current().names == TOPICS
    store.close()


def test_the_cli_adopts_the_datas_topics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    monkeypatch.setenv("NEWSLOOP_DATA", str(own_topics_csv(tmp_path / "own.csv")))
    home.mkdir()
    store = FeedbackStore(home / "feedback.db")
    ag_news_home(store, answers=1)
    assert feedback_main(["topics", "adopt", "--data", "--by", "ann"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the topic list is now version 2: Politics, Sport, Money (it was World, Sports, Business, "
                          "Sci/Tech); 1 answer names a topic no longer listed")
    assert store.topics.current().names == TOPICS and store.topics.current().current.by == "ann"
    monkeypatch.setenv("NEWSLOOP_DATA", str(tmp_path / "missing.csv"))
    assert feedback_main(["topics", "adopt", "--data"]) == ExitCode.BAD_INPUT
    assert "missing.csv does not exist" in capsys.readouterr().err
    store.close()


def test_serving_a_champion_of_other_topics_than_the_home_is_refused_in_one_sentence_before_any_page(
    own_home: Path, tmp_path: Path
) -> None:
    """The reused home of the README walk: a first `newsloop serve` made the AG News home, people answered, then a
    bootstrap on data of other topics made a champion of them (here: copied in)."""
    home = tmp_path / "home"
    shutil.copytree(own_home, home)
    store = FeedbackStore(home / "feedback.db")
    ag_news_home(store, answers=3)
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "MLFLOW_"))} | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": "seed", "NEWSLOOP_PORT": "1",  # it must never get to bind
        "NEWSLOOP_ONNX_THREADS": "1", "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr[-3000:]
    [said] = [line for line in done.stderr.splitlines() if line.startswith("NewsLoop will not start")]
    assert said == ("NewsLoop will not start: the champion v0001's topics are Politics, Sport, Money, but this home's "
                    "topic list is World, Sports, Business, Sci/Tech, with 3 answers: serve a fresh home "
                    "(NEWSLOOP_HOME=<another folder> newsloop serve), or run `newsloop topics adopt` to make the "
                    "champion v0001's topics this home's list (its 3 answers stay stored; those naming a topic no "
                    "longer listed train nothing)")
    assert "Traceback" not in done.stderr and "Uvicorn running" not in done.stderr + done.stdout


def test_a_rollback_to_a_model_of_topics_the_list_never_had_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README walk leaves the AG News starter as the previous champion of a home of your own topics: rolling back
    to it would serve a model no answer of the list fits."""
    from newsloop.cli import main

    home = tmp_path / "home"
    build_tiny_champion(home)  # v0001: AG News's four (the seed set)
    own = build_tiny_champion(home, data=str(own_topics_csv(tmp_path / "own.csv")))  # v0002: the home's own
    store = FeedbackStore(own.paths.feedback_db)
    store.topics.seed(TOPICS)
    store.close()
    monkeypatch.setenv("NEWSLOOP_HOME", str(home))
    monkeypatch.setenv("NEWSLOOP_DATA", own.data.source)
    capsys.readouterr()  # the bootstraps' progress bars
    assert main(["rollback"]) == ExitCode.ERROR
    assert capsys.readouterr().err.strip() == (
        "error: v0001 predicts World, Sports, Business, Sci/Tech, and this home's topic list (Politics, Sport, Money) "
        "never had World, Sports, Business, Sci/Tech: serving it would offer no answer the list can take; nothing "
        "was done")
    champion = ModelRegistry(own.paths.models_dir).champion()
    assert champion is not None and champion.version == "v0002"
