"""A challenger: fine-tune from the champion (or the base encoder) on a retrain's rows, with its MLflow params."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerBase

from core.data import Corpus, Example
from core.labels import LABELS
from core.reading import Reading
from core.registry.versions import ModelVersion
from core.settings.policies import RetrainPolicy, TrainConfig
from core.taxonomy import Taxonomy, starting
from retrain.classifier.model import ModelFactory, NewsClassifier, fit_head, resolve_base_model
from retrain.inputs import RetrainSetup
from retrain.topics.prior import MATCH_TEXTS, MIN_HOLD_TEXTS
from retrain.topics.recipe import taxonomy_recipe
from retrain.topics.taught import answer_taught, head_logits, hold_champion_prior, match_taught_prior
from retrain.tracking.tracker import Tracker, topic_list, train_params
from retrain.training.loop import train
from retrain.training.targets import TrainingRows, replay_targets

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Traffic:
    """The traffic set as a retrain reads it: its trusted answers, and the texts of its unlabelled items."""

    answers: Sequence[Example] = ()
    texts: Sequence[str] = ()


def train_challenger(
    setup: RetrainSetup,
    champion: ModelVersion,
    corpus: Corpus,
    rows: TrainingRows,
    factory: ModelFactory,
    tracker: Tracker,
    label_fixes: int = 0,
    traffic: Traffic | None = None,
) -> tuple[NewsClassifier, PreTrainedTokenizerBase, dict[str, Any]]:
    """Train on `rows` (labels indexing `rows.taxonomy`'s topics; default the four AG News ones) toward their
    replay targets and log the run (with `label_fixes`, the live label fixes its rows were read through); returns
    the model, one output per topic of the taxonomy, its tokenizer and the meta its version will carry. `traffic`
    (the traffic set's trusted answers and unlabelled items) sets the prior of the topics only answers teach
    (`RetrainPolicy.match_taught_prior`)."""
    policy, config = setup.policy, setup.train
    traffic = traffic or Traffic()
    taxonomy = rows.taxonomy or starting(LABELS)
    model, tokenizer = factory(champion)
    started_with = model.labels
    fit_head(model, taxonomy)  # grown or shrunk from the champion's outputs
    # Only answers teach these topics: those the model starts without get their prior matched to the traffic
    # answers after training; those the champion already reads keep the champion's (`_HeldPrior`).
    only_answers = answer_taught(rows.base, len(taxonomy.keys))
    taught = [i for i in only_answers if taxonomy.keys[i] not in started_with]
    held = _HeldPrior.read(model, tokenizer, [i for i in only_answers if taxonomy.keys[i] in started_with],
                           [*traffic.texts, *(e.text for e in rows.feedback)][:MATCH_TEXTS], config.reading, policy)
    if policy.read_traffic and policy.resolve_split_rows and taught and rows.feedback:
        rows = rows.with_unlabelled(traffic.texts, len(taxonomy.keys))
    targets = _targets(champion, rows, policy, config, taxonomy)
    base_name = champion.version if policy.warm_start else resolve_base_model(setup.base_model)
    recipe = taxonomy_recipe(policy, config, started_with, rows, model, tokenizer, targets)
    if recipe.teaches:
        config = config.with_(epochs=policy.teach_epochs, lr_encoder=policy.teach_lr_encoder,
                              lr_head=policy.teach_lr_head)
        log.info("teaching %s: %s epochs at the teaching rates", ", ".join(recipe.imprinted) or "a split's topics",
                 config.epochs)
    tracker.log_params(
        train_params(config, base_name, setup.dropout, **rows.counts)
        | {"warm_start": policy.warm_start, "feedback_weight": policy.feedback_weight,
           "feedback_repeats": rows.feedback_repeats,
           "distill_weight": policy.distill_weight, "champion": champion.version, "label_fixes": label_fixes,
           "taxonomy_version": taxonomy.version, "traffic_rows_read": len(rows.unlabelled)} | recipe.params()
    )
    tracker.log_topics(taxonomy)
    train(
        model, tokenizer, rows.texts, rows.labels, config, weights=rows.weights(policy.feedback_weight), targets=targets,
        sets=recipe.sets, val_texts=[e.text for e in rows.validation], val_labels=[e.label for e in rows.validation],
        on_metrics=tracker.log_step,
    )
    if policy.match_taught_prior and taught and rows.feedback:
        recipe.prior = match_taught_prior(model, tokenizer, taught, traffic.answers, traffic.texts, config.reading)
        tracker.log_params(recipe.prior.params() if recipe.prior else {"prior_traffic_answers": len(traffic.answers)})
    if held is not None:
        kept = hold_champion_prior(model, tokenizer, held.topics, held.texts, held.before, config.reading)
        tracker.log_params(kept.params() if kept else {"prior_held_texts": len(held.texts)})
    return model, tokenizer, _meta(base_name, corpus, rows, champion, label_fixes, config, taxonomy)


@dataclass(frozen=True)
class _HeldPrior:
    """The answer-taught topics the champion already reads, and its logits on the texts their prior is held on: the
    replayed base rows never hold such a topic, so training alone drifted its prior (a newsroom's added topic read
    87% -> 78% of its own articles, none gained), and matching it again to a few dozen traffic answers lost 16 points
    of its recall. Read before training, held after (`retrain.topics.prior.hold_prior`)."""

    topics: list[int]
    texts: list[str]
    before: np.ndarray

    @classmethod
    def read(cls, model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, topics: list[int], texts: list[str],
             reading: Reading, policy: RetrainPolicy) -> _HeldPrior | None:
        if not (policy.match_taught_prior and topics and len(texts) >= MIN_HOLD_TEXTS):
            return None
        return cls(topics, texts, head_logits(model, tokenizer, texts, reading))


def _targets(champion: ModelVersion, rows: TrainingRows, policy: RetrainPolicy, config: TrainConfig,
             taxonomy: Taxonomy) -> np.ndarray:
    """Each row's replay target (`replay_targets`); an unlabelled traffic row's is every topic alike."""
    targets = replay_targets(
        champion, rows.base, rows.trained_feedback, label_smoothing=config.label_smoothing,
        distill_weight=policy.distill_weight, taxonomy=taxonomy,
    )
    return np.concatenate([targets, np.full((len(rows.unlabelled), len(taxonomy.keys)), 1.0 / len(taxonomy.keys),
                                            dtype=targets.dtype)])


def _meta(base_name: str, corpus: Corpus, rows: TrainingRows, champion: ModelVersion, label_fixes: int,
          config: TrainConfig, taxonomy: Taxonomy) -> dict[str, Any]:
    """The meta the challenger's version carries: where it started, what it trained on, its recipe and topics."""
    return {
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
