"""Retrain speed: how long the maintainer waits for a retrain of 400 answers, and what it costs serving meanwhile.

1. A temporary NEWSLOOP_HOME gets the shipped starter (installed as `core.registry.starter.install_starter` does) and
   the base-data folder of the headline shift (`bench.sim.headlines`: held-out train.csv rows never replayed);
   simulated honest labellers answer `--answers` items of the real queue, shown as headlines.
2. `retrain.run.retrain` runs in this process with the settings' defaults (MLflow tracking on, as from the
   admin view): wall and CPU seconds by stage, the gate's decision, and the challenger's accuracy on unseen
   rows read as headlines and on base validation. `--compare` first runs the previous recipe (3,000 replayed
   rows, nothing frozen, no distillation) on a copy of the same home, so the two can be set side by side.
3. Unless `--skip-app`: `python app.py` serves that home; REST /api/v1/classify is timed at a steady pace
   (one client, `--pace` requests a second) while idle, during a retrain started the way the admin view
   starts one (`web.admin.jobs.RetrainJobs`: lower priority, one training thread fewer), and idle again.

Run from the repository root::

    NEWSLOOP_DATA=../shared/data/ag_news python bench/retrain_speed.py [--compare] [--skip-app] [--json OUT]

The last printed line is a one-line SUMMARY against the targets: a retrain within 4 minutes, REST p50
during a retrain within 2x of idle.
"""

from __future__ import annotations

import json
import logging
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import options
from bench.common import CpuWatch, contention_note

TARGET_MINUTES = 4.0
TARGET_P50_RATIO = 2.0
# The previous retrain recipe (docs/results/performance.md), for --compare: settings, and the training loop's own.
PREVIOUS_RECIPE: dict[str, object] = {"retrain_base_rows": 3000, "retrain_freeze_layers": 0, "distill_weight": 0.0}
PREVIOUS_LOOP: dict[str, object] = {"eval_checks": 4}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def home_settings(home: Path, data_dir: Path, **overrides: object) -> Any:
    from bench.sim.champion import sim_settings

    return sim_settings(home, data_dir, tiny=False).model_copy(update=overrides)


def prepare(root: Path, data: str, answers: int, seed: int) -> tuple[Path, list[Any]]:
    """The home with the starter and `answers` queue answers on headlines; returns it and the unseen test rows."""
    from bench.sim.champion import SIM_STORE_LIMITS
    from bench.sim.headlines import write_starter_data
    from bench.sim.labellers import Labellers, Stream, label_round
    from core.data import Example
    from core.registry.starter import install_starter
    from core.registry.versions import ModelRegistry
    from core.serving.classifier import load_version
    from core.text import text_hash
    from feedback.store import FeedbackStore

    home, data_dir = root / "home", root / "data"
    settings = home_settings(home, data_dir)
    plan, _ = write_starter_data(data, data_dir, settings.data.val_fraction)
    champion = install_starter(ModelRegistry(settings.paths.models_dir))
    if champion is None:
        raise SystemExit("no starter model for these labels in models/starter")
    headlines = [Example(e.title, e.label) for e in plan.stream]
    store = FeedbackStore(settings.paths.feedback_db, SIM_STORE_LIMITS, durable=False)
    labellers = Labellers(store, {text_hash(e.text): e.label for e in headlines}, 0.0, random.Random(seed),
                          settings.queue)
    label_round(labellers, Stream(headlines), load_version(champion), champion.version, order="uncertainty",
                budget=answers, pool_size=3 * answers, round_no=1, scores={})
    store.close()
    print(f"home: starter {champion.version} + {labellers.tally.labels} answers on headlines "
          f"({labellers.tally.corrections} corrections); {len(plan.test)} unseen test rows", flush=True)
    return home, plan.test


