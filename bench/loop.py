"""Prove the loop learns: simulated labellers correct a champion on a topic it never saw, retrains gate it.

A shifted slice (Business articles about oil and energy prices, picked by keywords) is kept out of the
champion's data. Simulated labellers then see a stream of new articles (the slice's stream part mixed with
unseen non-slice articles), label a budget of them per round, chosen from a larger candidate pool in the
champion's uncertainty order (the feedback queue) or at random, and each round ends with a real
`retrain.run.retrain` (trust rules, gate, promotion). Every round prints the champion's accuracy on the
held-out part of the slice and on base validation; the curve goes to a PNG, all rows to a JSON file.

Run from the repository root::

    python bench/loop.py --quick                 # ~10 min on 2 cores: small champion, 2 rounds of 150
    python bench/loop.py                         # full: bigger champion, 4 rounds, both orders (< 60 min)
    python bench/loop.py --tiny                  # seconds: 2-layer random model on the seed set (mechanics)
    python bench/loop.py --quick --malicious 0.2    # trolls give 20% of answers; known-answer checks on

Data: `--data` (default NEWSLOOP_DATA, else ../shared/data/ag_news), a local AG-News-format folder or CSV.
The last printed line is a one-line SUMMARY.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as a script from anywhere

from core.data import Example, is_validation, read_csv, split_by_hash  # noqa: E402
from core.labels import LABELS, label_index  # noqa: E402
from core.text import text_hash  # noqa: E402

if TYPE_CHECKING:
    from core.config import Settings
    from core.registry import ModelVersion
    from core.serving import OnnxClassifier
    from feedback.store import FeedbackStore

log = logging.getLogger("bench.loop")

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "ag_news"
ORDERS = ("uncertainty", "random")
SLICE_LABEL = "Business"
# Oil and energy prices: about 900 Business rows over train.csv and the extra files of the offline copy.
SLICE_KEYWORDS = ("oil", "crude", "opec", "barrel", "barrels", "petroleum", "gasoline",
                  "energy price", "energy prices", "fuel price", "fuel prices")
# The seed set has only five oil articles; the mechanics test takes Business news about markets too.
TINY_KEYWORDS = (*SLICE_KEYWORDS, "energy", "fuel", "price", "prices", "market", "markets", "share", "shares",
                 "stock", "stocks", "profit", "profits")
HONEST = ("reader-1", "reader-2", "reader-3", "reader-4", "reader-5")
MALICIOUS = ("troll-1", "troll-2", "troll-3")
MIN_SLICE_ROWS = 300  # below this the slice-test part is too small to show a gain


@dataclass(frozen=True)
class Preset:
    """Sizes of one run; command-line options override each field."""

    champion_rows: int  # bootstrap max_rows (0 = all)
    champion_minutes: float  # bootstrap training budget (0 = none)
    rounds: int
    per_round: int  # labels per round (K)
    base_rows: int  # base rows replayed per retrain (0 = all)
    retrain_minutes: float  # training budget per retrain (0 = none)
    compare_orders: bool


PRESETS = {
    "full": Preset(6000, 6.0, 4, 100, 2000, 2.0, True),
    "quick": Preset(3000, 2.5, 2, 150, 1000, 1.5, False),
    "tiny": Preset(0, 0.0, 2, 10, 0, 0.0, False),
}


@dataclass(frozen=True)
class SourceFile:
    """One CSV of the data source: its raw rows (written back verbatim) and their parsed examples."""

    name: str  # name in the simulation's data folder: train.csv or train_*.csv
    header: list[str] | None
    rows: list[list[str]]
    examples: list[Example]


@dataclass(frozen=True)
class SlicePlan:
    slice_rows: int
    slice_by_file: dict[str, int]
    slice_stream: list[Example]
    slice_test: list[Example]
    other_stream: list[Example]
    stream: list[Example]  # slice_stream + other_stream, shuffled: what labellers are offered, in this order
    excluded: frozenset[str]  # text hashes kept out of the champion's (and every retrain's) base data
    checks: list[Example] = field(default_factory=list)  # known-answer checks: training rows, labels vouched for


@dataclass
class RoundRow:
    order: str
    round: int
    labels: int  # answers recorded so far
    corrections: int  # of which kind 'correct' (the model was wrong, or a malicious answer said so)
    malicious: int  # wrong answers so far
    suspicious: int  # answers the trust rules marked suspicious so far
    champion: str
    slice_acc: float
    base_acc: float
    decision: str  # start | promoted | refused | failed | no labels
    reason: str = ""
    challenger: str | None = None
    challenger_slice_acc: float | None = None
    challenger_base_acc: float | None = None
    worse_on_base: bool | None = None  # promoted, and worse on base validation than the champion it replaced
    feedback_train: int = 0
    feedback_holdout: int = 0
    retrain_s: float = 0.0
    seconds: float = 0.0
    checks: int = 0  # answers on known-answer checks so far (part of `labels`)
    caught: int = 0  # annotators the retrain did not train on (failed checks or low agreement)
    poisoned: int = 0  # feedback rows the trust rules passed with a wrong label


@dataclass
class Stream:
    """What the labellers have not labelled yet: future articles, and the current candidate pool."""

    upcoming: list[Example]
    pending: dict[str, str] = field(default_factory=dict)  # text hash -> text, in the pool, unlabelled

    def refill(self, size: int) -> list[str]:
        """Top the candidate pool up to `size` with the next articles; returns the new texts."""
        added = []
        while len(self.pending) < size and self.upcoming:
            ex = self.upcoming.pop(0)
            self.pending[text_hash(ex.text)] = ex.text
            added.append(ex.text)
        return added


@dataclass
class Tally:
    labels: int = 0
    corrections: int = 0
    malicious: int = 0
    suspicious: int = 0
    checks: int = 0


# Data --------------------------------------------------------------------------------------------------


def read_source(path: Path, name: str) -> SourceFile:
    """A CSV with its raw rows aligned to `core.data.read_csv`'s examples (same header and empty-row rules)."""
    examples = read_csv(path)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header = rows[0] if rows and rows[0] and not rows[0][0].strip().isdigit() else None
    data = [row for row in rows[1 if header else 0 :] if row]
    if len(data) != len(examples):
        raise RuntimeError(f"{path}: {len(data)} raw rows but {len(examples)} parsed examples")
    return SourceFile(name, header, data, examples)


