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
    python bench/loop.py --from-starter          # the headline shift from the scenario's own starter (see below)
    python bench/loop.py --write-starter-data DIR   # the data folder the scenario's starter is trained on

`--from-starter` is a second scenario (bench/sim/shift.py): a starter trained without a few thousand held-out
train.csv rows (bench/sim/headlines.py), packed once in ../scenario-starter (the shipped starter trains on every
row, so it is refused here; the command that builds the scenario's is printed when it is missing); labellers
answer the real queue on their headlines, real retrains gate the challengers, and each champion is scored on a
disjoint unseen part read as headlines and as whole articles.

Data: `--data` (default NEWSLOOP_DATA, else ../shared/data/ag_news), a local AG-News-format folder or CSV.
The last printed line is a one-line SUMMARY. The simulation's parts live in `bench/sim/`; this file is its
command line, and the one place (with bench/tune.py) that reads settings and builds the policies it hands down.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from bench import options
from bench.sim.champion import (
    PRESETS,
    Preset,
    champion_setup,
    sim_home,
    sim_settings,
    tiny_factory,
    train_champion,
)
from bench.sim.data import SliceOptions, SlicePlan, data_location, prepare_slice, slice_words
from bench.sim.plot import write_outputs
from bench.sim.report import compare, outcome, print_plan, print_results, summary_line
from bench.sim.rounds import LoopOptions, run_order
from bench.sim.rows import ORDERS, RoundRow
from bench.sim.shift import SCENARIO_STARTER
from core.settings.config import PROJECT_ROOT


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = options.parser(__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="about 10 min on 2 cores (2 rounds of 150)")
    mode.add_argument("--tiny", action="store_true", help="seconds: 2-layer random model on the seed set")
    mode.add_argument("--from-starter", action="store_true",
                      help="the headline shift from the shipped starter: labels on held-out headlines, real retrains")
    mode.add_argument("--write-starter-data", type=Path, metavar="DIR",
                      help="only write the shipped starter's data folder (without the held-out rows) to DIR, and exit")
    parser.add_argument("--starter", type=Path, default=SCENARIO_STARTER, metavar="DIR",
                        help="with --from-starter: the scenario's own starter, trained without its held-out rows "
                             "(default: ../scenario-starter; the command to build it is printed when it is missing)")
    parser.add_argument("--data", default=None,
                        help="AG-News folder or CSV (default NEWSLOOP_DATA, else ../shared/data/ag_news; --tiny: seed)")
    parser.add_argument("--home", type=Path, default=None,
                        help="new or empty work folder: data/ and one NEWSLOOP_HOME per order (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "bench" / "out", help="where the PNG and JSON go")
    parser.add_argument("--order", choices=ORDERS, default="uncertainty", help="labelling order (one-order runs)")
    parser.add_argument("--compare-orders", action=argparse.BooleanOptionalAction, default=None,
                        help="run both orders from the same champion (default: on in full mode, off otherwise)")
    parser.add_argument("--rounds", type=int, help="retrain rounds")
    parser.add_argument("--per-round", type=int, help="labels per round (K)")
    parser.add_argument("--pool-factor", type=int, default=3, help="candidate pool = factor x K")
    parser.add_argument("--malicious", type=float, default=0.0, help="share of answers that are wrong labels")
    parser.add_argument("--sybil", type=float, default=0.0,
                        help="share of answers from an attacker with many cheap identities from one address")
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
    if not 0.0 <= args.sybil < 1.0:
        parser.error("--sybil must be in [0, 1)")
    if not 0.0 <= args.malicious < 1.0 or not 0.0 < args.slice_share <= 1.0 or args.pool_factor < 1:
        parser.error("--malicious must be in [0, 1), --slice-share in (0, 1], --pool-factor >= 1")
    if args.checks is None:
        args.checks = 40 if args.malicious > 0 or args.sybil > 0 else 0
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


def slice_options(args: argparse.Namespace) -> SliceOptions:
    return SliceOptions(test_fraction=args.test_fraction, slice_share=args.slice_share, seed=args.seed,
                        checks=args.checks)


def prepare(
    args: argparse.Namespace, data_dir: Path, val_fraction: float
) -> tuple[str, list[str], SlicePlan, dict[str, int]]:
    """Pick the slice and the stream, and write the champion's data folder without them."""
    data, words = data_location(args.data, args.tiny), slice_words(args.keywords, args.tiny)
    plan, kept = prepare_slice(data, words, data_dir, slice_options(args), val_fraction)
    return data, words, plan, kept


def simulate(args: argparse.Namespace, mode: str, preset: Preset, root: Path) -> str:
    """Train the champion without the slice, run each order's rounds from it, write the report; the SUMMARY."""
    started = time.perf_counter()
    champion_home, data_dir = root / "champion", root / "data"
    policy = {"checks": args.checks > 0, "sybil": args.sybil > 0}
    settings = sim_settings(champion_home, data_dir, args.tiny, **policy)
    data, words, plan, kept = prepare(args, data_dir, settings.data.val_fraction)
    print(f"# NewsLoop learning loop ({mode}): data {data}, work folder {root}")
    print_plan(plan, words, kept, check_size=not args.tiny)
    print(f"preset: {asdict(preset)}; pool {args.pool_factor}x, malicious {args.malicious:.0%}, "
          f"known-answer checks {len(plan.checks)}, review {args.review}, sybil {args.sybil:.0%}", flush=True)

    factory = tiny_factory(args.seed) if args.tiny else None
    seconds = train_champion(champion_setup(settings, preset), factory)
    print(f"champion trained without the slice in {seconds:.0f} s", flush=True)

    options = LoopOptions(malicious=args.malicious, pool_factor=args.pool_factor, review=args.review, seed=args.seed,
                          sybil=args.sybil)
    orders = list(ORDERS) if preset.compare_orders else [args.order]
    runs: dict[str, list[RoundRow]] = {}
    for order in orders:
        home = champion_home
        if len(orders) > 1:  # each order starts from its own copy of the same champion
            home = root / f"home-{order}"
            shutil.copytree(champion_home, home)
        runs[order] = run_order(sim_home(sim_settings(home, data_dir, args.tiny, **policy), preset), plan, preset, options,
                                order, factory)

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


def from_starter(args: argparse.Namespace, root: Path) -> str:
    """The headline shift scenario from the shipped starter; returns its SUMMARY line."""
    from bench.sim.shift import ShiftOptions, print_shift_row, run_shift, shift_summary

    started = time.perf_counter()
    options = ShiftOptions(rounds=args.rounds or 3, per_round=args.per_round or 200, pool_factor=args.pool_factor,
                           base_rows=args.base_rows, retrain_minutes=args.retrain_minutes or 0.0, seed=args.seed,
                           starter=args.starter)
    print(f"# NewsLoop headline shift from the shipped starter: data {data_location(args.data)}, work folder {root}")
    print(f"options: {asdict(options)}")
    print(f"{'round':>5} {'labels':>6} {'corr':>5} {'headline':>8} {'full':>8} {'base':>8} {'chall':>8} {'secs':>7} {'traffic':>10} "
          "champion decision")
    print("(headline/full: champion accuracy on the unseen test part read as headline only / title + description; "
          "base: base validation; chall: the challenger's headline accuracy; traffic: trusted traffic labels / what the "
          "retrain preview asks for)", flush=True)
    plan, rows, p = run_shift(root, data_location(args.data), options, on_row=print_shift_row)
    print(f"held out of the starter: {len(plan.stream)} stream + {len(plan.test)} test rows")
    return shift_summary(rows, p, time.perf_counter() - started)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args)
    if args.write_starter_data:
        from bench.sim.headlines import write_starter_data
        from core.settings.config import load_settings

        plan, kept = write_starter_data(data_location(args.data), args.write_starter_data, load_settings().data.val_fraction)
        print(f"wrote {args.write_starter_data}: {kept}; held out {len(plan.stream)} stream + {len(plan.test)} test rows")
        return 0
    if args.from_starter:
        root = work_folder(args)
        try:
            summary = from_starter(args, root)
        finally:
            if args.home is None and not args.keep:
                shutil.rmtree(root, ignore_errors=True)
        print(summary)
        return 0
    if args.write_data:
        from core.settings.config import load_settings

        _, words, plan, kept = prepare(args, args.write_data, load_settings().data.val_fraction)
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
