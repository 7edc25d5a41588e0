"""A challenger: fine-tune from the champion (or the base encoder) on a retrain's rows, with its MLflow params."""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedTokenizerBase

from core.data import Corpus
from core.registry.versions import ModelVersion
from retrain.model import ModelFactory, NewsClassifier, resolve_base_model
from retrain.setup import RetrainSetup
from retrain.targets import TrainingRows, replay_targets
from retrain.tracking import Tracker, train_params
from retrain.train import train


def train_challenger(
    setup: RetrainSetup,
    champion: ModelVersion,
    corpus: Corpus,
    rows: TrainingRows,
    factory: ModelFactory,
    tracker: Tracker,
    label_fixes: int = 0,
) -> tuple[NewsClassifier, PreTrainedTokenizerBase, dict[str, Any]]:
    """Train on `rows` toward their replay targets and log the run (with `label_fixes`, the live label fixes its
    rows were read through); returns the model, its tokenizer and the meta its version will carry."""
    policy, config = setup.policy, setup.train
    model, tokenizer = factory(champion)
    targets = replay_targets(
        champion, rows.base, rows.trained_feedback, label_smoothing=config.label_smoothing, distill_weight=policy.distill_weight
    )
    base_name = champion.version if policy.warm_start else resolve_base_model(setup.base_model)
    tracker.log_params(
        train_params(config, base_name, setup.dropout, **rows.counts)
        | {"warm_start": policy.warm_start, "feedback_weight": policy.feedback_weight,
           "feedback_repeats": rows.feedback_repeats,
           "distill_weight": policy.distill_weight, "champion": champion.version, "label_fixes": label_fixes}
    )
    train(
        model, tokenizer, rows.texts, rows.labels, config, weights=rows.weights(policy.feedback_weight), targets=targets,
        val_texts=[e.text for e in rows.validation], val_labels=[e.label for e in rows.validation],
        on_metrics=tracker.log_step,
    )
    meta = {
        "kind": "retrain",
        "base_model": base_name,
        "data": f"{corpus.description} + {len(rows.feedback)} feedback rows",
        "rows": rows.counts,
        "parent": champion.version,
        "label_fixes": label_fixes,
        "train_config": config.model_dump(),
    }
    return model, tokenizer, meta
