"""Teach the product a topic end to end: a starter without it (new) or with it merged into a neighbour (split), then
`newsloop topics add|split`, simulated labellers answering what the queue serves, and a real retrain after each
round, scored on rows no round saw.

From the data's train.csv a seeded draw carves disjoint parts: the queue's pool (every topic; labellers know the
labels, the product does not), evaluation rows (no round sees them), and the rest, the starter's data folder,
written without the taught topic (new) or with its rows labelled as its neighbour (split). The starter is
trained on that folder by the real bootstrap once and kept in --starter-cache under a key of the folder's bytes
and the bootstrap's caps. Each round the labellers answer the queue (Pool.next_item / record, as the
page does) up to the round's cumulative label count, `retrain.run.retrain` (what `newsloop retrain` runs) trains
and gates a challenger, and the serving champion (its int8 ONNX file) is scored: accuracy over every topic, the
taught topic's recall and precision. One table per scenario, then a SUMMARY line; all rows go to --out (JSON).

Run from the repository root::

    python bench/taxonomy.py --quick                  # seconds: tiny random model on the seed set (mechanics only)
    python bench/taxonomy.py                          # both scenarios, 200 then 400 labels (CPU-hours on 2 cores)
    python bench/taxonomy.py --scenario split --topic Sci/Tech --into Business --labels 100,200,400

Targets (issue 46): after 200 labels the champion's accuracy >= 0.88 and the taught topic's recall and
precision >= 0.85; after 400 labels accuracy >= 0.90 (recall and precision still >= 0.85); promoted by the
normal retrain and gate, each retrain at most 10 minutes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import options
from bench.loop import configure_logging
from bench.sim.carve import SCENARIOS, TopicScenario, carve, folder_digest, write_starter_folder
from bench.sim.champion import SimHome, sim_settings, tiny_factory
from bench.sim.data import data_location, load_sources
from bench.sim.starters import starter_into, starter_spec
from bench.sim.teach import TeachRow, TeachRun, teach
from core.settings.config import PROJECT_ROOT

STARTER_CACHE = PROJECT_ROOT.parent / "taxonomy-starters"  # beside the checkout, as ../scenario-starter is


@dataclass(frozen=True)
class Target:
    """Issue 46's bar from `labels` answers on: the champion's accuracy, and the taught topic's recall and precision."""

    labels: int
    accuracy: float
    recall: float
    precision: float


TARGETS = (Target(200, 0.88, 0.85, 0.85), Target(400, 0.90, 0.85, 0.85))
MAX_RETRAIN_MINUTES = 10.0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = options.parser(__doc__)
    parser.add_argument("--scenario", choices=(*SCENARIOS, "both"), default="both", help="which scenario(s) to run")
    parser.add_argument("--topic", default="Sci/Tech", help="the topic to teach (a topic of the data)")
    parser.add_argument("--into", default="Business", help="split: the neighbour the starter files it under")
    parser.add_argument("--labels", default=None,
                        help="cumulative answers after each round, comma-separated (default 200,400; --quick 20,40)")
    parser.add_argument("--data", default=None,
                        help=f"AG-News-format folder or CSV (default NEWSLOOP_DATA, else {options.DEFAULT_DATA}; "
                             "--quick: the seed set)")
    parser.add_argument("--extra", action="store_true", help="also put the folder's train_*.csv in the starter's data")
    parser.add_argument("--pool", type=int, default=None, help="rows in the queue's pool (default 4000; --quick 80)")
    parser.add_argument("--eval", dest="evaluation", type=int, default=None,
                        help="evaluation rows (default 2000; --quick 60)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--starter-cache", type=Path, default=None, metavar="DIR",
                        help=f"where starters are kept and reused (default {STARTER_CACHE}; --quick: none)")
    parser.add_argument("--starter-rows", type=int, default=None, help="bootstrap max rows (default: the setting's)")
    parser.add_argument("--starter-minutes", type=float, default=None,
                        help="bootstrap training budget (default: the setting's)")
    parser.add_argument("--retrain-minutes", type=float, default=None, help="retrain budget (default: the setting's)")
    parser.add_argument("--base-rows", type=int, default=None, help="base rows per retrain (default: the setting's)")
    parser.add_argument("--quick", action="store_true", help="seconds: a 2-layer random model on the seed set")
    parser.add_argument("--home", type=Path, default=None, help="new or empty work folder (default: temporary)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON file of every row (default bench/out/taxonomy_full.json or taxonomy_quick.json)")
    parser.add_argument("--progress", action="store_true", help="show training progress bars")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    args = parser.parse_args(argv)
    args.labels = parse_labels(parser, args.labels or ("20,40" if args.quick else "200,400"))
    args.pool = args.pool or (80 if args.quick else 4000)
    args.evaluation = args.evaluation or (60 if args.quick else 2000)
    if args.starter_cache is None and not args.quick:
        args.starter_cache = STARTER_CACHE
    if args.topic == args.into:
        parser.error("--topic and --into must differ")
    return args


