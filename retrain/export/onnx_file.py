"""ONNX export of a trained classifier: self-describing file, parity check, fusion, int8 variant."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from transformers import PreTrainedTokenizerBase

from core.reading import Reading
from core.serving.classifier import OnnxClassifier
from core.storage.paths import FP32_FILE, INT8_FILE, TOKENIZER_FILE
from retrain.classifier.model import NewsClassifier
from retrain.classifier.tokens import predict_logits

log = logging.getLogger(__name__)


def quiet_onnxruntime_tools() -> None:
    """The fusion and quantization tools log every node at INFO, some on the root logger."""
    for name in ("onnx_model", "fusion_base", "fusion_utils", "onnx_model_bert", "fusion_options"):
        logging.getLogger(name).setLevel(logging.WARNING)


OPSET = 17
PARITY_TOLERANCE = 1e-4
_RAW_FILE = "model.raw.onnx"


class ExportError(RuntimeError):
    """The exported model failed a check; nothing from it may be served."""


# What a failed transformer fusion costs the served file: docs/results/performance.md ("In process") measured
# the int8 model with its attention alone left unfused at 5.4 ms a text against 4.0 ms fused; GELU and the
# embeddings' norm add to that.
UNOPTIMIZED_COST = "slower to serve: unfused attention alone took 1.35x the time a text (docs/results/performance.md)"


@dataclass(frozen=True)
class OnnxExport:
    """An exported fp32 file, and whether ONNX Runtime's transformer fusions were applied to it (also recorded in
    the file's metadata as `graph_optimized`)."""

    path: Path
    optimized: bool


def _sample_inputs(tokenizer: PreTrainedTokenizerBase) -> tuple[torch.Tensor, torch.Tensor]:
    batch = tokenizer(
        ["Stocks rallied on Friday.", "The home side won the final in extra time after a late equaliser."],
        padding=True, return_tensors="pt",
    )
    return batch["input_ids"], batch["attention_mask"]


