"""Teaching a topic through the product: `newsloop topics add|split`, simulated labellers answering what the queue
serves, a real retrain after each round of labels, and the serving champion scored on rows no round saw.

Nothing here takes a path the product does not: the topic changes by the command a maintainer types (run as a
process on the scenario's home), the labellers take items from `Pool.next_item` and answer with
`Answers.record` as the page does (bench.sim.labellers), the retrain is `retrain.run.retrain` with its gate,
and the scores come from the int8 ONNX file the app serves.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from bench.sim.carve import Carved, TopicScenario
from bench.sim.champion import SimHome
from bench.sim.labellers import Labellers, Stream, label_round
from bench.sim.measure import topic_scores
from bench.sim.rounds import run_retrain
from core.text import text_hash

if TYPE_CHECKING:
    from core.registry.versions import ModelRegistry, ModelVersion
    from core.serving.classifier import OnnxClassifier
    from feedback.store import FeedbackStore
    from retrain.classifier.model import ModelFactory


@dataclass
class TeachRow:
    """The serving champion after one round (round 0: the starter, before any label)."""

    round: int
    labels: int  # answers so far
    taught_answers: int  # of which name the taught topic
    accuracy: float  # over every topic, on the evaluation rows
    recall: float  # of the taught topic
    precision: float
    decision: str  # start | promoted | refused | failed
    champion: str
    reason: str = ""
    challenger: str | None = None
    challenger_labels: list[str] = field(default_factory=list)  # the topics the challenger predicts (its keys)
    challenger_scores: dict[str, float] = field(default_factory=dict)
    retrain_minutes: float = 0.0


@dataclass
class TeachRun:
    topics_before: list[str]
    topics_after: list[str]
    change: str  # what `newsloop topics` printed
    rows: list[TeachRow]
    answers: int = 0  # every answer given
    served: int = 0  # of which on an item the queue served from the scenario's pool


def change_topics(home: Path, data_dir: Path, scenario: TopicScenario) -> str:
    """`newsloop topics add|split` on the scenario's home (its alias `python -m feedback`, which loads no model
    code); what it printed. Raises RuntimeError when the command refuses."""
    env = os.environ | {"NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": str(data_dir)}
    env.pop("NEWSLOOP_DATABASE_URL", None)  # the scenario's own SQLite file, whatever the shell points at
    command = [sys.executable, "-m", "feedback", "topics", *scenario.topic_command(), "--by", "bench-taxonomy",
               "--why", f"bench/taxonomy.py, scenario {scenario.kind}"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[1:])} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout.strip()


class TopicEvaluator:
    """A model version's accuracy over every topic and the taught topic's recall and precision on the evaluation
    rows, through the served ONNX file; cached per version (name and commit time: a refused challenger's name can
    be taken again by the next one)."""

    def __init__(self, carved: Carved, topic: str) -> None:
        self.texts = [e.text for e in carved.evaluation]
        self.truth = [carved.topics[e.label] for e in carved.evaluation]
        self.topic = topic
        self._scores: dict[str, dict[str, float]] = {}
        self._loaded: tuple[str, OnnxClassifier] | None = None

    @staticmethod
    def _key(version: ModelVersion) -> str:
        return f"{version.version}@{version.meta.get('committed_at')}"

    def classifier(self, version: ModelVersion) -> OnnxClassifier:
        from core.serving.classifier import load_version

        if self._loaded is None or self._loaded[0] != self._key(version):
            self._loaded = (self._key(version), load_version(version))
        return self._loaded[1]

    def scores(self, version: ModelVersion, name_of: Callable[[str], str]) -> dict[str, float]:
        """Scores with the model's keys read as the names people see (`name_of`), as the truth is written."""
        key = self._key(version)
        if key not in self._scores:
            clf = self.classifier(version)
            predicted = [name_of(clf.labels[i]) for i in np.argmax(clf.predict_proba(self.texts), axis=1)]
            self._scores[key] = topic_scores(self.truth, predicted, self.topic)
        return self._scores[key]


def teach(
    home: SimHome, data_dir: Path, carved: Carved, scenario: TopicScenario, labels: tuple[int, ...], *, seed: int,
    factory: ModelFactory | None = None, on_row: Callable[[TeachRow], None] = lambda _: None,
) -> TeachRun:
    """From the starter serving in `home`: change the topics, then one round per entry of `labels` (the answers
    given so far when it ends): label what the queue serves, retrain, score the champion it leaves."""
    from core.registry.versions import ModelRegistry
    from feedback.store import FeedbackStore

    registry = ModelRegistry(home.paths.models_dir)
    champion = registry.champion()
    if champion is None:
        raise RuntimeError(f"no champion in {home.paths.models_dir}: the starter did not install")
    store = FeedbackStore(home.paths.feedback_db, home.limits, durable=False)
    try:
        before = store.topics.current(champion.meta["labels"]).names
        printed = change_topics(home.paths.home, data_dir, scenario)
        taxonomy = store.topics.current()
        run = TeachRun(list(before), list(taxonomy.names), printed, [])
        evaluator = TopicEvaluator(carved, scenario.topic)
        labellers = Labellers(store, {text_hash(e.text): e.label for e in carved.pool}, 0.0,
                              random.Random(f"{seed}-{scenario.kind}"), home.queue, names=carved.topics)
        stream = Stream(list(carved.pool))
        taught = taxonomy.key_of(scenario.topic)
        run.rows.append(TeachRow(0, 0, 0, **evaluator.scores(champion, taxonomy.name_of), decision="start",
                                 champion=champion.version))
        on_row(run.rows[-1])
        scores: dict[str, dict[str, np.ndarray]] = {}
        for round_no, target in enumerate(labels, start=1):
            answered = label_round(
                labellers, stream, evaluator.classifier(champion), champion.version, order="uncertainty",
                budget=target - labellers.tally.labels, pool_size=len(carved.pool), round_no=round_no,
                scores=scores.setdefault(champion.version, {}),
            )
            if answered == 0:
                break
            run.rows.append(retrain_round(home, registry, evaluator, champion, round_no, factory, taxonomy.name_of))
            run.rows[-1].labels = labellers.tally.labels
            run.rows[-1].taught_answers = sum(a["user_label"] == taught for a in store.answers.rows())
            on_row(run.rows[-1])
            champion = registry.champion() or champion
        run.answers, run.served = served_answers(store, carved)
    finally:
        store.close()
    return run


def retrain_round(
    home: SimHome, registry: ModelRegistry, evaluator: TopicEvaluator, champion: ModelVersion, round_no: int,
    factory: ModelFactory | None, name_of: Callable[[str], str],
) -> TeachRow:
    """One real retrain, the gate's decision, and the scores of the champion it leaves (and of its challenger)."""
    result = run_retrain(home.retrain, factory)
    after = registry.champion() or champion
    row = TeachRow(round_no, 0, 0, **evaluator.scores(after, name_of), decision=result.decision,
                   champion=after.version, reason="; ".join(result.reasons), retrain_minutes=result.seconds / 60)
    if result.challenger:
        challenger = registry.get(result.challenger)
        row.challenger = challenger.version
        row.challenger_labels = list(challenger.meta.get("labels", []))
        row.challenger_scores = evaluator.scores(challenger, name_of)
    return row


def served_answers(store: FeedbackStore, carved: Carved) -> tuple[int, int]:
    """Every answer, and those given on a queue item (kind 'queue', an item id) whose text is in the pool."""
    pool = {text_hash(e.text) for e in carved.pool}
    given = store.answers.rows()
    return len(given), sum(a["kind"] == "queue" and a["item_id"] is not None and a["text_hash"] in pool for a in given)
