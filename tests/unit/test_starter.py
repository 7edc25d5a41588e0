"""The shipped starter: installed into an empty registry as a served champion, never over an existing one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.labels import LABELS
from core.registry.starter import STARTER_DIR, install_starter, starter_fits, starter_meta
from core.registry.versions import ModelRegistry
from core.serving.classifier import OnnxClassifier
from core.storage.paths import META_FILE


def _fake_starter(tiny_champion_home: Path, dest: Path, labels: list[str]) -> Path:
    champion = ModelRegistry(tiny_champion_home / "models").champion()
    assert champion is not None
    shutil.copytree(champion.path, dest)
    meta = json.loads((dest / META_FILE).read_text()) | {"labels": labels, "source_version": champion.version}
    (dest / META_FILE).write_text(json.dumps(meta))
    return dest


def test_starter_becomes_the_champion_of_an_empty_registry_and_serves(tiny_champion_home: Path, tmp_path: Path) -> None:
    starter = _fake_starter(tiny_champion_home, tmp_path / "starter", list(LABELS))
    registry = ModelRegistry(tmp_path / "home" / "models")
    installed = install_starter(registry, starter)
    assert installed is not None and registry.champion().version == installed.version
    assert installed.meta["kind"] == "starter"
    probs = OnnxClassifier(installed.path).predict_proba(["Stocks fell as oil prices rose."])
    assert probs.shape == (1, len(LABELS))
    # A second start does not install it again over the champion it already has.
    assert install_starter(registry, starter) is None
    assert registry.versions() == [installed.version]


def test_a_starter_for_other_labels_is_not_installed(tiny_champion_home: Path, tmp_path: Path) -> None:
    starter = _fake_starter(tiny_champion_home, tmp_path / "starter", ["Politics", "Sports", "Business", "Sci/Tech"])
    registry = ModelRegistry(tmp_path / "home" / "models")
    assert install_starter(registry, starter) is None
    assert registry.champion() is None


def test_the_shipped_starter_fits_the_labels_and_carries_its_card() -> None:
    meta = starter_meta(STARTER_DIR)
    assert starter_fits(meta), f"no usable starter in {STARTER_DIR}"
    assert (STARTER_DIR / meta["serve_file"]).is_file()
    assert (STARTER_DIR / "MODEL_CARD.md").is_file()
    assert sum(p.stat().st_size for p in STARTER_DIR.rglob("*") if p.is_file()) < 100 * 2**20


def test_packed_starter_has_int8_onnx_fp16_weights_a_card_and_warm_starts_in_fp32(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    import torch

    from core.data import load_seed
    from core.registry.starter import MODEL_CARD
    from core.storage.paths import CHECKPOINT_DIR, FP32_FILE, INT8_FILE
    from retrain.classifier.model import load_checkpoint
    from retrain.export.starter import package_starter

    champion = ModelRegistry(tiny_champion_home / "models").champion()
    out = tmp_path / "starter"
    package_starter(
        champion, out, load_seed().validation, description="seed: seed_news.csv (260 rows)", data={},
        command="python -m retrain bootstrap",
    )
    assert starter_fits(starter_meta(out)) and (out / INT8_FILE).is_file() and not (out / FP32_FILE).exists()
    card = (out / MODEL_CARD).read_text()
    assert "macro AUROC" in card and "python -m retrain bootstrap" in card and "Sci/Tech" in card
    weights = next((out / CHECKPOINT_DIR).glob("*.safetensors"))
    original = next((champion.path / CHECKPOINT_DIR).glob("*.safetensors"))
    assert weights.stat().st_size < 0.6 * original.stat().st_size  # fp16 halves the encoder's weights
    model, _tokenizer = load_checkpoint(out / CHECKPOINT_DIR)
    assert {p.dtype for p in model.parameters()} == {torch.float32}

    installed = install_starter(ModelRegistry(tmp_path / "home" / "models"), out)
    assert installed is not None and installed.meta["data"] == "seed: seed_news.csv (260 rows)"
    assert OnnxClassifier(installed.path).predict_proba(["A new chip doubles battery life."]).shape == (1, len(LABELS))


def test_reexport_rebuilds_the_served_file_from_the_checkpoint_and_keeps_the_record(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    import onnx
    import torch

    from core.data import load_seed
    from core.settings.policies import ExportConfig
    from core.storage.paths import CHECKPOINT_DIR, INT8_FILE
    from retrain.classifier.model import load_checkpoint
    from retrain.export.starter import package_starter, reexport_starter

    champion = ModelRegistry(tiny_champion_home / "models").champion()
    out = tmp_path / "starter"
    validation = load_seed().validation
    package_starter(champion, out, validation, description="seed", data={}, command="python -m retrain bootstrap")
    # Stand in for a file exported by an older recipe: a different served graph, the same weights.
    (out / INT8_FILE).write_bytes((champion.path / "model.onnx").read_bytes())
    before = starter_meta(out)
    weights_before = load_checkpoint(out / CHECKPOINT_DIR)[0].state_dict()

    meta = reexport_starter(out, validation, ExportConfig(max_length=64), description="seed", data={})

    assert meta == starter_meta(out)
    for key in ("source_version", "trained_at", "command", "train_config", "kind"):
        assert meta.get(key) == before.get(key), key
    ops = {node.op_type for node in onnx.load(str(out / INT8_FILE)).graph.node}
    assert "DynamicQuantizeLinear" in ops  # int8 again
    assert "LayerNormalization" in ops and "SkipLayerNormalization" not in ops  # today's recipe
    assert meta["validation_report"]["n"] == len(validation)
    weights_after = load_checkpoint(out / CHECKPOINT_DIR)[0].state_dict()
    assert all(torch.equal(weights_before[k], weights_after[k]) for k in weights_before)
    installed = install_starter(ModelRegistry(tmp_path / "home" / "models"), out)
    assert installed is not None
    assert OnnxClassifier(installed.path).predict_proba(["Stocks fell as oil prices rose."]).shape == (1, len(LABELS))


def test_calibrating_a_packed_starter_records_its_temperature_and_serves_with_it(
    tiny_champion_home: Path, tmp_path: Path
) -> None:
    import numpy as np

    from core.data import load_seed
    from core.evaluation.calibration import log_probs, with_temperature
    from core.storage.paths import VALIDATION_PROBS
    from retrain.export.starter import calibrate_starter, package_starter

    champion = ModelRegistry(tiny_champion_home / "models").champion()
    out, validation = tmp_path / "starter", load_seed().validation
    package_starter(champion, out, validation, description="seed", data={}, command="python -m retrain bootstrap")
    # Every export is calibrated now: stand in for a starter packed before that.
    meta = starter_meta(out)
    (out / "meta.json").write_text(json.dumps({k: v for k, v in meta.items() if k not in ("temperature", "calibration")}))
    raw = OnnxClassifier(out).proba_in_label_order([e.text for e in validation])

    meta = calibrate_starter(out, validation)

    assert meta == starter_meta(out) and meta["temperature"] > 0
    assert set(meta["calibration"]) == {"full", "title", "body"}
    assert all(c["n"] == len(validation) for c in meta["calibration"].values())
    assert "## Calibration" in (out / "MODEL_CARD.md").read_text()
    served = OnnxClassifier(out).proba_in_label_order([e.text for e in validation])
    assert np.allclose(served, with_temperature(log_probs(raw), meta["temperature"]), atol=1e-5)
    assert np.allclose(np.load(out / VALIDATION_PROBS), served, atol=1e-5)
    again = calibrate_starter(out, validation)  # fitted from the raw softmax each time: the same temperature
    assert again["temperature"] == pytest.approx(meta["temperature"], rel=1e-3)


def test_the_rows_seen_are_every_row_of_every_file_but_validation(tmp_path: Path) -> None:
    from core.data import is_validation, load_corpus
    from retrain.export.starter import rows_seen

    topics = ["World", "Sports", "Business", "Sci/Tech"]
    (tmp_path / "train.csv").write_text("label,title,description\n" + "".join(
        f"{i % 4 + 1},Story {i} on {topics[i % 4]},Body of story {i} with more words\n" for i in range(200)))
    (tmp_path / "train_text_only.csv").write_text("label,text\n" + "".join(
        f"{i % 4 + 1},Extra story {i} told in one piece\n" for i in range(30)) + "1,Story 0 on World Body of story 0 with more words\n")
    corpus = load_corpus(str(tmp_path), 0.1)
    seen = rows_seen(str(tmp_path), {e.text for e in corpus.train})
    expanded = {name: {i for first, last in f["ranges"] for i in range(first, last + 1)} for name, f in seen.items()}
    held = {i for i in range(200) if is_validation(f"Story {i} on {topics[i % 4]} Body of story {i} with more words", 0.1)}
    assert held and expanded["train.csv"] == set(range(200)) - held
    assert seen["train.csv"] == {"rows": 200, "seen": 200 - len(held), "ranges": seen["train.csv"]["ranges"]}
    # A text-only row that repeats a validation row is not seen either: validation stays unseen whatever file holds it.
    assert expanded["train_text_only.csv"] == set(range(30)) | ({30} if 0 not in held else set())