def export_onnx(
    model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, out_dir: Path, reading: Reading,
    extra_meta: dict | None = None,
) -> OnnxExport:
    """Write `model.onnx` (fp32) plus `tokenizer.json` into `out_dir`; an unfused graph is still a valid export."""
    quiet_onnxruntime_tools()
    out_dir = Path(out_dir)
    model.eval()
    raw = out_dir / _RAW_FILE
    ids, mask = _sample_inputs(tokenizer)
    axes = {0: "batch", 1: "sequence"}
    with warnings.catch_warnings(), torch.inference_mode(), _eager_attention(model):
        warnings.simplefilter("ignore")  # the TorchScript exporter is noisy about tracing
        torch.onnx.export(
            model,
            (ids, mask),
            str(raw),
            input_names=["input_ids", "attention_mask"],
            output_names=["logits"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "logits": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
            do_constant_folding=True,
        )
    path = out_dir / FP32_FILE
    optimized = _optimize(raw, path, model)
    if not optimized:
        raw.replace(path)
    raw.unlink(missing_ok=True)
    _set_metadata(path, reading, {"labels": "|".join(model.labels)} | (extra_meta or {})
                  | {"graph_optimized": "true" if optimized else "false"})
    onnx.checker.check_model(str(path))
    tokenizer.backend_tokenizer.save(str(out_dir / TOKENIZER_FILE))
    return OnnxExport(path, optimized)


@contextlib.contextmanager
def _eager_attention(model: NewsClassifier) -> Iterator[None]:
    """Trace the plain matmul-softmax attention: ONNX Runtime's optimizer fuses that pattern into one
    Attention node per layer, but not the graph that SDPA (transformers' default) traces to."""
    encoder = model.encoder
    before = getattr(encoder.config, "_attn_implementation", None)
    if before is None or before == "eager" or not hasattr(encoder, "set_attn_implementation"):
        yield
        return
    encoder.set_attn_implementation("eager")
    try:
        yield
    finally:
        encoder.set_attn_implementation(before)


def _optimizer_errors() -> tuple[type[BaseException], ...]:
    """What ONNX Runtime's transformer optimizer raises on a graph or an install it cannot handle: its tools
    missing (ImportError), the file unreadable or unwritable (OSError), a graph its Python fusions refuse
    (ValueError, RuntimeError, TypeError), or the runtime session it optimizes with failing (ONNX Runtime's own
    exception classes, which derive from Exception alone). Anything else is a bug and propagates."""
    errors: tuple[type[BaseException], ...] = (ImportError, OSError, ValueError, RuntimeError, TypeError)
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state
    except ImportError:
        return errors
    return errors + (ort_state.Fail, ort_state.InvalidArgument, ort_state.InvalidGraph, ort_state.InvalidProtobuf,
                     ort_state.NoSuchFile, ort_state.NotImplemented, ort_state.RuntimeException)


def _optimize(raw: Path, out: Path, model: NewsClassifier) -> bool:
    """ONNX Runtime's transformer fusions (attention, LayerNorm, GELU), stored in the file itself. False (and a
    warning naming the cost) when the optimizer fails in a way it is known to: the unfused graph is still correct."""
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        config = model.encoder.config
        options = FusionOptions("bert")
        # Measured slower than what they replace (docs/results/performance.md, "In process"):
        # SkipLayerNormalization (residual Add + LayerNormalization stay two nodes; core.serving.classifier keeps
        # the runtime from fusing them either) and BiasGelu (GELU's bias stays in the MatMul before it, which adds
        # it for free, int8 too).
        options.enable_skip_layer_norm = False
        options.enable_bias_skip_layer_norm = False
        options.enable_bias_gelu = False
        optimized = optimize_model(
            str(raw), model_type="bert", num_heads=config.num_attention_heads, hidden_size=config.hidden_size,
            opt_level=1, optimization_options=options,
        )
        optimized.save_model_to_file(str(out))
        return True
    except _optimizer_errors() as exc:
        out.unlink(missing_ok=True)  # a half-written optimized file must not be taken for the export
        log.warning("transformer graph fusion failed (%s: %s); exporting the unoptimized graph, %s",
                    type(exc).__name__, exc, UNOPTIMIZED_COST)
        return False


def _set_metadata(path: Path, reading: Reading, extra: dict) -> None:
    proto = onnx.load(str(path))
    entries = reading.to_meta() | {"tokenizer": TOKENIZER_FILE}  # the labels come with `extra`
    entries |= {k: str(v) for k, v in extra.items()}
    del proto.metadata_props[:]
    for key, value in entries.items():
        proto.metadata_props.add(key=key, value=value)
    onnx.save(proto, str(path))


def quantize_int8(fp32_path: Path) -> Path:
    """Dynamic int8 quantization of the weights (activations stay float)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = fp32_path.with_name(INT8_FILE)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantizer logs every tensor on the root logger
    try:
        # Fused contrib ops defeat ONNX shape inference; their outputs are float.
        quantize_dynamic(
            str(fp32_path), str(out), weight_type=QuantType.QInt8, per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.setLevel(level)
    meta = {p.key: p.value for p in onnx.load(str(fp32_path)).metadata_props}
    proto = onnx.load(str(out))
    del proto.metadata_props[:]
    for key, value in (meta | {"quantization": "dynamic-int8"}).items():
        proto.metadata_props.add(key=key, value=value)
    onnx.save(proto, str(out))
    return out


def parity_check(
    model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, model_dir: Path, texts: list[str], reading: Reading
) -> float:
    """Max absolute logit difference between PyTorch and the fp32 ONNX file on `texts`."""
    expected = predict_logits(model, tokenizer, texts, reading)
    actual = OnnxClassifier(model_dir, onnx_file=FP32_FILE).encoder_logits(texts)
    diff = float(np.abs(expected - actual).max())
    if not diff <= PARITY_TOLERANCE:
        raise ExportError(f"ONNX and PyTorch logits differ by {diff:.2e} (> {PARITY_TOLERANCE:.0e})")
    return diff
