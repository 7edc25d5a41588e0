"""The round driver: one labelling order's rounds of labelling, a real retrain, and the accuracies it leaves."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bench.sim.champion import Preset, SimHome
from bench.sim.data import SlicePlan
from bench.sim.labellers import Labellers, Stream, label_round
from bench.sim.measure import Evaluator, base_accuracy
from bench.sim.report import print_header, print_row
from bench.sim.rows import RoundRow
from core.labels import LABELS
from core.text import text_hash

if TYPE_CHECKING:
    from core.registry.stages import RunRecord
    from core.registry.versions import ModelRegistry, ModelVersion
    from feedback.store import FeedbackStore
    from retrain.classifier.model import ModelFactory
    from retrain.inputs import RetrainSetup

log = logging.getLogger("bench.loop")


@dataclass(frozen=True)
class LoopOptions:
    """How the simulated labellers work (the loop's command-line options)."""

    malicious: float = 0.0  # share of answers that are wrong labels
    pool_factor: int = 3  # candidate pool = factor x labels per round
    review: str = "none"  # none | oracle: a maintainer accepts right suspicious answers and rejects wrong ones
    seed: int = 13
    sybil: float = 0.0  # share of answers from an attacker minting identities (see bench.sim.labellers)


def run_order(
    home: SimHome, plan: SlicePlan, preset: Preset, options: LoopOptions, order: str,
    factory: ModelFactory | None = None,
) -> list[RoundRow]:
    """Rounds of labelling + retrain from the champion in `home`; prints and returns one row a round."""
    from core.registry.versions import ModelRegistry
    from feedback.store import FeedbackStore

    registry = ModelRegistry(home.paths.models_dir)
    evaluator = Evaluator(plan.slice_test)
    truth = {text_hash(ex.text): ex.label for ex in (*plan.stream, *plan.checks)}
    store = FeedbackStore(home.paths.feedback_db, home.limits, durable=False)
    if plan.checks:
        store.pool.add([ex.text for ex in plan.checks], source="loop-checks",
                          labels=[LABELS[ex.label] for ex in plan.checks])
    labellers = Labellers(
        store, truth, options.malicious, random.Random(f"{options.seed}-{order}"), home.queue, sybil=options.sybil
    )
    stream = Stream(list(plan.stream))
    scores: dict[str, dict[str, np.ndarray]] = {}

    champion = registry.champion()
    if champion is None:
        raise RuntimeError(f"no champion in {home.paths.models_dir}: the bootstrap did not finish")
    rows = [RoundRow(order, 0, 0, 0, 0, 0, champion.version, evaluator.slice_accuracy(champion),
                     base_accuracy(champion), "start")]
    print_header(order)
    print_row(rows[0])
    for round_no in range(1, preset.rounds + 1):
        started = time.perf_counter()
        clf = evaluator.classifier(champion)
        answered = label_round(
            labellers, stream, clf, champion.version, order=order, budget=preset.per_round,
            pool_size=preset.per_round * options.pool_factor, round_no=round_no,
            scores=scores.setdefault(champion.version, {}),
        )
        if answered == 0:
            print(f"stream exhausted after {labellers.tally.labels} labels")
            break
        if options.review == "oracle":
            labellers.review()
        caught, poisoned = trust_outcome(home, store, truth)
        row = retrain_and_measure(home, registry, evaluator, champion, factory)
        row.order, row.round = order, round_no
        tally = labellers.tally
        row.labels, row.corrections, row.malicious, row.suspicious, row.checks = (
            tally.labels, tally.corrections, tally.malicious, tally.suspicious, tally.checks
        )
        row.caught, row.poisoned = caught, poisoned
        row.seconds = round(time.perf_counter() - started, 1)
        rows.append(row)
        print_row(row)
        champion = registry.champion() or champion
    store.close()
    return rows


def trust_outcome(home: SimHome, store: FeedbackStore, truth: dict[str, int]) -> tuple[int, int]:
    """Annotators the trust rules leave out, and trusted feedback rows whose label is wrong, as the retrain
    about to run will see them (the same snapshot reader and rules)."""
    from feedback.training.snapshot import trusted_split
    from feedback.trust.rules import excluded_annotators

    setup = home.retrain
    excluded = excluded_annotators(store.answers.rows(), store.pool.gold_labels(), setup.trust)
    split = trusted_split(setup.paths.feedback_db, setup.trust, setup.policy.holdout_fraction)
    return len(excluded), sum(ex.label != truth[text_hash(ex.text)] for ex in (*split.train, *split.holdout))


def run_retrain(setup: RetrainSetup, factory: ModelFactory | None = None) -> RunRecord:
    """One real retrain (what `newsloop retrain` runs: trust rules, training, gate, promotion), MLflow off; a run
    that raises is recorded as failed and leaves the champion serving, so the simulation goes on."""
    from core.registry.stages import RunRecord
    from retrain.run import retrain

    started = time.perf_counter()
    try:
        return retrain(setup, model_factory=factory, track=False)
    except Exception as exc:
        log.exception("retrain failed")
        return RunRecord("failed", [f"{type(exc).__name__}: {exc}"], seconds=round(time.perf_counter() - started, 1))


def retrain_and_measure(
    home: SimHome, registry: ModelRegistry, evaluator: Evaluator, champion: ModelVersion,
    factory: ModelFactory | None,
) -> RoundRow:
    """One real retrain, then the accuracies of the champion it leaves (and of a refused challenger)."""
    result = run_retrain(home.retrain, factory)
    decision, reasons, challenger_name = result.decision, result.reasons, result.challenger
    after = registry.champion() or champion
    row = RoundRow(
        "", 0, 0, 0, 0, 0, after.version, evaluator.slice_accuracy(after), base_accuracy(after), decision,
        reason=reasons[0] if reasons else "", feedback_train=result.rows.get("feedback_train", 0),
        feedback_holdout=result.rows.get("feedback_holdout", 0), retrain_s=result.seconds,
    )
    if challenger_name:
        challenger = registry.get(challenger_name)
        row.challenger = challenger_name
        row.challenger_slice_acc = evaluator.slice_accuracy(challenger)
        row.challenger_base_acc = base_accuracy(challenger)
    if decision == "promoted":
        row.worse_on_base = row.base_acc < base_accuracy(champion)
    return row
