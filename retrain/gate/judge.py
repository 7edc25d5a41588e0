"""The gate's evidence: both models scored through the same serving path on the same sets, in the classes they are
compared on, then the pure gate's decision (`retrain.gate.rules`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.data import Example
from core.evaluation.decision import GateResult
from core.evaluation.metrics import classification_metrics, evaluate_probabilities
from core.registry.versions import ModelVersion
from core.serving.classifier import OnnxClassifier
from core.settings.policies import GateConfig
from core.taxonomy import Taxonomy, starting
from core.topic_maps import Comparison, comparison, meaning_kept, new_topic_scores
from retrain.export.scoring import model_labels, served_probs
from retrain.gate.rules import BASE_SET, GOLDEN_SET, HOLDOUT_SET, TRAFFIC_SET, EvalSet, decide
from retrain.tracking.tracker import Tracker


def validation_scores(champion: ModelVersion, challenger: ModelVersion, as_labelled: list[Example],
                      as_corrected: list[Example]) -> dict[str, dict[str, dict[str, float]]]:
    """Accuracy and macro-F1 of both models on the base validation as labelled and as corrected by the label fixes:
    {"as_labelled": {"champion": {...}, "challenger": {...}}, "as_corrected": {...}}."""
    scores: dict[str, dict[str, dict[str, float]]] = {"as_labelled": {}, "as_corrected": {}}
    for who, version in (("champion", champion), ("challenger", challenger)):
        # Scored once, on the union of both views' texts: the corrected view differs only in labels and left-out
        # rows, so its predictions are the same rows' (a second scoring could differ in int8 rounding).
        texts = {e.text: None for e in [*as_labelled, *as_corrected]}
        union = [Example(text, 0) for text in texts]
        predicted = dict(zip(texts, score_texts(version, union, as_labelled).argmax(axis=1), strict=True))
        for part, examples in (("as_labelled", as_labelled), ("as_corrected", as_corrected)):
            metrics = classification_metrics([e.label for e in examples], [predicted[e.text] for e in examples])
            scores[part][who] = {"accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"], "n": metrics["n"]}
    return scores


def score_texts(version: ModelVersion, texts: list[Example], validation: list[Example]) -> np.ndarray:
    """Served probabilities of `texts`: the cached validation probabilities when they are `validation`'s texts in
    order (the export's cache), else scored through the serving path."""
    if [e.text for e in texts] == [e.text for e in validation]:
        return served_probs(version, validation)
    return OnnxClassifier(version.path).predict_proba([e.text for e in texts])


def compared(name: str, classes: Comparison, labels: np.ndarray, allowed: list[tuple[int, ...]],
             champion: np.ndarray, challenger: np.ndarray) -> EvalSet:
    """One evaluation set in comparison classes, from the rows' labels and allowed sets and each model's predicted
    topic (its own output index; the challenger's index the current topics).

    A row answering a topic the champion lacks is class K (`classes.outside`) in a users' set: the champion cannot be
    right there, the challenger is when it reads the row's own topic (two new topics taken for each other count as
    right here; each one's NEW_TOPIC rule counts them wrong). Base validation's labels predate such a topic, so they
    cannot say a row is not of it: a base row the challenger reads as one is left out of the comparison, and what
    reading it costs is judged on the answers, which could name it (their precision)."""
    truth = classes.truths(labels, allowed)
    champion_classes = classes.champion_classes(champion)
    challenger_classes = classes.challenger_classes(challenger)
    new = truth < 0
    if name == BASE_SET:
        keep = ~new & (challenger_classes != classes.outside)
        return EvalSet(name, truth[keep], champion_classes[keep], challenger_classes[keep])
    truth = np.where(new, classes.outside, truth)
    challenger_classes = np.where(new & (challenger == labels), classes.outside, challenger_classes)
    return EvalSet(name, truth, champion_classes, challenger_classes)


@dataclass(frozen=True)
class Evidence:
    """The rows a gate judges on: base validation, the feedback held out, the traffic set's trusted answers and the
    golden set (the last two may be empty)."""

    validation: list[Example]
    holdout: list[Example]
    traffic: list[Example] = field(default_factory=list)
    golden: list[Example] = field(default_factory=list)

    def by_set(self) -> tuple[tuple[str, list[Example]], ...]:
        return ((BASE_SET, self.validation), (HOLDOUT_SET, self.holdout), (TRAFFIC_SET, self.traffic),
                (GOLDEN_SET, self.golden))


def judge(
    champion: ModelVersion,
    challenger: ModelVersion,
    evidence: Evidence,
    config: GateConfig,
    tracker: Tracker,
    taxonomy: Taxonomy | None = None,
) -> GateResult:
    """Score both models through the same serving path on the same sets, then apply the pure gate.

    `evidence`'s rows index `taxonomy`'s current topics (the challenger's; default: the champion's own). Both models
    are compared on the rows of topics both predict (`core.topic_maps.comparison`: a merged pair as one) and on the
    answers naming a topic the champion lacks (`compared`); such a topic is also judged on its own held-out answers
    (the gate's NEW_TOPIC rule)."""
    champion_labels = model_labels(champion)
    taxonomy = taxonomy or starting(champion_labels)
    classes = comparison(champion_labels, taxonomy)
    sets = []
    labels: list[int] = []
    allowed: list[tuple[int, ...]] = []
    predicted: list[int] = []
    for name, examples in evidence.by_set():
        if not examples:
            continue
        champion_probs = served_probs(champion, examples)
        challenger_probs = served_probs(challenger, examples)
        y = np.array([e.label for e in examples])
        raw = challenger_probs.argmax(axis=1)
        sets.append(compared(name, classes, y, [e.allowed for e in examples], champion_probs.argmax(axis=1), raw))
        if name != BASE_SET:  # base labels predate a new topic: they can neither name it nor refute it
            labels += y.tolist()
            allowed += [e.allowed for e in examples]
            predicted += raw.tolist()
        if name == BASE_SET and champion_labels == taxonomy.keys:
            metrics = evaluate_probabilities(y, champion_probs, champion_labels)
            tracker.log_evaluation("champion_validation", y.tolist(), champion_probs, metrics)
    new_topics = new_topic_scores(taxonomy, classes.new_topics, labels, allowed, predicted)
    kept = [i for i, key in enumerate(classes.keys) if meaning_kept(taxonomy, key)]
    decision = decide(sets, config, tuple(taxonomy.name_of(k) for k in classes.keys), new_topics, kept)
    tracker.log_dict(decision.to_dict(), "gate.json")
    return decision
