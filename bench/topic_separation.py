"""How well can N answers separate a taught topic in an encoder's space? The ceiling that any recipe reading the
encoder's embeddings works under (issue 46 asks 0.85 recall and precision of the taught topic after 200 answers).

The rows are bench/taxonomy.py's carve for the same seed: the queue's pool and the evaluation rows. For each encoder
(the base encoder, and each scenario's starter found in --starter-cache, which bench/taxonomy.py fills) and each
number of answers N, N pool rows are drawn at random with their true topics, a balanced linear model is fit on their
pooled embeddings, and the evaluation rows are scored, for several draws:

- **break-even**: the largest value that the taught topic's recall and precision both reach at one threshold on its
  probability, with the threshold and the model's strength (C, of STRENGTHS) chosen on the evaluation rows
  themselves. No prior, bias or threshold a recipe could choose does better with that reader, so it is an upper
  bound, not an estimate of what a recipe reaches.
- **reader**: the product's own reading (retrain.topics.split_rows: balanced, C = SET_READER_C, the likeliest topic):
  accuracy over every topic and the taught topic's recall and precision.

A linear reader is not a fine-tune: a retrain also moves the encoder. Compare these rows with bench/taxonomy.py's.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.topic_separation --starter-cache ../taxonomy-starters
    python -m bench.topic_separation --quick      # seconds: the seed set and a tiny random encoder (mechanics only)
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.label_errors import bench_embeddings
from bench.options import parser
from bench.sim.carve import SCENARIOS, Carved, TopicScenario, carve, folder_digest, write_starter_folder
from bench.sim.data import SourceFile, data_location, load_sources
from bench.sim.measure import topic_scores
from bench.sim.starters import MANIFEST
from core.data import source_labels
from core.registry.versions import ModelRegistry
from core.settings.policies import MAX_LENGTH
from core.storage.paths import CHECKPOINT_DIR
from retrain.classifier.embeddings import cached_embeddings, encoder_embedder
from retrain.topics.split_rows import SET_READER_C

STRENGTHS = (0.003, 0.01, 0.03, 0.1)  # the linear model's C values the break-even is the best of


@dataclass(frozen=True)
class Scores:
    """One draw's reading of the evaluation rows."""

    break_even: float
    accuracy: float
    recall: float
    precision: float


def break_even(truth: np.ndarray, scores: np.ndarray) -> float:
    """The largest value that recall and precision both reach at one threshold on `scores` (of `truth`, a boolean
    per row); 0 when no row is true."""
    from sklearn.metrics import precision_recall_curve

    truth = np.asarray(truth, dtype=bool)
    if not truth.any():
        return 0.0
    precision, recall, _ = precision_recall_curve(truth, scores)
    return float(np.minimum(precision, recall).max())


def read(vectors: np.ndarray, labels: np.ndarray, picked: np.ndarray, evaluation: np.ndarray, topic: int) -> Scores:
    """Fit the linear models on the `picked` rows and score the `evaluation` rows for `topic` (see the module)."""
    from sklearn.linear_model import LogisticRegression

    truth = labels[evaluation] == topic
    best, reader = 0.0, None
    for strength in sorted({*STRENGTHS, SET_READER_C}):
        linear = LogisticRegression(C=strength, max_iter=3000, class_weight="balanced")
        linear.fit(vectors[picked], labels[picked])
        classes = list(linear.classes_)
        probs = linear.predict_proba(vectors[evaluation])
        if topic in classes:
            best = max(best, break_even(truth, probs[:, classes.index(topic)]))
        if strength == SET_READER_C:
            reader = np.asarray(classes)[probs.argmax(axis=1)]
    assert reader is not None
    scores = topic_scores(labels[evaluation].tolist(), reader.tolist(), topic)
    return Scores(best, scores["accuracy"], scores["recall"], scores["precision"])


def draws(pool: int, labels: np.ndarray, answers: int, topic: int, repeats: int, seed: int) -> list[np.ndarray]:
    """`repeats` random draws of `answers` pool rows, each with at least two of `topic` and two of the others (the
    linear model needs both); the whole pool once when `answers` covers it."""
    if answers >= pool:
        return [np.arange(pool)]
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    while len(out) < repeats:
        picked = np.sort(rng.choice(pool, answers, replace=False))
        is_topic = labels[picked] == topic
        if is_topic.sum() >= 2 and (~is_topic).sum() >= 2:
            out.append(picked)
    return out


def cached_starter(cache: Path, kind: str, digest: str) -> Path | None:
    """The champion checkpoint of the newest starter bench/taxonomy.py kept in `cache` for scenario `kind` on a data
    folder of `digest` (any bootstrap recipe), or None."""
    found = []
    for manifest in cache.glob(f"{kind}-*/{MANIFEST}"):
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        if meta.get("data_digest") == digest and not meta.get("tiny"):
            found.append((str(meta.get("trained_at", "")), manifest.parent))
    if not found:
        return None
    champion = ModelRegistry(max(found)[1] / "models").champion()
    checkpoint = champion.path / CHECKPOINT_DIR if champion is not None else None
    return checkpoint if checkpoint is not None and checkpoint.is_dir() else None