def load_sources(data: str) -> list[SourceFile]:
    """train.csv and the train_*.csv extras of a local folder, one local CSV, or the seed set."""
    from core.config import SEED_CSV

    if data == "seed":
        return [read_source(SEED_CSV, "train.csv")]
    path = Path(data).expanduser()
    if path.is_file():
        return [read_source(path, "train.csv")]
    if not (path / "train.csv").is_file():
        raise SystemExit(f"--data {data}: needs a local AG-News folder with train.csv, a CSV file, or 'seed'")
    return [read_source(path / "train.csv", "train.csv")] + [
        read_source(extra, extra.name) for extra in sorted(path.glob("train_*.csv"))
    ]


def keyword_pattern(words: Sequence[str]) -> re.Pattern[str]:
    alternatives = sorted({w.strip().lower() for w in words if w.strip()}, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in alternatives) + r")\b", re.I)


def plan_slice(
    sources: list[SourceFile],
    pattern: re.Pattern[str],
    *,
    test_fraction: float,
    other_share: float,
    val_fraction: float,
    seed: int,
    checks: int = 0,
) -> SlicePlan:
    """Pick the slice, split it by text hash into stream and slice-test parts, and draw the non-slice stream.

    Stream and slice-test articles come from rows outside base validation, so validation stays what it is:
    the data's own validation split, slice rows included (the champion never trains on validation rows
    anyway). A validation set without the slice would punish every challenger that learns it: the
    champion's "energy is Sci/Tech" shortcut would look right there and the correction look like a regression.
    `checks` known-answer checks are drawn from the remaining non-slice rows; they stay in the training data.
    """
    slice_label = label_index(SLICE_LABEL)
    seen: set[str] = set()
    in_slice: list[Example] = []
    others: list[Example] = []
    by_file: dict[str, int] = {}
    for source in sources:
        for ex in source.examples:
            digest = text_hash(ex.text)
            if digest in seen:
                continue
            seen.add(digest)
            if is_validation(ex.text, val_fraction):
                continue
            if ex.label == slice_label and pattern.search(ex.text):
                in_slice.append(ex)
                by_file[source.name] = by_file.get(source.name, 0) + 1
            else:
                others.append(ex)
    slice_stream, slice_test = split_by_hash(in_slice, test_fraction, salt="slice-test")
    rng = random.Random(seed)
    wanted = round(len(slice_stream) * other_share / (1.0 - other_share)) if other_share < 1.0 else 0
    other_stream = rng.sample(others, min(wanted, len(others)))
    stream = slice_stream + other_stream
    rng.shuffle(stream)
    excluded = frozenset(text_hash(ex.text) for ex in (*in_slice, *other_stream))
    # Drawn after the stream, so runs without checks see the same stream as before checks existed.
    remaining = [ex for ex in others if text_hash(ex.text) not in excluded]
    check_rows = rng.sample(remaining, min(checks, len(remaining)))
    return SlicePlan(len(in_slice), by_file, slice_stream, slice_test, other_stream, stream, excluded, check_rows)


