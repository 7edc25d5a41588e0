"""Data of your own topics from the start: a bootstrap on a CSV of three named topics trains a champion of those
topics; the shipped AG News starter is installed only for data of its four; the app seeds the taxonomy from the
champion it serves; what in core reads probabilities takes the model's own topics."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app import seed_topics
from core.command_line import ExitCode
from core.evaluation.estimate import Tally, estimate
from core.evaluation.metrics import evaluate_probabilities, ranking_metrics
from core.labels import LABELS
from core.registry.starter import STARTER_DIR, install_starter, starter_fits, starter_meta
from core.registry.versions import ModelRegistry
from core.serving.classifier import ChampionService, OnnxClassifier
from core.settings.config import PROJECT_ROOT
from core.storage.paths import CHECKPOINT_DIR
from testkit.data import OWN_TOPICS, own_topics_csv
from testkit.models import build_tiny_champion, tiny_settings
from testkit.pg_cluster import StoreFactory

TOPICS = tuple(OWN_TOPICS.values())  # Politics, Sport, Money
TEXTS = ["The striker scored twice in the cup final.", "Shares fell as the central bank raised rates."]


@pytest.fixture(scope="module")
def own_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose champion was bootstrapped (tiny random encoder) on the three-topic CSV."""
    folder = tmp_path_factory.mktemp("own_topics")
    build_tiny_champion(folder / "home", data=str(own_topics_csv(folder / "own.csv")))
    return folder / "home"


def test_the_bootstrap_trains_one_output_per_topic_of_the_data(own_home: Path) -> None:
    from retrain.classifier.model import load_checkpoint

    champion = ModelRegistry(own_home / "models").champion()
    assert champion is not None and champion.meta["labels"] == list(TOPICS)
    assert np.shape(champion.meta["validation"]["confusion_matrix"]) == (3, 3)
    classifier = OnnxClassifier(champion.path)
    assert classifier.labels == TOPICS  # the ONNX file's metadata
    [prediction] = classifier.predict(TEXTS[:1])
    assert set(prediction.probabilities) == set(TOPICS)
    model, _ = load_checkpoint(champion.path / CHECKPOINT_DIR)  # what a retrain warm-starts from
    assert model.labels == TOPICS and model.head[-1].out_features == 3


