"""The headline shift from a starter that never saw its rows: labellers answer the queue on headlines, real retrains gate them.

The starter was trained without the held-out rows of `bench.sim.headlines`. Their stream part enters the
labelling pool as headlines (what a newsroom pastes); simulated honest labellers answer the real queue (its
uncertainty order and its random traffic share), each round ends with a real `retrain.run.retrain`, and
the champion it leaves is scored on the disjoint test part read as headlines and as whole articles, and on
base validation.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.sim.champion import Preset, sim_home, sim_settings
from bench.sim.headlines import HeadlinePlan, write_starter_data
from bench.sim.labellers import Labellers, Stream, label_round
from core.data import Example, InputForm, as_form, load_corpus, read_csv
from core.registry.starter import install_starter, starter_meta
from core.settings.config import PROJECT_ROOT
from core.text import text_hash

if TYPE_CHECKING:
    from core.registry.versions import ModelVersion

FORMS = (InputForm.TITLE, InputForm.FULL)


# The scenario's own starter: trained without its held-out rows, packed once outside the checkout and reused.
SCENARIO_STARTER = PROJECT_ROOT.parent / "scenario-starter"
SCENARIO_STARTER_COMMAND = (
    "python bench/loop.py --write-starter-data ../ag_news-starter && "
    "NEWSLOOP_HOME=../scenario_home NEWSLOOP_DATA=../ag_news-starter NEWSLOOP_TORCH_THREADS=2 "
    "newsloop bootstrap --max-minutes 30 --forms full,title,body:3000 && "
    "NEWSLOOP_HOME=../scenario_home NEWSLOOP_DATA=../ag_news-starter newsloop starter --out ../scenario-starter"
)

@dataclass(frozen=True)
class ShiftOptions:
    rounds: int = 3
    per_round: int = 200  # labels per round
    pool_factor: int = 3  # candidates in the pool = factor x labels per round
    base_rows: int | None = None  # base rows replayed per retrain (None: the retrain's default)
    retrain_minutes: float = 0.0  # training budget per retrain (0 = none)
    seed: int = 13
    starter: Path = SCENARIO_STARTER  # a packed starter that never saw the held-out rows (see `scenario_starter`)


@dataclass
class ShiftRow:
    round: int
    labels: int
    corrections: int
    champion: str
    decision: str  # start | promoted | refused | failed
    accuracy: dict[str, float]  # per input form on the test part, and "base" (base validation)
    challenger: dict[str, float] = field(default_factory=dict)
    challenger_p: dict[str, float] = field(default_factory=dict)  # two-sided McNemar p, challenger vs champion
    reason: str = ""
    rows: dict[str, int] = field(default_factory=dict)
    retrain_s: float = 0.0
    traffic_needed: int | None = None  # traffic labels the retrain preview asks for after this round (None: beyond reach)


class FormEvaluator:
    """Accuracy of a model version on the test part read in each input form, and on base validation
    (served file, cached), with the per-row correctness that paired tests between versions need."""

    def __init__(self, test: list[Example], validation: list[Example]) -> None:
        self.sets = {form.value: [x for x in (as_form(e, form) for e in test) if x is not None] for form in FORMS}
        self.sets["base"] = validation
        self._correct: dict[str, dict[str, np.ndarray]] = {}

    def correct(self, version: ModelVersion) -> dict[str, np.ndarray]:
        from core.serving.classifier import load_version

        # A refused challenger's version name can be taken again by the next one: key by name and commit time.
        key = f"{version.version}@{version.meta.get('committed_at')}"
        if key not in self._correct:
            clf = load_version(version)
            self._correct[key] = {
                name: clf.proba_in_label_order([e.text for e in rows]).argmax(axis=1) == np.array([e.label for e in rows])
                for name, rows in self.sets.items()
            }
        return self._correct[key]

    def accuracy(self, version: ModelVersion) -> dict[str, float]:
        return {name: float(np.mean(hits)) for name, hits in self.correct(version).items()}

    def paired_p(self, before: ModelVersion, after: ModelVersion) -> dict[str, float]:
        """Two-sided exact McNemar p per set between two versions (1.0 when they never disagree)."""
        from scipy.stats import binomtest

        out = {}
        for name in self.sets:
            a, b = self.correct(before)[name], self.correct(after)[name]
            gained, lost = int(np.sum(b & ~a)), int(np.sum(a & ~b))
            out[name] = 1.0 if gained + lost == 0 else float(binomtest(gained, gained + lost, 0.5).pvalue)
        return out


def held_out_rows_seen(meta: dict[str, object], data: Path, plan: HeadlinePlan) -> int:
    """How many of the scenario's held-out rows a starter trained on, by its meta's `rows_seen` (retrain.export.starter):
    counted when its train.csv is this data's (same sha256); a starter trained on the scenario's own data folder
    (`--write-starter-data`, without those rows) or packed before rows were recorded counts none."""
    seen = (meta.get("rows_seen") or {}).get("train.csv")  # type: ignore[attr-defined]
    recorded = (meta.get("data_files") or {}).get("train.csv", {})  # type: ignore[attr-defined]
    train_csv = data / "train.csv"
    if not seen or not train_csv.is_file() or recorded.get("sha256") != hashlib.sha256(train_csv.read_bytes()).hexdigest():
        return 0
    rows = read_csv(train_csv)
    return sum(text_hash(rows[i].text) in plan.excluded for first, last in seen["ranges"] for i in range(first, last + 1))


def check_scenario_starter(starter: Path, data: Path, plan: HeadlinePlan) -> None:
    """Refuse a starter that saw the held-out rows (the shipped one, trained on every row), naming how to build one."""
    meta = starter_meta(starter)
    if meta is None:
        raise SystemExit(f"no scenario starter in {starter}; build one (about 30 minutes on 2 CPU cores):\n"
                         f"{SCENARIO_STARTER_COMMAND}")
    if saw := held_out_rows_seen(meta, data, plan):
        raise SystemExit(f"the starter in {starter} trained on {saw} of the scenario's {len(plan.excluded)} held-out "
                         f"rows (the shipped starter sees every row); build the scenario's own:\n{SCENARIO_STARTER_COMMAND}")


def run_shift(
    root: Path, data: str, options: ShiftOptions, on_row: Callable[[ShiftRow], None] = lambda _: None
) -> tuple[HeadlinePlan, list[ShiftRow], dict[str, float]]:
    """Install the scenario starter in a fresh home under `root`, then run the rounds: one row per round, and
    the paired p-values (per set) of the last champion against the starter."""
    from core.registry.versions import ModelRegistry
    from core.serving.classifier import load_version
    from feedback.store import FeedbackStore

    data_dir = root / "data"
    settings = sim_settings(root / "home", data_dir, tiny=False)
    plan, _ = write_starter_data(data, data_dir, settings.data.val_fraction)
    preset = Preset(0, 0.0, options.rounds, options.per_round,
                    settings.retrain.base_rows if options.base_rows is None else options.base_rows,
                    options.retrain_minutes, False)
    home = sim_home(settings, preset)
    registry = ModelRegistry(home.paths.models_dir)
    check_scenario_starter(options.starter, Path(data), plan)
    champion = install_starter(registry, options.starter)
    if champion is None:
        raise SystemExit(f"no starter model for these labels in {options.starter}")
    headlines = [Example(e.title, e.label) for e in plan.stream]
    truth = {text_hash(e.text): e.label for e in headlines}
    store = FeedbackStore(home.paths.feedback_db, home.limits, durable=False)
    labellers = Labellers(store, truth, 0.0, random.Random(options.seed), home.queue)
    stream = Stream(headlines)
    evaluator = FormEvaluator(plan.test, load_corpus(str(data_dir), settings.data.val_fraction).validation)
    scores: dict[str, dict[str, np.ndarray]] = {}
    first = champion
    rows = [ShiftRow(0, 0, 0, champion.version, "start", evaluator.accuracy(champion))]
    on_row(rows[0])
    for round_no in range(1, options.rounds + 1):
        clf = load_version(champion)
        answered = label_round(labellers, stream, clf, champion.version, order="uncertainty",
                               budget=options.per_round, pool_size=options.per_round * options.pool_factor,
                               round_no=round_no, scores=scores.setdefault(champion.version, {}))
        if answered == 0:
            break
        rows.append(retrain_round(home, registry, evaluator, champion, round_no, labellers, store))
        on_row(rows[-1])
        champion = registry.champion() or champion
    store.close()
    return plan, rows, evaluator.paired_p(first, registry.champion() or champion)


def retrain_round(
    home: Any, registry: Any, evaluator: FormEvaluator, champion: ModelVersion, round_no: int, labellers: Labellers,
    store: Any,
) -> ShiftRow:
    from core.registry.stages import read_last_run
    from feedback.training.readiness import readiness
    from retrain.run import retrain

    started = time.perf_counter()
    try:
        result = retrain(home.retrain, track=False)
        decision, reasons, name, counts = result.decision, result.reasons, result.challenger, result.rows
    except Exception as exc:  # a failed run leaves the champion serving; the scenario goes on
        decision, reasons, name, counts = "failed", [f"{type(exc).__name__}: {exc}"], None, {}
    after = registry.champion() or champion
    row = ShiftRow(round_no, labellers.tally.labels, labellers.tally.corrections, after.version, decision,
                   evaluator.accuracy(after), reason="; ".join(reasons), rows=dict(counts),
                   retrain_s=round(time.perf_counter() - started, 1))
    if name:  # is the challenger, refused or not, really better on the unseen rows? (what the gate cannot see)
        challenger = registry.get(name)
        row.challenger = evaluator.accuracy(challenger)
        row.challenger_p = evaluator.paired_p(champion, challenger)
    setup = home.retrain  # what the admin's retrain preview would say now, after this run
    row.traffic_needed = readiness(store, setup.trust, setup.policy, setup.gate, read_last_run(home.paths)).traffic.needed
    return row


def print_shift_row(row: ShiftRow) -> None:
    acc = row.accuracy
    chall = row.challenger.get(InputForm.TITLE.value)
    p = row.challenger_p.get(InputForm.TITLE.value)
    print(f"{row.round:>5} {row.labels:>6} {row.corrections:>5} {acc['title']:>8.4f} {acc['full']:>8.4f} "
          f"{acc['base']:>8.4f} {'-' if chall is None else f'{chall:.4f}':>8} {row.retrain_s:>7.0f} "
          f"{row.rows.get('traffic', 0):>4}/{'-' if row.traffic_needed is None else row.traffic_needed:<5} {row.champion} "
          f"{row.decision}{'' if p is None else f' (challenger vs champion on unseen headlines: p={p:.2g})'}"
          f"{': ' + row.reason[:200] if row.reason else ''}", flush=True)


def shift_summary(rows: list[ShiftRow], p: dict[str, float], wall_s: float) -> str:
    start, end = rows[0].accuracy, rows[-1].accuracy
    promotions = sum(r.decision == "promoted" for r in rows)

    def change(name: str, label: str, digits: int = 1) -> str:
        return (f"{label} {start[name]:.4f} -> {end[name]:.4f} ({(end[name] - start[name]) * 100:+.{digits}f} pt, "
                f"McNemar p={p[name]:.2g})")

    return (f"SUMMARY shift-from-starter: {rows[-1].labels} labels ({rows[-1].corrections} corrections), "
            f"{promotions}/{len(rows) - 1} promoted; unseen rows: {change('title', 'headline-only')}, "
            f"{change('full', 'title+description')}; {change('base', 'base validation', 2)}; wall {wall_s / 60:.1f} min")