def write_training_folder(sources: list[SourceFile], excluded: frozenset[str], dest: Path) -> dict[str, int]:
    """An AG-News-format folder holding every source row except the excluded texts; rows kept per file."""
    dest.mkdir(parents=True, exist_ok=True)
    kept: dict[str, int] = {}
    for source in sources:
        with (dest / source.name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            if source.header:
                writer.writerow(source.header)
            n = 0
            for row, ex in zip(source.rows, source.examples, strict=True):
                if text_hash(ex.text) not in excluded:
                    writer.writerow(row)
                    n += 1
        kept[source.name] = n
    return kept


# Models ------------------------------------------------------------------------------------------------


def sim_settings(home: Path, data_dir: Path, tiny: bool) -> Settings:
    from core.config import load_settings

    overrides: dict[str, object] = {
        "home": home,
        "data": str(data_dir),
        "labels_required": 1,  # each simulated text is answered once
        # retrain(track=False) still syncs MLflow aliases: keep that inside the simulation's home.
        "mlflow_tracking_uri": f"sqlite:///{home / 'mlflow.db'}",
    }
    if tiny:
        overrides |= {"max_length": 64, "bootstrap_max_minutes": 0.0}
    return load_settings(**overrides)


def tiny_factory(seed: int) -> Callable[[ModelVersion | None], Any]:
    """Warm start from the champion's checkpoint, or a fresh 2-layer random model (as tests/conftest.py)."""

    def factory(champion: ModelVersion | None) -> Any:
        from transformers import AutoTokenizer

        from retrain.model import CHECKPOINT_DIR, load_checkpoint, resolve_base_model, tiny_model

        if champion is not None and (champion.path / CHECKPOINT_DIR).is_dir():
            return load_checkpoint(champion.path / CHECKPOINT_DIR)
        return tiny_model(seed=seed), AutoTokenizer.from_pretrained(resolve_base_model(""))

    return factory


def train_champion(settings: Settings, preset: Preset, tiny: bool, seed: int) -> float:
    """Bootstrap the champion on the data without the slice; returns seconds."""
    from retrain.pipeline import bootstrap

    started = time.perf_counter()
    model_and_tokenizer = tiny_factory(seed)(None) if tiny else None
    bootstrap(
        settings, max_rows=preset.champion_rows, max_minutes=preset.champion_minutes,
        model_and_tokenizer=model_and_tokenizer, track=False,
    )
    return time.perf_counter() - started


class Evaluator:
    """Accuracy of model versions on the slice-test part (through OnnxClassifier), cached per version."""

    def __init__(self, slice_test: list[Example]) -> None:
        self.slice_test = slice_test
        self._models: dict[str, OnnxClassifier] = {}
        self._slice: dict[str, float] = {}

    def classifier(self, version: ModelVersion) -> OnnxClassifier:
        from core.serving import load_version

        if version.version not in self._models:
            if len(self._models) >= 2:  # the champion and one challenger; older sessions only hold memory
                self._models.pop(next(iter(self._models)))
            self._models[version.version] = load_version(version)
        return self._models[version.version]

    def slice_accuracy(self, version: ModelVersion) -> float:
        if version.version not in self._slice:
            clf = self.classifier(version)
            predicted = clf.proba_in_label_order([ex.text for ex in self.slice_test]).argmax(axis=1)
            self._slice[version.version] = float(np.mean(predicted == np.array([ex.label for ex in self.slice_test])))
        return self._slice[version.version]


def base_accuracy(version: ModelVersion) -> float:
    """Base-validation accuracy of the file the version serves, as its export measured it through
    OnnxClassifier on the same corpus validation (retrain and bootstrap read the same data folder)."""
    from core.serving import INT8_FILE

    precision = "int8" if version.meta.get("serve_file") == INT8_FILE else "fp32"
    return float(version.meta["validation"][precision]["accuracy"])


# Labelling ---------------------------------------------------------------------------------------------


class Labellers:
    """Simulated annotators: honest ones give the true label; trolls, who do a `malicious` share of the
    work, always give a wrong one (on known-answer checks too)."""

    def __init__(
        self, store: FeedbackStore, truth: dict[str, int], malicious: float, rng: random.Random,
        settings: Settings,
    ) -> None:
        self.store = store
        self.truth = truth
        self.malicious = malicious
        self.rng = rng
        self.check_policy = {"min_checks": settings.min_checks, "check_share": settings.check_share}
        self.checks = set(store.gold_labels())
        self.tally = Tally()

    def pick(self) -> str:
        """Who takes the next item. The draws are the ones the simulation always made (a share, then a
        name), so runs without trolls label exactly what they did before checks existed."""
        if self.rng.random() < self.malicious:
            return self.rng.choice(MALICIOUS)
        return self.rng.choice(HONEST)

    def due_check(self, annotator: str) -> dict[str, Any] | None:
        return self.store.due_check(annotator, **self.check_policy) if self.checks else None

    def answer(
        self, annotator: str, text: str, clf: OnnxClassifier, probs: np.ndarray, version: str,
        item_id: int | None = None,
    ) -> None:
        digest = text_hash(text)
        true_label = LABELS[self.truth[digest]]
        predicted = clf.labels[int(np.argmax(probs))]
        if annotator in MALICIOUS:
            label = self.rng.choice([name for name in LABELS if name != true_label])
            self.tally.malicious += 1
        else:
            label = true_label
        kind = "queue" if item_id is not None else "confirm" if label == predicted else "correct"
        result = self.store.record(
            text=text, user_label=label, annotator=annotator, kind=kind, predicted_label=predicted,
            probabilities={name: float(p) for name, p in zip(clf.labels, probs, strict=True)},
            model_version=version, item_id=item_id,
        )
        self.tally.labels += 1
        self.tally.corrections += label != predicted
        self.tally.suspicious += result.status == "suspicious"
        self.tally.checks += digest in self.checks

    def review(self) -> int:
        """An oracle maintainer: accept suspicious answers that are right, reject the others."""
        reviewed = 0
        for row in self.store.answers(status="suspicious"):
            right = row["user_label"] == LABELS[self.truth[row["text_hash"]]]
            self.store.set_status(row["id"], "accepted" if right else "rejected")
            reviewed += 1
        return reviewed


def label_round(
    labellers: Labellers, stream: Stream, clf: OnnxClassifier, version: str, *, order: str, budget: int,
    pool_size: int, round_no: int, scores: dict[str, np.ndarray],
) -> int:
    """Let the labellers answer up to `budget` items in the given order; returns how many they answered.

    uncertainty: the real queue. New candidates go into the store's pool, `rescore` scores them with the
    champion (margin uncertainty), and `next_item` hands each annotator a due known-answer check or the
    most uncertain unanswered item. random: a uniform sample of the same candidate pool, with the same
    checks whenever one is due.
    """
    store = labellers.store
    added = stream.refill(pool_size)
    if order == "random":
        chosen = labellers.rng.sample(list(stream.pending.values()), min(budget, len(stream.pending)))
        probs = dict(zip(chosen, clf.predict_proba(chosen), strict=True)) if chosen else {}
        queue = iter(chosen)
        answered = 0
        while answered < budget:
            annotator = labellers.pick()
            check = labellers.due_check(annotator)
            if check is not None:
                row = clf.predict_proba([check["text"]])[0]
                labellers.answer(annotator, check["text"], clf, row, version, item_id=check["id"])
            else:
                text = next(queue, None)
                if text is None:
                    break
                labellers.answer(annotator, text, clf, probs[text], version)
                stream.pending.pop(text_hash(text), None)
            answered += 1
        return answered

    if added:
        store.add_to_pool(added, source=f"loop-round-{round_no}")

    def scorer(texts: list[str]) -> np.ndarray:
        probs = clf.predict_proba(texts)
        scores.update({text_hash(t): p for t, p in zip(texts, probs, strict=True)})
        return probs

    store.rescore(scorer, version)
    answered = 0
    while answered < budget:
        annotator = labellers.pick()
        # Every answered ordinary item leaves the queue (labels_required = 1); checks stay for others.
        item = store.next_item(annotator, **labellers.check_policy)
        if item is None:
            break
        digest = text_hash(item["text"])
        probs = scores[digest] if digest in scores else scorer([item["text"]])[0]
        labellers.answer(annotator, item["text"], clf, probs, version, item_id=item["id"])
        stream.pending.pop(digest, None)
        answered += 1
    return answered


# One simulated run -------------------------------------------------------------------------------------


def run_order(
    settings: Settings, plan: SlicePlan, preset: Preset, args: argparse.Namespace, order: str
) -> list[RoundRow]:
    """Rounds of labelling + retrain from the champion in `settings.home`; prints and returns one row a round."""
    from core.registry import ModelRegistry
    from feedback.store import FeedbackStore

    registry = ModelRegistry(settings.models_dir)
    evaluator = Evaluator(plan.slice_test)
    truth = {text_hash(ex.text): ex.label for ex in (*plan.stream, *plan.checks)}
    store = FeedbackStore(settings.feedback_db, writes_per_minute=1_000_000_000, durable=False)
    if plan.checks:
        store.add_to_pool([ex.text for ex in plan.checks], source="loop-checks",
                          labels=[LABELS[ex.label] for ex in plan.checks])
    labellers = Labellers(store, truth, args.malicious, random.Random(f"{args.seed}-{order}"), settings)
    stream = Stream(list(plan.stream))
    factory = tiny_factory(args.seed) if args.tiny else None
    scores: dict[str, dict[str, np.ndarray]] = {}

    champion = registry.champion()
    if champion is None:
        raise RuntimeError(f"no champion in {settings.models_dir}: the bootstrap did not finish")
    rows = [RoundRow(order, 0, 0, 0, 0, 0, champion.version, evaluator.slice_accuracy(champion),
                     base_accuracy(champion), "start")]
    print_header(order)
    print_row(rows[0])
    for round_no in range(1, preset.rounds + 1):
        started = time.perf_counter()
        clf = evaluator.classifier(champion)
        answered = label_round(
            labellers, stream, clf, champion.version, order=order, budget=preset.per_round,
            pool_size=preset.per_round * args.pool_factor, round_no=round_no,
            scores=scores.setdefault(champion.version, {}),
        )
        if answered == 0:
            print(f"stream exhausted after {labellers.tally.labels} labels")
            break
        if args.review == "oracle":
            labellers.review()
        caught, poisoned = trust_outcome(settings, store, truth)
        row = retrain_and_measure(settings, registry, evaluator, champion, preset, factory)
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


def trust_outcome(settings: Settings, store: FeedbackStore, truth: dict[str, int]) -> tuple[int, int]:
    """Annotators the trust rules leave out, and trusted feedback rows whose label is wrong, as the retrain
    about to run will see them (the same snapshot reader and rules)."""
    from feedback.trust import excluded_annotators
    from retrain.run import feedback_snapshot

    excluded = excluded_annotators(
        store.answers(), store.gold_labels(), min_checks=settings.min_checks,
        min_check_accuracy=settings.min_check_accuracy,
    )
    train_part, holdout, _ = feedback_snapshot(settings, settings.feedback_db)
    return len(excluded), sum(ex.label != truth[text_hash(ex.text)] for ex in (*train_part, *holdout))


def retrain_and_measure(
    settings: Settings, registry: Any, evaluator: Evaluator, champion: ModelVersion, preset: Preset,
    factory: Callable[[ModelVersion | None], Any] | None,
) -> RoundRow:
    """One real retrain, then the accuracies of the champion it leaves (and of a refused challenger)."""
    from retrain.run import RunResult, retrain

    started = time.perf_counter()
    try:
        result = retrain(
            settings, model_factory=factory, max_minutes=preset.retrain_minutes, base_rows=preset.base_rows,
            track=False,
        )
    except Exception as exc:  # a failed run leaves the champion serving; the simulation goes on
        log.exception("retrain failed")
        result = RunResult("failed", [f"{type(exc).__name__}: {exc}"], seconds=round(time.perf_counter() - started, 1))
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


# Report ------------------------------------------------------------------------------------------------


def print_header(order: str) -> None:
    print(f"\n## order: {order}")
    print(f"{'round':>5} {'labels':>6} {'corr':>5} {'susp':>5} {'chk':>4} {'bad':>4} {'out':>3} {'fb':>4} {'slice':>6} "
          f"{'base':>6} {'chall':>6} {'secs':>6}  decision")
    print("(corr: corrections so far; susp: answers marked suspicious; chk: answers on known-answer checks; bad: "
          "trusted feedback rows with a wrong label; out: annotators not trained on; fb: trusted feedback rows the "
          "retrain trained on; slice/base: champion accuracy on slice-test / base validation; chall: challenger's "
          "slice accuracy)")


def print_row(row: RoundRow) -> None:
    chall = f"{row.challenger_slice_acc:.3f}" if row.challenger_slice_acc is not None else "-"
    decision = row.decision + (f": {row.reason[:150]}" if row.reason else "")
    if row.worse_on_base:
        decision += " [promoted model worse on base]"
    print(f"{row.round:>5} {row.labels:>6} {row.corrections:>5} {row.suspicious:>5} {row.checks:>4} "
          f"{row.poisoned:>4} {row.caught:>3} {row.feedback_train:>4} "
          f"{row.slice_acc:>6.3f} "
          f"{row.base_acc:>6.3f} {chall:>6} {row.seconds:>6.0f}  {decision}", flush=True)


def print_plan(plan: SlicePlan, words: Sequence[str], kept: dict[str, int], check_size: bool) -> None:
    print(f"slice: {SLICE_LABEL} articles matching {', '.join(words)}: {plan.slice_rows} rows outside validation "
          f"({', '.join(f'{k} {v}' for k, v in plan.slice_by_file.items())}); "
          f"stream part {len(plan.slice_stream)}, held-out slice-test {len(plan.slice_test)}")
    if check_size and plan.slice_rows < MIN_SLICE_ROWS:
        print(f"WARNING: slice has fewer than {MIN_SLICE_ROWS} rows; its accuracy will be noisy")
    print(f"stream: {len(plan.stream)} articles ({len(plan.slice_stream)} slice + {len(plan.other_stream)} other, "
          f"none in the champion's data); training folder keeps {sum(kept.values())} rows "
          f"({', '.join(f'{k} {v}' for k, v in kept.items())})")


def print_results(results: dict[str, dict[str, Any]], comparison: dict[str, Any] | None) -> None:
    print()
    for order, result in results.items():
        red = result["relative_error_reduction"]
        print(f"{order}: slice error {1 - result['slice_acc_start']:.3f} -> {1 - result['slice_acc_end']:.3f} "
              f"(relative reduction {'n/a' if red is None else f'{red * 100:.1f}%'}) after {result['corrections']} "
              f"corrections / {result['labels']} labels; base validation {result['base_acc_start']:.4f} -> "
              f"{result['base_acc_end']:.4f} (drop {result['base_drop_points']:+.2f} pt); troll answers "
              f"{result['malicious']}, wrong labels trusted {result['wrong_labels_trusted']}; promoted "
              f"{result['promoted']}/{result['rounds']}; promoted model worse on base than its predecessor: "
              f"{result['worse_promotion_rounds'] or 'never'}")
    if comparison:
        need = {order: "not reached" if n is None else n for order, n in comparison["labels_needed"].items()}
        print(f"labels to reach the same slice gain ({comparison['target_gain'] * 100:+.1f} pt: the random order's "
              f"final gain, at least a {TARGET_ERROR_REDUCTION:.0%} error reduction): {need}; uncertainty saves "
              f"{saving_text(comparison)}")


def labels_to_reach(rows: list[RoundRow], gain: float) -> int | None:
    """Labels after which the champion's slice accuracy first gained at least `gain`; None if never."""
    start = rows[0].slice_acc
    return next((r.labels for r in rows if r.slice_acc - start >= gain - 1e-9), None)


def outcome(rows: list[RoundRow], max_corrections: int) -> dict[str, Any]:
    """The targets, computed at the last round that used at most `max_corrections` corrections."""
    first = rows[0]
    within = [r for r in rows if r.corrections <= max_corrections]
    last = within[-1]
    err0, err = 1.0 - first.slice_acc, 1.0 - last.slice_acc
    return {
        "round": last.round,
        "labels": last.labels,
        "corrections": last.corrections,
        "slice_acc_start": first.slice_acc,
        "slice_acc_end": last.slice_acc,
        "relative_error_reduction": (err0 - err) / err0 if err0 > 0 else None,
        "base_acc_start": first.base_acc,
        "base_acc_end": last.base_acc,
        "base_drop_points": (first.base_acc - last.base_acc) * 100,
        "promoted": sum(r.decision == "promoted" for r in rows),
        "rounds": len(rows) - 1,
        "worse_promotion_rounds": [r.round for r in rows if r.worse_on_base],
        "malicious": last.malicious,
        "checks": last.checks,
        "annotators_left_out": last.caught,
        "wrong_labels_trusted": last.poisoned,
    }


# The target: the slice error falls by at least this share.
TARGET_ERROR_REDUCTION = 0.3


def compare(runs: dict[str, list[RoundRow]]) -> dict[str, Any] | None:
    """Labels each order needed for the same slice gain: the random order's final gain, but at least the
    gain of a 30% relative error reduction (when random gains nothing, "reach its gain" is trivially met).

    When only the uncertainty order got there, the saving is a lower bound: random needs more labels
    than it was given.
    """
    if not set(ORDERS) <= runs.keys():
        return None
    random_rows = runs["random"]
    floor = TARGET_ERROR_REDUCTION * (1.0 - random_rows[0].slice_acc)
    gain = max(random_rows[-1].slice_acc - random_rows[0].slice_acc, floor)
    needed = {order: labels_to_reach(runs[order], gain) for order in ORDERS}
    diff, at_least = None, False
    if needed["uncertainty"] is not None:
        if needed["random"] is not None:
            diff = needed["random"] - needed["uncertainty"]
        else:
            diff, at_least = random_rows[-1].labels - needed["uncertainty"], True
    return {"target_gain": gain, "labels_needed": needed, "labels_saved_by_uncertainty": diff,
            "saving_is_lower_bound": at_least}


def saving_text(comparison: dict[str, Any]) -> str:
    saved = comparison["labels_saved_by_uncertainty"]
    if saved is None:
        return "n/a"
    return f"more than {saved}" if comparison["saving_is_lower_bound"] else str(saved)


def write_outputs(out_dir: Path, mode: str, report: dict[str, Any], runs: dict[str, list[RoundRow]]) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"loop_{mode}.json"
    json_path.write_text(json.dumps(report | {"rows": {o: [asdict(r) for r in rs] for o, rs in runs.items()}},
                                    indent=2, default=str))
    fig, (ax_slice, ax_base) = plt.subplots(1, 2, figsize=(11, 4.2))
    for order, rows in runs.items():
        labels = [r.labels for r in rows]
        ax_slice.plot(labels, [r.slice_acc for r in rows], marker="o", label=f"champion ({order})")
        chall = [(r.labels, r.challenger_slice_acc) for r in rows if r.challenger_slice_acc is not None]
        if chall:
            ax_slice.plot(*zip(*chall, strict=True), linestyle=":", marker="x", label=f"challenger ({order})")
        ax_base.plot(labels, [r.base_acc for r in rows], marker="o", label=f"champion ({order})")
        chall = [(r.labels, r.challenger_base_acc) for r in rows if r.challenger_base_acc is not None]
        if chall:
            ax_base.plot(*zip(*chall, strict=True), linestyle=":", marker="x", label=f"challenger ({order})")
    ax_slice.set(title=f"held-out slice ({SLICE_LABEL} articles picked by keywords)", xlabel="labels",
                 ylabel="accuracy")
    ax_base.set(title="base validation", xlabel="labels", ylabel="accuracy")
    for ax in (ax_slice, ax_base):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"NewsLoop learning loop ({mode})")
    fig.tight_layout()
    png_path = out_dir / f"loop_{mode}.png"
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return [png_path, json_path]


