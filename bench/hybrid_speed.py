"""What a hybrid version's lexical half costs a served text, through real HTTP: the shipped starter served as it
ships, then the same starter joined with a lexical half (TF-IDF + logistic regression fitted on the base data's
training rows, weight 0.5), each through `python app.py` on a fresh home, one REST client sending one text a request
(bench/http_speed.py's single-client row). Prints both rows, the p50 ratio, and a last `SUMMARY` line.

    NEWSLOOP_DATA=../shared/data/ag_news python -m bench.hybrid_speed

Target (issue 57): the served model's p50 within 2x of the encoder alone's.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench import options
from bench.common import share_cell
from bench.http_speed import Row, _rest, measured, sample_texts
from bench.load import launch_app, stop_app, wait_until_up

TARGET_RATIO = 2.0


def hybrid_home(home: Path, rows: int) -> int:
    """A home whose champion is the starter with a lexical half fitted on `rows` training rows; its term count."""
    from core.data import load_corpus_or_seed
    from core.registry.starter import install_starter
    from core.registry.versions import ModelRegistry
    from core.settings.config import load_settings
    from retrain.training.lexical import fit_lexical

    settings = load_settings(home=home)
    champion = install_starter(ModelRegistry(settings.paths.models_dir))
    if champion is None:
        raise SystemExit("the shipped starter did not install (NEWSLOOP_DATA must be AG News)")
    corpus = load_corpus_or_seed(settings.data.source, settings.data.val_fraction, settings.data.use_extra)
    train = corpus.train[:rows]
    lexical = fit_lexical([e.text for e in train], [e.label for e in train], len(corpus.labels),
                          c=settings.train.lexical_c, max_features=settings.train.lexical_terms)
    lexical.with_weight(0.5).save(champion.path)
    return len(lexical.vocabulary)


def single_client(home: Path, texts: Sequence[str], n: int, log: Path, timeout_s: float) -> Row:
    proc, url = launch_app(home, 10**9, log)
    try:
        wait_until_up(url, proc, timeout_s)
        api = url.rstrip("/") + "/"
        asyncio.run(_rest(api, list(texts[:10]), 1))  # warm up
        return measured("REST /api/v1/classify", 1, 1, proc.pid, lambda: asyncio.run(_rest(api, list(texts[:n]), 1)))
    finally:
        stop_app(proc)


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--n", type=int, default=300, help="requests per row")
    parser.add_argument("--rows", type=int, default=25_000, help="training rows the lexical half is fitted on")
    parser.add_argument("--startup-timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    texts = sample_texts(max(args.n * 2, 512))
    with tempfile.TemporaryDirectory(prefix="newsloop-hybrid-") as tmp:
        plain = single_client(Path(tmp) / "plain", texts, args.n, Path(tmp) / "plain.log", args.startup_timeout)
        terms = hybrid_home(Path(tmp) / "hybrid", args.rows)
        hybrid = single_client(Path(tmp) / "hybrid", texts, args.n, Path(tmp) / "hybrid.log", args.startup_timeout)
    print("| served | p50 ms | p95 ms | requests | errors | others' CPU |\n|---|---:|---:|---:|---:|---:|")
    for name, row in (("the starter (encoder alone)", plain), (f"the starter + lexical half ({terms:,} terms)", hybrid)):
        print(f"| {name} | {row.p(50):.2f} | {row.p(95):.2f} | {row.requests} | {row.errors} | "
              f"{share_cell(row.other_share)} |")
    ratio = hybrid.p(50) / plain.p(50)
    print(f"SUMMARY hybrid_speed: REST p50 {plain.p(50):.2f} ms -> {hybrid.p(50):.2f} ms, ratio {ratio:.2f} "
          f"(target <= {TARGET_RATIO:g})")
    return 0 if plain.errors == hybrid.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
