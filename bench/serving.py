"""Serving speed of the registry's champion: PyTorch eager fp32 vs ONNX fp32 vs ONNX int8, side by side.

Measures, on the validation split of NEWSLOOP_DATA:

* single-text latency p50/p95 (ms), tokenization included, over `--n` texts after a short warmup; the
  engines take turns for `--rounds` rounds (the machine's speed drifts): p50 is the median of the rounds'
  p50s, each printed, and p95 is over all rounds;
* batch throughput (texts/s) and accuracy over the whole validation split;
* peak resident memory of a process that imports only `core.serving.classifier`, loads the served ONNX file and
  classifies 100 texts (and whether torch got imported there: it must not);
* app cold start: seconds from spawning `python app.py` to its first `/classify` answer. The app runs
  on a throw-away NEWSLOOP_HOME whose `models/` links to the real one, so no state is written there.

Run from the repository root::

    NEWSLOOP_DATA=<data> python bench/serving.py [--n 200] [--batch-size 32] [--rounds 5] [--skip-app] [--tune]
        [--int8-variants] [--reference OTHER.onnx] [--json OUT]

It measures NEWSLOOP_HOME's champion, or on a clean clone (no champion) the shipped starter. When the model
has no fp32 ONNX file (the starter ships int8 only) the fp32 row is a fused export of its checkpoint into a
temporary folder. `--tune` adds ONNX Runtime settings to compare (intra-op threads, spinning, batch sizes);
`--int8-variants` quantizes that fp32 file several ways and scores each. `--reference` measures another
ONNX file (with its tokenizer.json beside it), such as an export by an older recipe, in the same rounds
and prints the int8 file's ratio to it. The last printed line is a one-line `SUMMARY`.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from bench import options as command_line
from bench.load import stop_app
from core.host.net import free_port
from core.reading import Reading
from core.settings.config import PROJECT_ROOT

TORCH = "pytorch-fp32"
ONNX_FP32 = "onnx-fp32"
ONNX_INT8 = "onnx-int8"
REFERENCE = "reference"  # --reference: another ONNX file, measured in the same rounds
WARMUP_TEXTS = 10
RSS_TEXTS = 100
TARGET_INT8_P50_MS = 3.5  # the serving target: model + tokenizer, single text

# Runs in a fresh interpreter so the memory figure is that of a serving process, not of this one.
_RSS_CHILD = r"""
import json, resource, sys
from pathlib import Path

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB

def hwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return None

args = json.loads(sys.stdin.read())
out = {"start_mb": peak_mb()}
from core.serving.classifier import OnnxClassifier
out["imported_mb"] = peak_mb()
clf = OnnxClassifier(Path(args["model_dir"]), onnx_file=args["onnx_file"], threads=args["threads"])
out["loaded_mb"] = peak_mb()
for text in args["texts"]:
    clf.predict([text])
