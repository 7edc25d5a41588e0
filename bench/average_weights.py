"""The mean of two checkpoints' weights, exported as a new champion (a try of the starter's recipe table).

    NEWSLOOP_HOME=../avg_home NEWSLOOP_DATA=../shared/data/ag_news \
        python -m bench.average_weights ../starter_home/models/versions/v0001/checkpoint models/starter/checkpoint

Both checkpoints must share an architecture (the same base encoder and head). The average is exported as any
bootstrap's model is (ONNX, int8, calibration: retrain.export.publish) into NEWSLOOP_HOME's registry and promoted, with
the first checkpoint's training record (its version's meta.json beside it, if any); `newsloop starter` then packs
it. Prints the new version and its int8 and fp32 validation accuracy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench import options
from core.data import load_corpus
from core.registry.versions import ModelRegistry
from core.settings.config import load_settings

RECORD = ("kind", "base_model", "base_model_path", "data", "rows", "rows_by_form", "train_config", "train_seconds")


def main() -> int:
    parser = options.parser(__doc__)
    parser.add_argument("first", type=Path, help="a checkpoint folder (its training record is kept)")
    parser.add_argument("second", type=Path, help="another checkpoint folder of the same architecture")
    args = parser.parse_args()

    import torch

    from retrain.classifier.model import load_checkpoint
    from retrain.export.publish import publish

    model, tokenizer = load_checkpoint(args.first)
    other, _ = load_checkpoint(args.second)
    with torch.no_grad():
        theirs = dict(other.named_parameters())
        for name, weight in model.named_parameters():
            weight.copy_((weight + theirs[name]) / 2)
    settings = load_settings()
    corpus = load_corpus(str(settings.data.source), settings.data.val_fraction, settings.data.use_extra)
    record_file = args.first.parent / "meta.json"
    record = json.loads(record_file.read_text()) if record_file.is_file() else {}
    meta = {key: value for key, value in record.items() if key in RECORD}
    meta["init_from"] = f"the mean of the weights of {'/'.join(args.first.parts[-3:])} and {'/'.join(args.second.parts[-3:])}"
    registry = ModelRegistry(settings.paths.models_dir)
    exported = publish(model, tokenizer, registry, corpus.validation, settings.export_config(), meta)
    registry.promote(exported.version.version, reason="weight average")
    print(f"{exported.version.version}: int8 {exported.metrics_int8['accuracy']:.4f}, "
          f"fp32 {exported.metrics_fp32['accuracy']:.4f} on {len(corpus.validation)} validation rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