def test_a_bootstrap_refuses_a_model_of_other_topics_than_the_data(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from retrain.bootstrap import BootstrapError, bootstrap
    from retrain.classifier.model import resolve_base_model
    from retrain.inputs import BootstrapSetup
    from testkit.models import tiny_model

    settings = tiny_settings(tmp_path / "home", data=str(own_topics_csv(tmp_path / "own.csv")))
    ag_news_model = (tiny_model(), AutoTokenizer.from_pretrained(resolve_base_model("")))
    with pytest.raises(BootstrapError, match="predicts World, Sports, Business, Sci/Tech, but own.csv .* has the "
                                             "topics Politics, Sport, Money"):
        bootstrap(BootstrapSetup.from_settings(settings), model_and_tokenizer=ag_news_model, track=False)
    assert ModelRegistry(settings.paths.models_dir).champion() is None


def test_the_shipped_starter_is_installed_only_for_data_of_its_four_topics(tmp_path: Path) -> None:
    assert starter_fits(starter_meta(STARTER_DIR)) and not starter_fits(starter_meta(STARTER_DIR), TOPICS)
    own = ModelRegistry(tmp_path / "own")
    assert install_starter(own, labels=TOPICS) is None and own.champion() is None  # a bootstrap trains one instead
    ag_news = install_starter(ModelRegistry(tmp_path / "ag_news"))
    assert ag_news is not None and ag_news.meta["labels"] == list(LABELS)


def test_the_app_seeds_the_taxonomy_from_the_champion_it_serves(
    own_home: Path, make_store: StoreFactory, tmp_path: Path
) -> None:
    store = make_store(tmp_path / "feedback.db")
    nothing = ChampionService(ModelRegistry(tmp_path / "empty"))
    nothing.refresh()
    seed_topics(store, nothing)  # no champion served yet: nothing is stored
    assert store.topics.stored_version() == 0
    service = ChampionService(ModelRegistry(own_home / "models"))
    service.refresh()
    seed_topics(store, service)
    assert store.topics.stored_version() == 1 and store.topics.current().names == TOPICS
    changed = store.topics.current().rename("Money", "Economy")
    store.topics.commit(changed, 1)
    seed_topics(store, service)  # a restart leaves the maintainers' changes as they are
    assert store.topics.current().version == 2 and store.topics.current().names == ("Politics", "Sport", "Economy")


def test_probabilities_come_in_the_order_asked_for_and_refuse_topics_the_model_lacks(own_home: Path) -> None:
    champion = ModelRegistry(own_home / "models").champion()
    assert champion is not None
    classifier = OnnxClassifier(champion.path)
    own = classifier.predict_proba(TEXTS)
    assert np.allclose(classifier.proba_in_label_order(TEXTS, labels=classifier.labels), own)
    assert np.allclose(classifier.proba_in_label_order(TEXTS, labels=("Money", "Politics")), own[:, [2, 0]])
    with pytest.raises(ValueError, match="does not predict World, Sci/Tech"):
        classifier.proba_in_label_order(TEXTS, labels=("World", "Sport", "Sci/Tech"))
    with pytest.raises(ValueError, match="does not predict World"):
        classifier.proba_in_label_order(TEXTS)  # the AG News default, for callers that have nothing else
    service = ChampionService(ModelRegistry(own_home / "models"))
    assert np.allclose(service.proba_in_label_order(TEXTS), own)  # the champion's own topics


def test_estimates_and_metrics_name_the_models_topics() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    tally = Tally().add(probs)
    assert tally.estimate(TOPICS).recall.keys() == set(TOPICS) == estimate(probs, TOPICS).precision.keys()
    assert tally.estimate().recall.keys() == {"0", "1", "2"}  # positions, as a tally kept across models names them
    with pytest.raises(ValueError, match="4 labels for a tally of 3 columns"):
        tally.estimate(LABELS)
    metrics = evaluate_probabilities([0, 1, 2, 1], probs, TOPICS)
    assert list(metrics["per_label"]) == list(TOPICS) and metrics["accuracy"] == 0.75
    with pytest.raises(ValueError, match=r"probabilities of shape \(4, 3\) for 4 labels"):
        ranking_metrics([0, 1, 2, 1], probs)  # AG News's four by default: three columns are not them


@pytest.mark.parametrize("command", [["-m", "newsloop", "bootstrap"], ["app.py"]])
def test_a_data_file_it_refuses_stops_the_bootstrap_and_the_app_naming_file_and_line(
    tmp_path: Path, command: list[str]
) -> None:
    data = tmp_path / "own.csv"
    data.write_text("label,text\nPolitics,Vote count begins\nSport,Cup final tonight\n,Shares fall\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "MLFLOW_"))} | {
        "NEWSLOOP_HOME": str(tmp_path / "home"), "NEWSLOOP_DATA": str(data), "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, *command], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr[-2000:]
    assert "own.csv:4: empty label" in done.stderr and "Traceback" not in done.stderr
    assert ModelRegistry(tmp_path / "home" / "models").champion() is None  # neither the seed set nor the starter


def test_the_tfidf_baseline_reads_the_datas_topics_and_a_test_file_by_name(tmp_path: Path) -> None:
    from core.data import DataSourceError
    from core.settings.policies import DataSource
    from retrain.training.baseline import tfidf_svm_baseline

    data = DataSource(source=str(own_topics_csv(tmp_path / "own.csv")))
    test_csv = tmp_path / "test.csv"
    test_csv.write_text("label,text\nMoney,Shares fell as the central bank raised rates\n"
                        "Sport,The striker scored twice in the cup final\n", encoding="utf-8")
    report = tfidf_svm_baseline(data, 0, 0, test_csv)
    assert report["csv"]["n"] == 2 and 0.0 <= report["validation"]["accuracy"] <= 1.0
    test_csv.write_text("label,text\nHealth,Flu cases rise\n", encoding="utf-8")
    with pytest.raises(DataSourceError, match="test.csv names Health, not among the data's topics"):
        tfidf_svm_baseline(data, 0, 0, test_csv)


def test_bootstrap_from_a_checkpoint_of_other_topics_is_bad_input(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "MLFLOW_"))} | {
        "NEWSLOOP_HOME": str(tmp_path / "home"), "NEWSLOOP_DATA": str(own_topics_csv(tmp_path / "own.csv")),
        "PYTHONPATH": str(PROJECT_ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "newsloop", "bootstrap", "--init-from", str(STARTER_DIR / CHECKPOINT_DIR)],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr[-2000:]
    assert "predicts World, Sports, Business, Sci/Tech, but own.csv" in done.stderr and "Traceback" not in done.stderr