def parse_labels(parser: argparse.ArgumentParser, text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(","))
    except ValueError:
        parser.error(f"--labels {text!r}: comma-separated whole numbers")
    if not counts or counts[0] < 1 or any(b <= a for a, b in zip(counts, counts[1:], strict=False)):
        parser.error(f"--labels {text!r}: increasing counts from 1")
    return counts


def target_for(labels: int) -> Target | None:
    """The strictest bar a champion after `labels` answers must clear; None before the first."""
    reached = [t for t in TARGETS if labels >= t.labels]
    return reached[-1] if reached else None


def meets(row: TeachRow) -> bool | None:
    """Whether a round's champion clears its bar (None: no bar yet at that many answers)."""
    target = target_for(row.labels)
    if target is None:
        return None
    return (row.accuracy >= target.accuracy and row.recall >= target.recall and row.precision >= target.precision
            and row.retrain_minutes <= MAX_RETRAIN_MINUTES)


def scenario_topics(data: str) -> tuple[str, ...]:
    """The source's topics, which its examples' labels index (AG News's four for its numbered CSVs and the seed)."""
    from core.data import source_labels

    return source_labels(data)


def run_scenario(args: argparse.Namespace, kind: str, data: str, root: Path) -> dict[str, Any]:
    """One scenario in its own home under `root`: carve, starter (cached), topic change and rounds; its report."""
    scenario = TopicScenario(kind, args.topic, args.into)
    sources = load_sources(data)
    topics = scenario_topics(data)
    for name in (args.topic, args.into):
        if name not in topics:
            raise SystemExit(f"{name!r} is not a topic of {data} ({', '.join(topics)})")
    carved = carve(sources, topics, pool=args.pool, evaluation=args.evaluation, seed=args.seed)
    data_dir = root / kind / "data"
    written = write_starter_folder(sources, carved, scenario, data_dir, extra=args.extra)
    settings = sim_settings(root / kind / "home", data_dir, args.quick)
    from retrain.inputs import BootstrapSetup, RetrainSetup

    bootstrap = BootstrapSetup.from_settings(settings, max_rows=0 if args.quick else args.starter_rows,
                                             max_minutes=0.0 if args.quick else args.starter_minutes)
    factory = tiny_factory(args.seed, scenario_topics(str(data_dir))) if args.quick else None
    starter = starter_into(bootstrap, starter_spec(bootstrap, folder_digest(data_dir), args.quick), kind,
                           args.starter_cache, factory)
    retrain = RetrainSetup.from_settings(settings, max_minutes=0.0 if args.quick else args.retrain_minutes,
                                         base_rows=0 if args.quick else args.base_rows)
    print(f"\n## {kind}: teach {args.topic}" + (f" (split out of {args.into})" if kind == "split" else ""))
    print(f"rows: starter data {written}, pool {len(carved.pool)}, evaluation {len(carved.evaluation)} "
          f"({sum(carved.topics[e.label] == args.topic for e in carved.evaluation)} of them {args.topic}); starter "
          f"{'from the cache' if starter.cached else 'trained'} in {starter.seconds / 60:.1f} min"
          f"{f' ({starter.where})' if starter.where else ''}", flush=True)
    run = teach(SimHome(retrain=retrain, queue=settings.queue), data_dir, carved, scenario, args.labels,
                seed=args.seed, factory=factory)
    print(f"topics: {', '.join(run.topics_before)} -> {', '.join(run.topics_after)} ({run.change})")
    ceiling = encoder_ceiling(args.topic) if not args.quick else None
    print_table(run, args.topic, ceiling)
    return {"scenario": asdict(scenario), "starter_rows": written, "pool": len(carved.pool),
            "evaluation": len(carved.evaluation), "starter": {**asdict(starter), "where": str(starter.where or "")},
            "change": run.change, "topics_before": run.topics_before, "topics_after": run.topics_after,
            "answers": run.answers, "served": run.served, "rows": [asdict(r) for r in run.rows],
            "meets_targets": [meets(r) for r in run.rows], "ceiling": ceiling}


def f1(recall: float, precision: float) -> float:
    return float(2 * recall * precision / (recall + precision)) if recall + precision else 0.0