def summary_line(mode: str, plan: SlicePlan, primary: str, result: dict[str, Any], comparison: dict[str, Any] | None,
                 max_corrections: int, wall_s: float) -> str:
    red = result["relative_error_reduction"]
    parts = [
        f"SUMMARY loop {mode} ({primary} order): slice {plan.slice_rows} rows "
        f"(stream {len(plan.slice_stream)}, test {len(plan.slice_test)});",
        f"slice accuracy {result['slice_acc_start']:.3f} -> {result['slice_acc_end']:.3f}",
        f"= relative error reduction {red * 100:.1f}%" if red is not None else "= error reduction n/a",
        f"with {result['corrections']} corrections (<= {max_corrections}) / {result['labels']} labels;",
        f"base validation drop {result['base_drop_points']:+.2f} pt;",
        f"promoted {result['promoted']}/{result['rounds']},",
        "a promoted model worse on base: " + (f"yes (rounds {result['worse_promotion_rounds']})"
                                              if result["worse_promotion_rounds"] else "no") + ";",
    ]
    if result["malicious"] or result["checks"]:
        parts.append(
            f"troll answers {result['malicious']}, check answers {result['checks']}, annotators left out "
            f"{result['annotators_left_out']}, wrong labels trusted {result['wrong_labels_trusted']};"
        )
    if comparison:
        need = comparison["labels_needed"]
        parts.append(
            f"labels to reach the same slice gain {comparison['target_gain'] * 100:+.1f} pt: "
            f"uncertainty {need['uncertainty'] if need['uncertainty'] is not None else 'not reached'}, "
            f"random {need['random'] if need['random'] is not None else 'not reached'}, "
            f"saved {saving_text(comparison)};"
        )
    parts.append(f"wall {wall_s / 60:.1f} min")
    return " ".join(parts)


