"""ONNX export of a tiny random BERT classifier: parity, dynamic axes, metadata, int8."""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from transformers import AutoTokenizer

from core.labels import LABELS
from core.reading import Reading
from core.serving.classifier import OnnxClassifier, inference_session, session_options
from core.storage.paths import FP32_FILE, INT8_FILE, TOKENIZER_FILE
from retrain.classifier.model import load_checkpoint, resolve_base_model, save_checkpoint
from retrain.classifier.tokens import predict_logits
from retrain.export.onnx_file import (
    PARITY_TOLERANCE,
    UNOPTIMIZED_COST,
    ExportError,
    export_onnx,
    parity_check,
    quantize_int8,
)
from testkit.models import tiny_model
from testkit.onnx_graph import fused_op_counts

TEXTS = [
    "Stocks fell sharply after the central bank raised rates.",
    "The striker scored twice as the visitors won 3-1.",
    "Rebels and the government signed a ceasefire.",
    "A new phone chip doubles battery life, its maker says, in a very long sentence " * 3,
    "Short",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object, Path]:
    out = tmp_path_factory.mktemp("export")
    model = tiny_model(seed=1)
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    export_onnx(model, tokenizer, out, reading=Reading(64), extra_meta={"base_model": "tiny"})
    return model, tokenizer, out


def test_export_has_named_inputs_outputs_and_dynamic_axes(exported) -> None:  # type: ignore[no-untyped-def]
    _, _, out = exported
    proto = onnx.load(str(out / FP32_FILE))
    onnx.checker.check_model(proto)
    inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input}
    assert inputs == {"input_ids": ["batch", "sequence"], "attention_mask": ["batch", "sequence"]}
    assert [o.name for o in proto.graph.output] == ["logits"]


def test_metadata_describes_the_model(exported) -> None:  # type: ignore[no-untyped-def]
    _, _, out = exported
    meta = ort.InferenceSession(str(out / FP32_FILE)).get_modelmeta().custom_metadata_map
    assert meta["labels"].split("|") == list(LABELS)
    assert meta["max_length"] == "64"
    assert meta["base_model"] == "tiny"
    assert meta["graph_optimized"] == "true"
    assert (out / meta["tokenizer"]).is_file()


def test_a_failed_fusion_ships_a_correct_unoptimized_graph_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # An install without ONNX Runtime's transformer tools: importing the optimizer fails (ImportError), one of
    # the failures the export expects. A None entry in sys.modules makes the real import raise exactly that.
    monkeypatch.setitem(sys.modules, "onnxruntime.transformers.optimizer", None)
    model = tiny_model(seed=1)
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    with caplog.at_level(logging.WARNING, logger="retrain.export.onnx_file"):
        result = export_onnx(model, tokenizer, tmp_path, reading=Reading(64))
    assert result.path == tmp_path / FP32_FILE and result.optimized is False
    assert [r.getMessage() for r in caplog.records if UNOPTIMIZED_COST in r.getMessage() and "ModuleNotFoundError" in r.getMessage()]
    meta = ort.InferenceSession(str(result.path)).get_modelmeta().custom_metadata_map
    assert meta["graph_optimized"] == "false"
    assert fused_op_counts(result.path)["Attention"] == 0  # the plain graph, not a half-fused one
    assert parity_check(model, tokenizer, tmp_path, TEXTS, Reading(64)) <= PARITY_TOLERANCE
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([FP32_FILE, TOKENIZER_FILE])