def encoder_ceiling(topic: str) -> dict[str, float]:
    """What the same encoder does with the topic when fully supervised: the shipped starter, fine-tuned on every AG
    News row, on its own validation rows (never trained on; its meta's confusion matrix, rows the true topic): the
    topic's recall, precision and F1. A target for a taught topic is set as a share of this."""
    from core.registry.starter import starter_meta

    meta = starter_meta() or {}
    matrix = np.asarray(meta["validation"]["confusion_matrix"], dtype=float)
    k = list(meta["labels"]).index(topic)
    recall, precision = matrix[k, k] / matrix[k].sum(), matrix[k, k] / matrix[:, k].sum()
    return {"recall": float(recall), "precision": float(precision), "f1": f1(recall, precision),
            "rows": int(matrix[k].sum())}


def print_table(run: TeachRun, topic: str, ceiling: dict[str, float] | None = None) -> None:
    share = f" | {topic} F1, share of the ceiling" if ceiling else ""
    print(f"\n| labels | of which {topic} | accuracy | {topic} recall | {topic} precision{share} | decision | retrain min |")
    print("|---|---|---|---|---|---|---|" + ("---|" if ceiling else ""))
    for row in run.rows:
        minutes = f"{row.retrain_minutes:.1f}" if row.round else "-"
        decision = "starter" if row.decision == "start" else row.decision
        cell = (f" | {f1(row.recall, row.precision):.3f} ({f1(row.recall, row.precision) / ceiling['f1']:.0%})"
                if ceiling and ceiling["f1"] else "")
        print(f"| {row.labels} | {row.taught_answers} | {row.accuracy:.3f} | {row.recall:.3f} | {row.precision:.3f}"
              f"{cell} | {decision} | {minutes} |")
    if ceiling:
        print(f"ceiling: the same encoder fully supervised (the shipped starter, every AG News row) reads {topic} at "
              f"recall {ceiling['recall']:.3f}, precision {ceiling['precision']:.3f}, F1 {ceiling['f1']:.3f} on its "
              f"{ceiling['rows']:,} validation rows of {topic}")
    refused = [r for r in run.rows if r.decision not in ("start", "promoted") and r.reason]
    for row in refused:
        print(f"round {row.round} {row.decision}: {row.reason[:300]}")
    print(f"answers {run.answers}, of which served by the queue from the pool {run.served}", flush=True)


def summary_line(mode: str, reports: dict[str, dict[str, Any]], wall_s: float) -> str:
    parts = []
    for kind, report in reports.items():
        last = report["rows"][-1]
        promoted = sum(r["decision"] == "promoted" for r in report["rows"])
        verdict = report["meets_targets"][-1]
        met = "n/a" if mode == "quick" or verdict is None else "yes" if verdict else "no"
        parts.append(f"{kind}: {last['labels']} labels, accuracy {last['accuracy']:.3f}, recall {last['recall']:.3f}, "
                     f"precision {last['precision']:.3f}, {promoted}/{len(report['rows']) - 1} promoted, target met {met}")
    note = " (mechanics on a tiny random model: figures mean nothing)" if mode == "quick" else ""
    return f"SUMMARY taxonomy {mode}{note}: " + "; ".join(parts) + f"; wall {wall_s / 60:.1f} min"


def work_folder(home: Path | None) -> Path:
    if home is None:
        return Path(tempfile.mkdtemp(prefix="newsloop-taxonomy-"))
    if home.exists() and any(home.iterdir()):
        raise SystemExit(f"--home {home} is not empty; the scenarios need a fresh folder")
    home.mkdir(parents=True, exist_ok=True)
    return home.resolve()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args)
    mode = "quick" if args.quick else "full"
    data = data_location(args.data, args.quick)
    kinds = SCENARIOS if args.scenario == "both" else (args.scenario,)
    out = args.out or PROJECT_ROOT / "bench" / "out" / f"taxonomy_{mode}.json"
    started = time.perf_counter()
    root = work_folder(args.home)
    print(f"# NewsLoop taxonomy scenarios ({mode}): data {data}, labels {', '.join(map(str, args.labels))}, "
          f"seed {args.seed}, work folder {root}")
    try:
        reports = {kind: run_scenario(args, kind, data, root) for kind in kinds}
    finally:
        if args.home is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    wall_s = time.perf_counter() - started
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {"mode": mode, "data": data, "args": {k: str(v) for k, v in vars(args).items()},
              "targets": [asdict(t) for t in TARGETS], "scenarios": reports, "wall_seconds": round(wall_s, 1)}
    out.write_text(json.dumps(record, indent=2), encoding="utf-8")
    print(f"\nwrote {out}")
    print(summary_line(mode, reports, wall_s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