class _Shortened(logging.Handler):
    """Notices the training loop's 'shortened to fit the time budget'."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def emit(self, record: logging.LogRecord) -> None:
        self.seen |= "time budget" in record.getMessage()


def timed_retrain(
    root: Path, name: str, recipe: dict[str, object], test: list[Any], loop: dict[str, object] | None = None
) -> dict[str, Any]:
    """One retrain on a copy of the prepared home (`recipe`: settings, `loop`: TrainConfig fields): wall and CPU
    seconds by stage, decision, accuracy."""
    import dataclasses

    from bench.sim.shift import FormEvaluator
    from core.data import load_corpus
    from core.registry.versions import ModelRegistry
    from retrain.inputs import RetrainSetup
    from retrain.run import retrain

    home = root / name
    shutil.copytree(root / "home", home)
    settings = home_settings(home, root / "data", **recipe)
    setup = RetrainSetup.from_settings(settings)
    setup = dataclasses.replace(setup, train=setup.train.with_(**(loop or {})))
    stamps = [("start", time.perf_counter(), cpu_seconds())]
    shortened = _Shortened()
    logging.getLogger("retrain.training.loop").addHandler(shortened)
    try:
        result = retrain(setup, track=True,
                         on_stage=lambda stage: stamps.append((str(stage), time.perf_counter(), cpu_seconds())))
    finally:
        logging.getLogger("retrain.training.loop").removeHandler(shortened)
    stamps.append(("end", time.perf_counter(), cpu_seconds()))
    # Each stage's share runs to the next stage's start; "start" is the lock and MLflow's run before the first.
    stages = {a[0]: {"wall_s": b[1] - a[1], "cpu_s": b[2] - a[2]} for a, b in zip(stamps, stamps[1:], strict=False)}
    registry = ModelRegistry(settings.paths.models_dir)
    evaluator = FormEvaluator(test, load_corpus(str(root / "data"), settings.data.val_fraction, True).validation)
    champion = evaluator.accuracy(registry.get(result.champion_before))
    challenger = evaluator.accuracy(registry.get(result.challenger)) if result.challenger else {}
    shutil.rmtree(settings.paths.mlflow_artifacts_dir, ignore_errors=True)  # the ONNX copies MLflow keeps: disk only
    return {"name": name, "recipe": recipe | (loop or {}), "wall_s": stamps[-1][1] - stamps[0][1], "cpu_s": stamps[-1][2] - stamps[0][2],
            "stages": stages, "decision": result.decision, "reasons": result.reasons, "rows": result.rows,
            "shortened": shortened.seen, "champion": champion, "challenger": challenger}


def print_retrain(run: dict[str, Any]) -> None:
    stages = ", ".join(f"{k} {v['wall_s']:.0f} s ({v['cpu_s']:.0f} CPU s)" for k, v in run["stages"].items())
    chall, champ = run["challenger"], run["champion"]
    gains = ", ".join(f"{form} {champ[form]:.4f} -> {chall[form]:.4f}" for form in ("title", "full", "base") if chall)
    print(f"- {run['name']} {json.dumps(run['recipe'])}: {run['wall_s']:.0f} s wall, {run['cpu_s']:.0f} CPU s "
          f"({stages}){'; training cut by the time budget' if run['shortened'] else ''}\n"
          f"  rows {run['rows']}; {run['decision']}: {'; '.join(run['reasons'])[:300]}\n"
          f"  accuracy (unseen headlines, unseen title+description, base validation): {gains}", flush=True)


def measure_rest(client: Any, texts: Sequence[str], seconds: float, pace: float, until: Any = None) -> list[float]:
    """Latencies (ms) of single-text REST calls, one at a time, `pace` a second, for `seconds` or until `until()`."""
    latencies, i, end = [], 0, time.monotonic() + seconds
    while (until() if until else time.monotonic() < end):
        start = time.perf_counter()
        response = client.post("/api/v1/classify", json={"text": texts[i % len(texts)]})
        elapsed = time.perf_counter() - start
        if response.status_code == 200:
            latencies.append(elapsed * 1000)
        i += 1
        time.sleep(max(0.0, 1.0 / pace - elapsed))
    return latencies


def serving_during_retrain(root: Path, seconds: float, pace: float) -> dict[str, Any]:
    """REST latency idle, during a retrain the admin view's way, and idle again, on a copy of the home."""
    import httpx

    from bench.load import launch_app, stop_app, wait_until_up
    from core.data import load_corpus
    from core.settings.config import load_settings
    from web.admin.jobs import RetrainJobs

    home = root / "serving"
    shutil.copytree(root / "home", home)
    settings = home_settings(home, root / "data")
    # What the app and the retrain it starts read: the same home, data and trust as the in-process runs.
    os.environ.update({"NEWSLOOP_HOME": str(home), "NEWSLOOP_DATA": str(root / "data"), "NEWSLOOP_LABELS_REQUIRED": "1",
                       "NEWSLOOP_TRAIN_ON": "anyone", "NEWSLOOP_MLFLOW_TRACKING_URI": settings.storage.mlflow_tracking_uri,
                       "TQDM_DISABLE": "1"})
    texts = [e.text for e in load_corpus(str(root / "data"), settings.data.val_fraction, True).validation][:500]
    proc, url = launch_app(home, 10**9, root / "app.log")
    try:
        wait_until_up(url, proc, 300)
        with httpx.Client(base_url=url, timeout=60) as client:
            measure_rest(client, texts, 5, pace)  # warm up
            idle_before = measure_rest(client, texts, seconds, pace)
            jobs = RetrainJobs(load_settings().paths)
            started = time.perf_counter()
            jobs.start("run")
            during = measure_rest(client, texts, 0, pace, until=lambda: jobs.wait(0) is None)
            retrain_s = time.perf_counter() - started
            idle_after = measure_rest(client, texts, seconds, pace)
    finally:
        stop_app(proc)
    idle = float(np.median(idle_before + idle_after))
    p50 = float(np.median(during))
    return {"idle_p50_ms": idle, "idle_before_p50_ms": float(np.median(idle_before)),
            "idle_after_p50_ms": float(np.median(idle_after)), "during_p50_ms": p50,
            "during_p95_ms": float(np.percentile(during, 95)), "during_requests": len(during), "ratio": p50 / idle,
            "retrain_s": retrain_s, "exit_code": jobs.wait(0), "last_run": (json.loads(
                settings.paths.retrain_state.read_text()).get("last_run") or {}).get("decision")}