clf.predict(args["texts"])
out["peak_mb"] = peak_mb()
out["vmhwm_mb"] = hwm_mb()
out["torch_imported"] = "torch" in sys.modules
out["transformers_imported"] = "transformers" in sys.modules
print(json.dumps(out))
"""


@dataclass
class Engine:
    """One way of serving the champion: a single-text call and a batch call, both text in, scores out."""

    name: str
    single: Callable[[str], np.ndarray]
    batch: Callable[[Sequence[str], int], np.ndarray]
    load_s: float
    close: Callable[[], None] = lambda: None


@dataclass
class EngineResult:
    name: str
    p50_ms: float
    p95_ms: float
    mean_ms: float
    texts_per_s: float
    batch_seconds: float
    accuracy: float
    load_s: float
    other_cpu: float | None = None  # share of the machine other processes used meanwhile
    round_p50s: tuple[float, ...] = ()  # single-text p50 of each interleaved round (ONNX engines)


# Engines.
def onnx_engine(model_dir: Path, onnx_file: str, name: str, threads: int, options: Any = None) -> Engine:
    """ONNX Runtime through the serving class; `options` replaces its SessionOptions (for --tune)."""
    from core.serving.classifier import OnnxClassifier, inference_session

    start = time.perf_counter()
    clf = OnnxClassifier(model_dir, onnx_file=onnx_file, threads=threads)
    if options is not None:
        clf.session = inference_session(model_dir / onnx_file, options)
    load_s = time.perf_counter() - start
    return Engine(
        name,
        single=lambda text: clf.predict_proba([text]),
        batch=lambda texts, batch_size: clf.predict_proba(texts, batch_size=batch_size),
        load_s=load_s,
    )


def torch_engine(checkpoint_dir: Path, max_length: int) -> Engine:
    """PyTorch eager fp32 from the champion's checkpoint, HF tokenizer, all cores."""
    import torch
    from transformers.utils import logging as hf_logging

    from core.text import clean_text
    from retrain.classifier.model import load_checkpoint
    from retrain.classifier.tokens import predict_logits

    hf_logging.disable_progress_bar()
    torch.set_num_threads(os.cpu_count() or 1)
    start = time.perf_counter()
    model, tokenizer = load_checkpoint(checkpoint_dir)
    model.eval()
    load_s = time.perf_counter() - start

    def single(text: str) -> np.ndarray:
        # The same cleaning the ONNX path does, so both engines do the same work per request.
        with torch.inference_mode():
            enc = tokenizer(clean_text(text), truncation=True, max_length=max_length, return_tensors="pt")
            logits = model(enc["input_ids"], enc["attention_mask"])
            return torch.softmax(logits, dim=-1).numpy()

    def batch(texts: Sequence[str], batch_size: int) -> np.ndarray:
        return predict_logits(model, tokenizer, texts, Reading(max_length), batch_size)

    return Engine(TORCH, single, batch, load_s)


# Measurements.
def single_latencies_ms(engine: Engine, texts: Sequence[str]) -> np.ndarray:
    for text in texts[:WARMUP_TEXTS]:
        engine.single(text)
    out = np.empty(len(texts))
    for i, text in enumerate(texts):
        start = time.perf_counter()
        engine.single(text)
        out[i] = (time.perf_counter() - start) * 1000.0
    return out


def batch_run(engine: Engine, texts: Sequence[str], batch_size: int) -> tuple[np.ndarray, float]:
    engine.batch(texts[: batch_size * 2], batch_size)  # warmup
    start = time.perf_counter()
    scores = engine.batch(texts, batch_size)
    return scores, time.perf_counter() - start


def measure(engine: Engine, single_texts: Sequence[str], texts: Sequence[str], labels: np.ndarray,
            batch_size: int, rounds: Sequence[np.ndarray] = ()) -> EngineResult:
    """Single-text latency (or `rounds` of it measured already) and batch throughput and accuracy."""
    from bench.common import CpuWatch

    watch = CpuWatch()
    rounds = list(rounds) or [single_latencies_ms(engine, single_texts)]
    lat = np.concatenate(rounds)
    scores, seconds = batch_run(engine, texts, batch_size)
    accuracy = float((np.asarray(scores).argmax(axis=1) == labels).mean())
    round_p50s = tuple(float(np.percentile(r, 50)) for r in rounds)
    return EngineResult(
        engine.name,
        # The median of the rounds' p50s: a round that met the host's slow spell does not set the figure.
        p50_ms=float(np.median(round_p50s)),
        p95_ms=float(np.percentile(lat, 95)),
        mean_ms=float(lat.mean()),
        texts_per_s=len(texts) / seconds,
        batch_seconds=seconds,
        accuracy=accuracy,
        load_s=engine.load_s,
        other_cpu=watch.share(),
        round_p50s=round_p50s,
    )


def interleaved_latencies(engines: dict[str, Callable[[], Engine]], texts: Sequence[str],
                          rounds: int) -> dict[str, list[np.ndarray]]:
    """Single-text latencies of each engine in turn, `rounds` times over: A B C A B C ...

    This machine's speed drifts by a third within minutes (the host's other tenants), so engines measured
    one after the other compare their moments as much as themselves; taking turns spreads the drift over
    all of them, and the speed-ups are ratios of the same rounds. Each turn builds its engine afresh, so no
    idle thread pool competes with the measured one.
    """
    out: dict[str, list[np.ndarray]] = {name: [] for name in engines}
    for _ in range(rounds):
        for name, build in engines.items():
            engine = build()
            out[name].append(single_latencies_ms(engine, texts))
            del engine
            gc.collect()
    return out