def test_export_fuses_attention_and_gelu_and_keeps_layer_norms_plain(exported) -> None:  # type: ignore[no-untyped-def]
    # The tiny BERT defaults to SDPA attention, whose traced graph ONNX Runtime's optimizer cannot fuse;
    # the export must trace eager attention so that each layer becomes one Attention node. The residual
    # Add and LayerNormalization stay apart on purpose (SkipLayerNormalization's kernel is slower: see SLOW_FUSIONS).
    model, _, out = exported
    layers = model.encoder.config.num_hidden_layers
    counts = fused_op_counts(out / FP32_FILE)
    assert counts["Attention"] == layers
    assert counts["Gelu"] >= layers
    assert counts["BiasGelu"] == 0  # the bias stays in the MatMul
    assert counts["SkipLayerNormalization"] == 0
    assert counts["LayerNormalization"] == 2 * layers
    assert model.encoder.config._attn_implementation == "sdpa"  # put back after the export


@pytest.mark.parametrize("name", [FP32_FILE, INT8_FILE])
def test_serving_session_keeps_layer_norms_unfused(exported, name: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, _, out = exported
    if name == INT8_FILE:
        quantize_int8(out / FP32_FILE)

    def runtime_ops(session: Callable[[Path, ort.SessionOptions], object]) -> Counter[str]:
        options = session_options(1)
        options.optimized_model_filepath = str(tmp_path / "runtime.onnx")
        session(out / name, options)
        return Counter(node.op_type for node in onnx.load(str(tmp_path / "runtime.onnx")).graph.node)

    served = runtime_ops(inference_session)
    assert served["SkipLayerNormalization"] == 0 and served["LayerNormalization"] >= 2
    assert served["Attention"] + served["QAttention"] >= 1
    # What the serving session prevents: left to itself, ONNX Runtime fuses each pair.
    default = runtime_ops(lambda path, options: ort.InferenceSession(str(path), options))
    assert default["SkipLayerNormalization"] == served["LayerNormalization"]


def test_int8_variant_keeps_the_fused_attention(exported) -> None:  # type: ignore[no-untyped-def]
    model, _, out = exported
    int8 = quantize_int8(out / FP32_FILE)
    assert fused_op_counts(int8)["Attention"] == model.encoder.config.num_hidden_layers

@pytest.mark.parametrize("batch", [1, 2, 5])
def test_onnx_matches_pytorch_for_any_batch_and_length(exported, batch: int) -> None:  # type: ignore[no-untyped-def]
    model, tokenizer, out = exported
    texts = TEXTS[:batch]
    expected = predict_logits(model, tokenizer, texts, Reading(64))
    actual = OnnxClassifier(out, onnx_file=FP32_FILE).logits(texts)
    assert actual.shape == (batch, len(LABELS))
    assert np.abs(expected - actual).max() <= PARITY_TOLERANCE


def test_parity_check_reports_and_refuses_a_different_model(exported) -> None:  # type: ignore[no-untyped-def]
    model, tokenizer, out = exported
    assert parity_check(model, tokenizer, out, TEXTS, Reading(64)) <= PARITY_TOLERANCE
    with pytest.raises(ExportError, match="differ"):
        parity_check(tiny_model(seed=2), tokenizer, out, TEXTS, Reading(64))


def test_int8_variant_keeps_metadata_and_agrees_roughly(exported) -> None:  # type: ignore[no-untyped-def]
    _, _, out = exported
    quantize_int8(out / FP32_FILE)
    fp32 = OnnxClassifier(out, onnx_file=FP32_FILE).predict_proba(TEXTS)
    int8 = OnnxClassifier(out, onnx_file=INT8_FILE)
    assert int8.labels == LABELS and int8.max_length == 64
    assert np.abs(int8.predict_proba(TEXTS) - fp32).max() < 0.1
    assert (out / INT8_FILE).stat().st_size < (out / FP32_FILE).stat().st_size


def test_checkpoint_round_trip_restores_the_same_logits(exported, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model, tokenizer, _ = exported
    save_checkpoint(model, tokenizer, tmp_path / "ckpt")
    restored, restored_tok = load_checkpoint(tmp_path / "ckpt")
    a = predict_logits(model, tokenizer, TEXTS, Reading(64))
    b = predict_logits(restored, restored_tok, TEXTS, Reading(64))
    assert np.allclose(a, b, atol=1e-6)
