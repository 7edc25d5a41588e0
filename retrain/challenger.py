"""A challenger: fine-tune from the champion (or the base encoder) on a retrain's rows, with its MLflow params."""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedTokenizerBase

from core.data import Corpus
from core.labels import LABELS
from core.registry.versions import ModelVersion
from core.taxonomy import Taxonomy, starting
from retrain.model import ModelFactory, NewsClassifier, fit_head, resolve_base_model
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
    """Train on `rows` (labels indexing `rows.taxonomy`'s topics; default the four AG News ones) toward their
    replay targets and log the run (with `label_fixes`, the live label fixes its rows were read through); returns
    the model, one output per topic of the taxonomy, its tokenizer and the meta its version will carry."""
    policy, config = setup.policy, setup.train
    taxonomy = rows.taxonomy or starting(LABELS)
    model, tokenizer = factory(champion)
    fit_head(model, taxonomy)  # grown or shrunk from the champion's outputs
    targets = replay_targets(
        champion, rows.base, rows.trained_feedback, label_smoothing=config.label_smoothing,
        distill_weight=policy.distill_weight, taxonomy=taxonomy,
    )
    base_name = champion.version if policy.warm_start else resolve_base_model(setup.base_model)
    tracker.log_params(
        train_params(config, base_name, setup.dropout, **rows.counts)
        | {"warm_start": policy.warm_start, "feedback_weight": policy.feedback_weight,
           "feedback_repeats": rows.feedback_repeats,
           "distill_weight": policy.distill_weight, "champion": champion.version, "label_fixes": label_fixes,
           "taxonomy_version": taxonomy.version}
    )
    tracker.log_dict({"version": taxonomy.version, "topics": topic_list(taxonomy)}, "topics.json")
    train(
        model, tokenizer, rows.texts, rows.labels, config, weights=rows.weights(policy.feedback_weight), targets=targets,
        sets=rows.sets(len(taxonomy.keys)), val_texts=[e.text for e in rows.validation], val_labels=[e.label for e in rows.validation],
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
        "labels": list(taxonomy.keys),
        "taxonomy_version": taxonomy.version,
        "topics": topic_list(taxonomy),
    }
    return model, tokenizer, meta


def topic_list(taxonomy: Taxonomy) -> list[dict[str, str]]:
    """The topics a model is trained on, in its output order: key, name and description (MLflow's topics.json,
    the version's meta)."""
    return [{"key": t.key, "name": t.name, "description": t.description} for t in taxonomy.topics]