def serving_rss(model_dir: Path, onnx_file: str, texts: Sequence[str], threads: int) -> dict[str, Any]:
    payload = json.dumps(
        {"model_dir": str(model_dir), "onnx_file": onnx_file, "threads": threads, "texts": list(texts)}
    )
    # Through a shell that forks: a process exec'd straight from this big one would inherit its peak RSS
    # (Linux keeps ru_maxrss across exec), so the child would report this process's memory, not its own.
    proc = subprocess.run(
        ["/bin/sh", "-c", '"$0" "$@"; exit $?', sys.executable, "-c", _RSS_CHILD],
        input=payload, capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=300,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"memory probe failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def app_cold_start(models_dir: Path, text: str, timeout_s: float) -> dict[str, Any]:
    """Spawn `python app.py` and poll `/classify` until it answers; seconds from spawn to that answer."""
    from gradio_client import Client  # imported before the clock starts

    with tempfile.TemporaryDirectory(prefix="newsloop-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        if models_dir.is_dir():  # else the app installs the shipped starter, as on a fresh clone
            (home / "models").symlink_to(models_dir.resolve(), target_is_directory=True)
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        env = os.environ | {
            "NEWSLOOP_HOME": str(home),
            "NEWSLOOP_HOST": "127.0.0.1",
            "NEWSLOOP_PORT": str(port),
            "GRADIO_ANALYTICS_ENABLED": "False",
            "HF_HUB_OFFLINE": "1",
        }
        log_path = Path(tmp) / "app.log"
        with log_path.open("w") as log_file:
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT
            )
            try:
                connected_s, answer = None, None
                client = None
                while time.perf_counter() - start < timeout_s:
                    if proc.poll() is not None:
                        break
                    try:
                        if client is None:
                            client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
                            connected_s = time.perf_counter() - start
                        answer = client.predict(text, api_name="/classify")
                        break
                    except Exception:
                        time.sleep(0.2)
                answer_s = time.perf_counter() - start
            finally:
                stop_app(proc)
        if answer is None:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(
                f"app gave no answer within {timeout_s:.0f} s (exit {proc.returncode}); log tail:\n{tail}"
            )
    label = answer[0].get("label") if isinstance(answer, (list, tuple)) and isinstance(answer[0], dict) else None
    note = answer[1] if isinstance(answer, (list, tuple)) and len(answer) > 1 else ""
    return {"first_answer_s": answer_s, "server_up_s": connected_s, "label": label, "note": note}


def tune(files: dict[str, tuple[Path, str]], single_texts: Sequence[str], texts: Sequence[str],
         labels: np.ndarray, batch_size: int, rounds: int) -> list[dict[str, Any]]:
    """ONNX Runtime settings that are cheap to change in core/serving/classifier.py, measured the same way (settings
    of one file take turns for `rounds` rounds; p50 is the median of the rounds' p50s)."""
    from bench.common import CpuWatch
    from core.serving.classifier import OnnxClassifier, session_options

    cores = os.cpu_count() or 1
    rows: list[dict[str, Any]] = []
    for name, (model_dir, onnx_file) in files.items():
        variants: dict[str, Any] = {f"threads={t}": session_options(t) for t in sorted({1, cores})}
        variants[f"threads={cores}, no spinning (the app's ChampionService)"] = session_options(cores, False)
        short_spin = session_options(cores)
        short_spin.add_session_config_entry("session.intra_op.spin_duration_us", "50")
        variants[f"threads={cores}, spinning 50 us"] = short_spin
        watch = CpuWatch()
        latencies = interleaved_latencies(
            {label: partial(onnx_engine, model_dir, onnx_file, name, 0, options) for label, options in variants.items()},
            single_texts, rounds,
        )
        other = watch.share()
        for label, runs in latencies.items():
            rows.append({"engine": name, "setting": label,
                         "p50_ms": float(np.median([np.percentile(r, 50) for r in runs])),
                         "p95_ms": float(np.percentile(np.concatenate(runs), 95)), "other_cpu": other})
        engine = onnx_engine(model_dir, onnx_file, name, 0)
        for size in sorted({8, 16, batch_size, 64, 128}):
            watch = CpuWatch()
            scores, seconds = batch_run(engine, texts, size)
            rows.append({"engine": name, "setting": f"batch_size={size}", "batch_size": size,
                         "texts_per_s": len(texts) / seconds,
                         "accuracy": float((scores.argmax(axis=1) == labels).mean()), "other_cpu": watch.share()})
        clf = OnnxClassifier(model_dir, onnx_file=onnx_file)
        tok = np.empty(len(single_texts))
        watch = CpuWatch()
        for i, text in enumerate(single_texts):
            start = time.perf_counter()
            clf.encode([text])
            tok[i] = (time.perf_counter() - start) * 1000.0
        rows.append({"engine": name, "setting": "clean+tokenize only", "p50_ms": float(np.percentile(tok, 50)),
                     "p95_ms": float(np.percentile(tok, 95)), "other_cpu": watch.share()})
        del engine, clf
        gc.collect()
    return rows


def export_fp32(checkpoint_dir: Path, out_dir: Path, max_length: int) -> Path:
    """Export the champion's checkpoint (the starter ships fp16 weights and int8 ONNX only) as fused fp32 ONNX."""
    from retrain.classifier.model import load_checkpoint
    from retrain.export.onnx_file import export_onnx

    model, tokenizer = load_checkpoint(checkpoint_dir)
    return export_onnx(model, tokenizer, out_dir, Reading(max_length)).path


INT8_VARIANTS: dict[str, dict[str, Any]] = {
    # name: quantize_dynamic arguments. The first is what retrain.export.onnx_file ships.
    "per-channel (shipped)": {"per_channel": True},
    "per-tensor": {"per_channel": False},
    "per-channel, reduce-range": {"per_channel": True, "reduce_range": True},
    "per-channel, MatMul only": {"per_channel": True, "op_types_to_quantize": ["MatMul"]},
    "per-channel, MatMul+Attention only": {"per_channel": True, "op_types_to_quantize": ["MatMul", "Attention"]},
}


def int8_variants(fp32_path: Path, out_dir: Path, single_texts: Sequence[str], texts: Sequence[str],
                  labels: np.ndarray, batch_size: int, threads: int, rounds: int) -> list[dict[str, Any]]:
    """Dynamic int8 quantizations of the same fp32 file, taking turns and scored like the engines."""
    import logging
    import shutil

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from core.storage.paths import TOKENIZER_FILE
    from testkit.onnx_graph import fused_op_counts

    targets: dict[str, Path] = {}
    for number, (name, options) in enumerate(INT8_VARIANTS.items()):
        variant_dir = out_dir / f"int8-{number}"
        variant_dir.mkdir()
        shutil.copy(fp32_path.parent / TOKENIZER_FILE, variant_dir / TOKENIZER_FILE)
        target = variant_dir / "model.onnx"
        logging.getLogger().setLevel(logging.ERROR)  # the quantizer logs every tensor on the root logger
        quantize_dynamic(str(fp32_path), str(target), weight_type=QuantType.QInt8,
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}, **options)
        meta = onnx.load(str(fp32_path)).metadata_props
        proto = onnx.load(str(target))
        proto.metadata_props.extend(meta)
        onnx.save(proto, str(target))
        targets[name] = target
    builders = {name: partial(onnx_engine, target.parent, target.name, f"int8 {name}", threads)
                for name, target in targets.items()}
    latencies = interleaved_latencies(builders, single_texts, rounds)
    rows = []
    for name, target in targets.items():
        engine = builders[name]()
        result = measure(engine, single_texts, texts, labels, batch_size, latencies[name])
        rows.append({"variant": name, "result": result, "mb": target.stat().st_size / 1e6,
                     "attention": fused_op_counts(target)["Attention"]})
        del engine
        gc.collect()
    return rows