def starter_digest(sources: list[SourceFile], carved: Carved, scenario: TopicScenario) -> str:
    """The digest of the data folder bench/taxonomy.py writes for `scenario` from `carved` (what its starters are
    kept by)."""
    with tempfile.TemporaryDirectory() as folder:
        write_starter_folder(sources, carved, scenario, Path(folder), extra=False)
        return folder_digest(Path(folder))


def main(argv: Sequence[str] | None = None) -> int:
    args = parser(__doc__, "python -m bench.topic_separation")
    args.add_argument("--data", default=None, help="AG-News-format folder (default NEWSLOOP_DATA; --quick: seed set)")
    args.add_argument("--topic", default="Sci/Tech", help="the taught topic (default Sci/Tech)")
    args.add_argument("--into", default="Business", help="the split scenario's parent (default Business)")
    args.add_argument("--answers", default=None, help="answers per draw, comma-separated (default "
                      "200,400,800,1600 and the whole pool; --quick 10,20)")
    args.add_argument("--repeats", type=int, default=3, help="random draws per count of answers (default 3)")
    args.add_argument("--pool", type=int, default=None, help="the pool, as bench/taxonomy.py (default 4000)")
    args.add_argument("--eval", dest="evaluation", type=int, default=None, help="evaluation rows (default 2000)")
    args.add_argument("--seed", type=int, default=13, help="the carve's seed, as bench/taxonomy.py's (default 13)")
    args.add_argument("--starter-cache", type=Path, default=None, metavar="DIR",
                      help="bench/taxonomy.py's starters, whose encoders are read too (default: the base encoder only)")
    args.add_argument("--cache", type=Path, default=Path(".cache-bench"), help="embeddings cache folder")
    args.add_argument("--quick", action="store_true", help="the seed set and a tiny random encoder: mechanics only")
    options = args.parse_args(argv)
    started = time.perf_counter()
    data = data_location(options.data, options.quick)
    pool = options.pool or (80 if options.quick else 4000)
    evaluation = options.evaluation or (60 if options.quick else 2000)
    topics = source_labels(data)
    if options.topic not in topics:
        raise SystemExit(f"{options.topic!r} is not a topic of {data} ({', '.join(topics)})")
    topic = topics.index(options.topic)
    sources = load_sources(data)
    carved = carve(sources, topics, pool=pool, evaluation=evaluation, seed=options.seed)
    rows = [*carved.pool, *carved.evaluation]
    texts, labels = [e.text for e in rows], np.array([e.label for e in rows])
    encoders = {"base encoder": bench_embeddings(options.cache, texts, "", options.quick, MAX_LENGTH)}
    for kind in SCENARIOS if options.starter_cache and not options.quick else ():
        digest = starter_digest(sources, carved, TopicScenario(kind, options.topic, options.into))
        checkpoint = cached_starter(options.starter_cache, kind, digest)
        if checkpoint is None:
            print(f"no {kind} starter for this carve in {options.starter_cache}: run bench/taxonomy.py with it first")
            continue
        key = f"starter {checkpoint.relative_to(options.starter_cache)}\0{MAX_LENGTH}"
        encoders[f"{kind} starter"] = cached_embeddings(options.cache, key, texts,
                                                        encoder_embedder(str(checkpoint), MAX_LENGTH))
    counts = [int(n) for n in (options.answers or ("10,20" if options.quick else f"200,400,800,1600,{pool}")).split(",")]
    from sklearn.preprocessing import StandardScaler

    print(f"{options.topic}: pool {pool}, evaluation {evaluation} ({int((labels[pool:] == topic).sum())} of them "
          f"{options.topic}), seed {options.seed}, {options.repeats} draws per count (the whole pool: one)\n")
    print("| encoder | answers | break-even: mean (min-max) | reader: accuracy / recall / precision |")
    print("|---|---:|---|---|")
    evaluated = np.arange(pool, len(rows))
    for name, raw in encoders.items():
        vectors = StandardScaler().fit_transform(raw)
        for n in counts:
            got = [read(vectors, labels, p, evaluated, topic)
                   for p in draws(pool, labels, n, topic, options.repeats, options.seed)]
            even = [s.break_even for s in got]
            print(f"| {name} | {min(n, pool)} | {np.mean(even):.3f} ({min(even):.3f}-{max(even):.3f}) | "
                  f"{np.mean([s.accuracy for s in got]):.3f} / {np.mean([s.recall for s in got]):.3f} / "
                  f"{np.mean([s.precision for s in got]):.3f} |", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