# Command line ------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="about 10 min on 2 cores (2 rounds of 150)")
    mode.add_argument("--tiny", action="store_true", help="seconds: 2-layer random model on the seed set")
    parser.add_argument("--data", default=None,
                        help="AG-News folder or CSV (default NEWSLOOP_DATA, else ../shared/data/ag_news; --tiny: seed)")
    parser.add_argument("--home", type=Path, default=None,
                        help="new or empty work folder: data/ and one NEWSLOOP_HOME per order (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "out", help="where the PNG and JSON go")
    parser.add_argument("--order", choices=ORDERS, default="uncertainty", help="labelling order (one-order runs)")
    parser.add_argument("--compare-orders", action=argparse.BooleanOptionalAction, default=None,
                        help="run both orders from the same champion (default: on in full mode, off otherwise)")
    parser.add_argument("--rounds", type=int, help="retrain rounds")
    parser.add_argument("--per-round", type=int, help="labels per round (K)")
    parser.add_argument("--pool-factor", type=int, default=3, help="candidate pool = factor x K")
    parser.add_argument("--malicious", type=float, default=0.0, help="share of answers that are wrong labels")
    parser.add_argument("--checks", type=int, default=None,
                        help="known-answer checks in the queue (default: 40 with --malicious, else 0)")
    parser.add_argument("--review", choices=("none", "oracle"), default="none",
                        help="oracle: a maintainer accepts right suspicious answers and rejects wrong ones")
    parser.add_argument("--champion-rows", type=int, help="bootstrap max_rows (0 = all)")
    parser.add_argument("--champion-minutes", type=float, help="bootstrap training budget")
    parser.add_argument("--base-rows", type=int, help="base rows replayed per retrain")
    parser.add_argument("--retrain-minutes", type=float, help="training budget per retrain")
    parser.add_argument("--keywords", help="comma-separated slice keywords (Business rows matching any)")
    parser.add_argument("--test-fraction", type=float, default=0.3, help="share of the slice held out for testing")
    parser.add_argument("--slice-share", type=float, default=0.5, help="share of slice articles in the stream")
    parser.add_argument("--max-corrections", type=int, default=500, help="corrections budget for the targets")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--write-data", type=Path, metavar="DIR",
                        help="only write the champion's data (without the slice and the stream) to DIR, and exit")
    parser.add_argument("--progress", action="store_true", help="show training progress bars")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    args = parser.parse_args(argv)
    if not 0.0 <= args.malicious < 1.0 or not 0.0 < args.slice_share <= 1.0 or args.pool_factor < 1:
        parser.error("--malicious must be in [0, 1), --slice-share in (0, 1], --pool-factor >= 1")
    if args.checks is None:
        args.checks = 40 if args.malicious > 0 else 0
    if args.checks < 0:
        parser.error("--checks must be >= 0")
    return args