def variants_table(rows: list[dict[str, Any]]) -> str:
    from bench.common import share_cell

    lines = ["| int8 variant | p50 ms | p95 ms | texts/s | accuracy | MB | fused attention | others' CPU |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        r = row["result"]
        lines.append(f"| {row['variant']} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.texts_per_s:.0f} | "
                     f"{r.accuracy * 100:.2f}% | {row['mb']:.1f} | {row['attention']} | {share_cell(r.other_cpu)} |")
    return "\n".join(lines)


# Report.
def results_table(results: list[EngineResult]) -> str:
    from bench.common import share_cell

    base = next((r for r in results if r.name == TORCH), None)
    lines = [
        "| engine | p50 ms | p95 ms | texts/s | accuracy | speed-up p50 | speed-up texts/s | others' CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        single = f"{base.p50_ms / r.p50_ms:.2f}x" if base else "n/a"
        batch = f"{r.texts_per_s / base.texts_per_s:.2f}x" if base else "n/a"
        lines.append(
            f"| {r.name} | {r.p50_ms:.2f} | {r.p95_ms:.2f} | {r.texts_per_s:.0f} | {r.accuracy * 100:.2f}% "
            f"| {single} | {batch} | {share_cell(r.other_cpu)} |"
        )
    return "\n".join(lines)


def tune_table(rows: list[dict[str, Any]]) -> str:
    from bench.common import share_cell

    lines = ["| engine | setting | p50 ms | p95 ms | texts/s | others' CPU |", "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        p50 = f"{r['p50_ms']:.2f}" if "p50_ms" in r else ""
        p95 = f"{r['p95_ms']:.2f}" if "p95_ms" in r else ""
        tps = f"{r['texts_per_s']:.0f}" if "texts_per_s" in r else ""
        lines.append(f"| {r['engine']} | {r['setting']} | {p50} | {p95} | {tps} | {share_cell(r.get('other_cpu'))} |")
    return "\n".join(lines)


def summary_line(results: list[EngineResult], rss: dict[str, Any] | None, cold: dict[str, Any] | None) -> str:
    by_name = {r.name: r for r in results}
    base = by_name.get(TORCH)
    parts = []
    singles = [
        f"{r.name} {base.p50_ms / r.p50_ms:.1f}x ({r.p50_ms:.1f} ms)" if base else f"{r.name} {r.p50_ms:.1f} ms"
        for r in results if r.name not in (TORCH, REFERENCE)
    ]
    parts.append("single-text p50 speed-up vs torch: " + ", ".join(singles))
    fastest = max((r for r in results if r.name not in (TORCH, REFERENCE)), key=lambda r: r.texts_per_s, default=None)
    if fastest:
        ratio = f" ({fastest.texts_per_s / base.texts_per_s:.1f}x)" if base else ""
        parts.append(f"batch: {fastest.texts_per_s:.0f} texts/s {fastest.name.removeprefix('onnx-')}{ratio}")
    if ONNX_FP32 in by_name and ONNX_INT8 in by_name:
        delta = (by_name[ONNX_INT8].accuracy - by_name[ONNX_FP32].accuracy) * 100
        parts.append(f"int8 acc {delta:+.2f} pt")
    if ONNX_INT8 in by_name and REFERENCE in by_name:
        parts.append(f"int8 p50 {by_name[ONNX_INT8].p50_ms / by_name[REFERENCE].p50_ms:.2f}x the reference's")
    if rss:
        parts.append(f"rss {rss['peak_mb']:.0f} MB")
    if cold:
        parts.append(f"cold start {cold['first_answer_s']:.1f} s")
    return "SUMMARY " + "; ".join(parts)



def main(argv: Sequence[str] | None = None) -> int:
    parser = command_line.parser(__doc__)
    parser.add_argument("--n", type=int, default=200, help="validation texts for single-text latency")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size for the throughput run")
    parser.add_argument("--skip-app", action="store_true", help="do not measure the app's cold start")
    parser.add_argument("--app-timeout", type=float, default=300.0, help="seconds to wait for the app's answer")
    parser.add_argument("--tune", action="store_true", help="also compare ONNX Runtime threads/spinning/batch sizes")
    parser.add_argument("--int8-variants", action="store_true",
                        help="also quantize the fp32 file several ways (per-channel, reduce-range, ops) and score each")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds in which the engines take turns at single-text latency (see interleaved_latencies)")
    parser.add_argument("--reference", type=Path,
                        help="another ONNX file (e.g. an older export of the same model) measured in the same rounds")
    parser.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)

    from bench.common import CpuWatch, contention_note
    from core.data import load_corpus
    from core.registry.starter import STARTER_DIR, starter_meta
    from core.registry.versions import ModelRegistry, ModelVersion
    from core.settings.config import load_settings
    from core.storage.paths import FP32_FILE, INT8_FILE, TOKENIZER_FILE

    settings = load_settings()
    champion = ModelRegistry(settings.paths.models_dir).champion()
    if champion is None:  # a clean clone: the shipped starter, which the app would serve
        meta = starter_meta()
        if meta is None:
            print(f"No champion model in {settings.paths.models_dir} and no starter in {STARTER_DIR}: set NEWSLOOP_HOME "
                  "to a home with one, or train one with `python -m retrain bootstrap`.", file=sys.stderr)
            return 2
        champion = ModelVersion(f"starter {meta.get('source_version', '')}".strip(), STARTER_DIR, meta)
    corpus = load_corpus(settings.data.source, settings.data.val_fraction, settings.data.use_extra)
    texts = [ex.text for ex in corpus.validation]
    labels = np.array([ex.label for ex in corpus.validation])
    rng = np.random.default_rng(0)
    single_texts = [texts[i] for i in rng.permutation(len(texts))[: args.n]]
    max_length = int(champion.meta.get("max_length", settings.train.max_length))
    serve_file = champion.meta.get("serve_file", FP32_FILE)
    cores = os.cpu_count() or 1

    import onnxruntime as ort

    print(f"# Serving benchmark: champion {champion.version} ({champion.path}), serve_file {serve_file}")
    print(f"{len(texts)} validation texts from {corpus.description}; single-text sample {len(single_texts)}; "
          f"batch size {args.batch_size}; max_length {max_length}")
    run_watch = CpuWatch()
    print(f"{platform.processor() or platform.machine()}, {cores} cores; onnxruntime {ort.__version__}, "
          f"ONNX threads {settings.serving.onnx_threads or cores}")
    print()

    # One engine loaded at a time: a loaded engine's thread pool must not compete with the measured one.
    results: list[EngineResult] = []
    onnx_files = {ONNX_FP32: (champion.path, FP32_FILE), ONNX_INT8: (champion.path, INT8_FILE)}
    checkpoint = champion.path / "checkpoint"
    work = Path(tempfile.mkdtemp(prefix="newsloop-serving-"))
    if not (champion.path / FP32_FILE).is_file() and (checkpoint / "config.json").is_file():
        start = time.perf_counter()
        onnx_files[ONNX_FP32] = (work, export_fp32(checkpoint, work, max_length).name)
        print(f"exported fp32 ONNX from {checkpoint} in {time.perf_counter() - start:.0f} s (the champion has none)")
    onnx_files = {k: v for k, v in onnx_files.items() if (v[0] / v[1]).is_file()}
    from testkit.onnx_graph import fused_op_counts

    for name, (model_dir, onnx_file) in onnx_files.items():
        counts = ", ".join(f"{op} {n}" for op, n in fused_op_counts(model_dir / onnx_file).items() if n)
        print(f"{name}: {model_dir / onnx_file} (fused: {counts or 'none'})")
    threads = settings.serving.onnx_threads
    builders: dict[str, Callable[[], Engine]] = {
        name: partial(onnx_engine, model_dir, onnx_file, name, threads) for name, (model_dir, onnx_file) in onnx_files.items()
    }
    if args.reference:
        if not (args.reference.parent / TOKENIZER_FILE).is_file():
            print(f"--reference needs {TOKENIZER_FILE} beside {args.reference}", file=sys.stderr)
            return 2
        builders[REFERENCE] = partial(onnx_engine, args.reference.parent, args.reference.name, REFERENCE, threads)
        counts = ", ".join(f"{op} {n}" for op, n in fused_op_counts(args.reference).items() if n)
        print(f"{REFERENCE}: {args.reference} (fused: {counts or 'none'})")
    if (checkpoint / "config.json").is_file():
        builders = {TORCH: partial(torch_engine, checkpoint, max_length)} | builders
    else:
        print(f"(no PyTorch checkpoint at {checkpoint}: no PyTorch row, no speed-ups)")
    rounds = interleaved_latencies(builders, single_texts, max(1, args.rounds))
    for name, build in builders.items():
        engine = build()
        results.append(measure(engine, single_texts, texts, labels, args.batch_size, rounds[name]))
        del engine
        gc.collect()
    if TORCH in builders:
        import torch

        print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(results_table(results))
    for r in results:
        if len(r.round_p50s) > 1:
            print(f"{r.name}: p50 per round {', '.join(f'{x:.2f}' for x in r.round_p50s)} ms "
                  f"({len(r.round_p50s)} rounds of {len(single_texts)} texts, taking turns)")
    print()

    rss = None
    if (champion.path / serve_file).is_file():
        rss = serving_rss(champion.path, serve_file, texts[:RSS_TEXTS], settings.serving.onnx_threads)
        print(f"Serving process peak RSS ({serve_file}, {RSS_TEXTS} texts): {rss['peak_mb']:.0f} MB "
              f"(interpreter {rss['start_mb']:.0f}, after import {rss['imported_mb']:.0f}, "
              f"after load {rss['loaded_mb']:.0f}; VmHWM {rss['vmhwm_mb']:.0f}); "
              f"torch imported: {rss['torch_imported']}; transformers imported: {rss['transformers_imported']}")
        if rss["torch_imported"]:
            print("WARNING: the serving path imported torch")
    cold = None
    if args.skip_app:
        print("App cold start: skipped (--skip-app)")
    else:
        cold = app_cold_start(settings.paths.models_dir, single_texts[0], args.app_timeout)
        up = f"{cold['server_up_s']:.1f} s" if cold["server_up_s"] is not None else "n/a"
        print(f"App cold start to first answer: {cold['first_answer_s']:.1f} s (server reachable at {up}; "
              f"answer {cold['label']!r}, {cold['note']})")

    tuned = None
    if args.tune and onnx_files:
        print()
        print("## ONNX Runtime settings (--tune)")
        tuned = tune(onnx_files, single_texts, texts, labels, args.batch_size, max(1, args.rounds))
        print(tune_table(tuned))
    variants = None
    if args.int8_variants and ONNX_FP32 in onnx_files:
        print()
        print("## Dynamic int8 variants of the same fp32 file (--int8-variants)")
        fp32_dir, fp32_file = onnx_files[ONNX_FP32]
        variants = int8_variants(fp32_dir / fp32_file, work, single_texts, texts, labels, args.batch_size,
                                 settings.serving.onnx_threads, max(1, args.rounds))
        print(variants_table(variants))

    by_name = {r.name: r for r in results}
    print()
    if ONNX_INT8 in by_name:
        r = by_name[ONNX_INT8]
        print(f"Target {ONNX_INT8}: p50 {r.p50_ms:.2f} ms (<= {TARGET_INT8_P50_MS:g} ms: "
              f"{'yes' if r.p50_ms <= TARGET_INT8_P50_MS else 'no'})")
        if REFERENCE in by_name:
            ref = by_name[REFERENCE]
            print(f"{ONNX_INT8} vs {REFERENCE}: p50 {r.p50_ms / ref.p50_ms:.2f}x ({r.p50_ms:.2f} vs {ref.p50_ms:.2f} ms), "
                  f"batch {r.texts_per_s / ref.texts_per_s:.2f}x ({r.texts_per_s:.0f} vs {ref.texts_per_s:.0f} texts/s), "
                  f"accuracy {(r.accuracy - ref.accuracy) * 100:+.2f} pt")
    if ONNX_FP32 in by_name and TORCH in by_name:
        fp32, eager = by_name[ONNX_FP32].texts_per_s, by_name[TORCH].texts_per_s
        print(f"Target {ONNX_FP32}: {fp32:.0f} texts/s batch vs PyTorch eager {eager:.0f} "
              f"(>=: {'yes' if fp32 >= eager else 'no'})")
    if args.json:
        payload = {
            "champion": champion.version,
            "serve_file": serve_file,
            "cores": cores,
            "n_single": len(single_texts),
            "n_batch": len(texts),
            "batch_size": args.batch_size,
            "engines": [r.__dict__ for r in results],
            "rss": rss,
            "cold_start": cold,
            "tune": tuned,
            "int8_variants": [{k: (v.__dict__ if k == "result" else v) for k, v in row.items()} for row in variants or []],
        }
        args.json.write_text(json.dumps(payload, indent=2))
        print(f"wrote {args.json}")
    print(contention_note(run_watch.share()))
    print(summary_line(results, rss, cold))
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