def summary(answers: int, run: dict[str, Any], previous: dict[str, Any] | None, serving: dict[str, Any] | None) -> str:
    minutes = run["wall_s"] / 60
    parts = [f"SUMMARY retrain: {answers} answers in {minutes:.1f} min wall (<= {TARGET_MINUTES:g}: {'yes' if minutes <= TARGET_MINUTES else 'no'}), "
             f"{run['decision']}, headline accuracy {run['champion']['title']:.4f} -> "
             f"{run['challenger'].get('title', float('nan')):.4f}"]
    if previous:
        parts.append(f"previous recipe {previous['wall_s'] / 60:.1f} min ({previous['wall_s'] / run['wall_s']:.1f}x wall, "
                     f"{previous['cpu_s'] / run['cpu_s']:.1f}x CPU), {previous['decision']}, headline "
                     f"-> {previous['challenger'].get('title', float('nan')):.4f}")
    if serving:
        parts.append(f"REST p50 idle {serving['idle_p50_ms']:.1f} ms, during an app-started retrain "
                     f"{serving['during_p50_ms']:.1f} ms ({serving['ratio']:.2f}x, <= {TARGET_P50_RATIO:g}: "
                     f"{'yes' if serving['ratio'] <= TARGET_P50_RATIO else 'no'}; that retrain took "
                     f"{serving['retrain_s'] / 60:.1f} min)")
    return "; ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    options.add_data(parser)
    parser.add_argument("--answers", type=int, default=400, help="queue answers the retrain learns from")
    parser.add_argument("--compare", action="store_true", help="also run the previous recipe, first, on the same home")
    parser.add_argument("--skip-app", action="store_true", help="no serving measurement")
    parser.add_argument("--seconds", type=float, default=60.0, help="each idle latency window")
    parser.add_argument("--pace", type=float, default=20.0, help="REST requests a second during the measurement")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--keep", type=Path, help="work in this new folder and keep it (default: a temporary one)")
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # it logs each database migration at INFO
    os.environ.setdefault("TQDM_DISABLE", "1")
    from bench.sim.data import data_location

    root = args.keep or Path(tempfile.mkdtemp(prefix="newsloop-retrain-speed-"))
    root.mkdir(parents=True, exist_ok=True)
    watch = CpuWatch()
    try:
        print(f"# Retrain speed: {args.answers} answers on the shipped starter, {os.cpu_count()} cores; work folder {root}")
        _, test = prepare(root, data_location(args.data), args.answers, args.seed)
        previous = timed_retrain(root, "previous", PREVIOUS_RECIPE, test, PREVIOUS_LOOP) if args.compare else None
        if previous:
            print_retrain(previous)
        run = timed_retrain(root, "defaults", {}, test)
        print_retrain(run)
        serving = None if args.skip_app else serving_during_retrain(root, args.seconds, args.pace)
        if serving:
            print(f"- serving: {json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in serving.items()})}")
        if args.json:
            args.json.write_text(json.dumps({"defaults": run, "previous": previous, "serving": serving}, indent=2))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print(contention_note(watch.share()))
    print(summary(args.answers, run, previous, serving))
    return 0


if __name__ == "__main__":
    sys.exit(main())
