"""What the labellers' page and the REST API share: the classifier both serve, the limits on one client, and texts
fit to store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from core.settings.config import LimitsSection, ServingSection, Settings


class ServedModel(Protocol):
    """The model a classifier serves now (core.serving.classifier.OnnxClassifier): what the page reads of it."""

    @property
    def labels(self) -> tuple[str, ...]: ...  # its own topics (keys), in its output order

    @property
    def meta(self) -> dict[str, Any]: ...  # what its export recorded: the data, when it was trained


class Classifier(Protocol):
    """What the page needs from a model: predictions, batch probabilities, the version that made them, and the model
    itself (its topics and its export's record)."""

    @property
    def version(self) -> str | None: ...  # read only: a service's champion changes under it

    @property
    def model(self) -> ServedModel: ...  # a service loads its champion if it can; NoChampionError while there is none

    def predict(self, texts: Sequence[str]) -> list[Any]: ...

    def proba_in_label_order(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class PageLimits:
    """What the page accepts from one client; built from settings at the edge (`PageLimits.from_settings`). Each
    field is the setting of the same name, and its default is that setting's (tests build it bare)."""

    max_input_chars: int = ServingSection.field_default("max_input_chars")  # longer input is refused with a message
    classify_per_minute: int = LimitsSection.field_default("classify_per_minute")  # per client address
    queue_per_minute: int = LimitsSection.field_default("queue_per_minute")  # queue requests per client address
    # Sessions whose last prediction and queue item are remembered, and the memory those may take, each map.
    session_capacity: int = LimitsSection.field_default("session_capacity")
    session_memory_mb: float = LimitsSection.field_default("session_memory_mb")

    @classmethod
    def from_settings(cls, settings: Settings) -> PageLimits:
        """The page's limits, cut from the settings."""
        return cls(
            max_input_chars=settings.serving.max_input_chars,
            classify_per_minute=settings.limits.classify_per_minute,
            queue_per_minute=settings.limits.queue_per_minute,
            session_capacity=settings.limits.session_capacity,
            session_memory_mb=settings.limits.session_memory_mb,
        )

    @property
    def session_memory_bytes(self) -> int:
        return int(self.session_memory_mb * 1024 * 1024)


def storable(text: str) -> str:
    """`text` with anything UTF-8 cannot hold (a lone surrogate) replaced, so what is shown can be saved."""
    return text.encode("utf-8", "replace").decode("utf-8")