def resolve_preset(args: argparse.Namespace) -> tuple[str, Preset]:
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    base = PRESETS[mode]
    chosen = {
        "champion_rows": args.champion_rows, "champion_minutes": args.champion_minutes, "rounds": args.rounds,
        "per_round": args.per_round, "base_rows": args.base_rows, "retrain_minutes": args.retrain_minutes,
        "compare_orders": args.compare_orders,
    }
    return mode, Preset(**(asdict(base) | {k: v for k, v in chosen.items() if v is not None}))


def work_folder(args: argparse.Namespace) -> Path:
    if args.home is None:
        return Path(tempfile.mkdtemp(prefix="newsloop-loop-"))
    if args.home.exists() and any(args.home.iterdir()):
        raise SystemExit(f"--home {args.home} is not empty; the simulation needs a fresh folder")
    args.home.mkdir(parents=True, exist_ok=True)
    return args.home.resolve()


def configure_logging(args: argparse.Namespace) -> None:
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        # One warning per suspicious answer or flagged annotator: counted in the table instead.
        logging.getLogger("feedback").setLevel(logging.ERROR)
        for noisy in ("transformers", "mlflow"):
            logging.getLogger(noisy).setLevel(logging.ERROR)
    if not args.progress:
        os.environ["TQDM_DISABLE"] = "1"


