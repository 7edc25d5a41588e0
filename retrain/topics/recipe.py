"""The recipe for a changed taxonomy, applied to one challenger: the topics it started without imprinted, a split's
earlier rows given targets, and what that did (docs/decisions/new-topics.md)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from transformers import PreTrainedTokenizerBase

from core.settings.policies import RetrainPolicy, TrainConfig
from retrain.classifier.model import NewsClassifier
from retrain.topics.imprint import imprint_new_topics
from retrain.topics.prior import PriorMatch
from retrain.topics.split_rows import Resolved, resolve_split_rows
from retrain.training.targets import TrainingRows

log = logging.getLogger(__name__)


@dataclass
class Recipe:
    """What the recipe for a changed taxonomy did to one challenger (retrain.topics): topics imprinted (key ->
    answers), split rows given a target, and the rows still trained toward a set."""

    imprinted: dict[str, int] = field(default_factory=dict)
    resolved: Resolved | None = None
    sets: np.ndarray | None = None
    prior: PriorMatch | None = None  # the taught topics' bias shifts, after training (retrain.topics.prior)
    split_rows: int = 0  # of the rows `resolved` read, a split's earlier rows (not unlabelled traffic)

    @property
    def teaches(self) -> bool:
        """Whether this retrain teaches a topic: one imprinted, or a split's earlier rows read
        (RetrainPolicy.teach_*). Unlabelled traffic read beside the answers teaches nothing by itself."""
        return bool(self.imprinted) or self.split_rows > 0

    def params(self) -> dict[str, Any]:
        return {"imprinted_topics": ",".join(self.imprinted) or "-", "teaching": self.teaches,
                "resolved_split_rows": self.split_rows,
                "resolved_traffic_rows": (len(self.resolved.rows) - self.split_rows) if self.resolved else 0}


def taxonomy_recipe(policy: RetrainPolicy, config: TrainConfig, started_with: tuple[str, ...], rows: TrainingRows,
                    model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, targets: np.ndarray) -> Recipe:
    """Imprint the topics the model started without (`started_with`: its outputs before its head was fitted to the
    taxonomy; a warm start's are the champion's) and give a split's earlier rows targets, as
    `policy` allows; `targets` (the rows' replay targets) are updated in place."""
    recipe = Recipe(sets=rows.sets(model.num_labels))
    if policy.imprint_new_topics and policy.warm_start:  # a fresh head has no trained rows to aim beside
        recipe.imprinted = imprint_new_topics(model, tokenizer, started_with, rows.feedback, rows.base,
                                              config.reading, config.seed)
        if recipe.imprinted:
            log.info("imprinted new topics from their answers: %s", recipe.imprinted)
    if policy.resolve_split_rows and recipe.sets is not None:
        recipe.resolved = resolve_split_rows(model, tokenizer, rows.examples,
                                             config.reading, config.seed)
        if recipe.resolved is not None:
            recipe.split_rows = sum(1 for i in recipe.resolved.rows if i < len(rows.examples) - len(rows.unlabelled))
            targets[recipe.resolved.rows] = recipe.resolved.targets
            recipe.sets[recipe.resolved.rows] = False
            recipe.sets = recipe.sets if recipe.sets.any() else None
    return recipe