def prepare(
    args: argparse.Namespace, data_dir: Path, val_fraction: float
) -> tuple[str, list[str], SlicePlan, dict[str, int]]:
    """Pick the slice and the stream, and write the champion's data folder without them."""
    data = args.data or ("seed" if args.tiny else os.environ.get("NEWSLOOP_DATA") or str(DEFAULT_DATA))
    words = args.keywords.split(",") if args.keywords else (TINY_KEYWORDS if args.tiny else SLICE_KEYWORDS)
    sources = load_sources(data)
    plan = plan_slice(sources, keyword_pattern(words), test_fraction=args.test_fraction,
                      other_share=1.0 - args.slice_share, val_fraction=val_fraction, seed=args.seed,
                      checks=args.checks)
    return data, list(words), plan, write_training_folder(sources, plan.excluded, data_dir)


def simulate(args: argparse.Namespace, mode: str, preset: Preset, root: Path) -> str:
    started = time.perf_counter()
    champion_home, data_dir = root / "champion", root / "data"
    settings = sim_settings(champion_home, data_dir, args.tiny)
    data, words, plan, kept = prepare(args, data_dir, settings.val_fraction)
    print(f"# NewsLoop learning loop ({mode}): data {data}, work folder {root}")
    print_plan(plan, words, kept, check_size=not args.tiny)
    print(f"preset: {asdict(preset)}; pool {args.pool_factor}x, malicious {args.malicious:.0%}, "
          f"known-answer checks {len(plan.checks)}, review {args.review}", flush=True)

    seconds = train_champion(settings, preset, args.tiny, args.seed)
    print(f"champion trained without the slice in {seconds:.0f} s", flush=True)

    orders = list(ORDERS) if preset.compare_orders else [args.order]
    runs: dict[str, list[RoundRow]] = {}
    for order in orders:
        home = champion_home
        if len(orders) > 1:  # each order starts from its own copy of the same champion
            home = root / f"home-{order}"
            shutil.copytree(champion_home, home)
        runs[order] = run_order(sim_settings(home, data_dir, args.tiny), plan, preset, args, order)

    primary = "uncertainty" if "uncertainty" in runs else orders[0]
    results = {order: outcome(rows, args.max_corrections) for order, rows in runs.items()}
    comparison = compare(runs)
    wall_s = time.perf_counter() - started
    report = {
        "mode": mode, "data": data, "keywords": list(words), "preset": asdict(preset), "args": vars(args),
        "slice": {"rows": plan.slice_rows, "by_file": plan.slice_by_file, "stream": len(plan.slice_stream),
                  "test": len(plan.slice_test), "other_stream": len(plan.other_stream)},
        "training_rows": kept, "champion_seconds": seconds, "results": results, "comparison": comparison,
        "wall_seconds": wall_s,
    }
    paths = write_outputs(args.out, mode, report, runs)
    print_results(results, comparison)
    print("wrote " + ", ".join(str(p) for p in paths))
    return summary_line(mode, plan, primary, results[primary], comparison, args.max_corrections, wall_s)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args)
    if args.write_data:
        from core.config import load_settings

        _, words, plan, kept = prepare(args, args.write_data, load_settings().val_fraction)
        print_plan(plan, words, kept, check_size=not args.tiny)
        print(f"wrote {args.write_data}")
        return 0
    mode, preset = resolve_preset(args)
    root = work_folder(args)
    try:
        summary = simulate(args, mode, preset, root)
    finally:
        if args.home is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
