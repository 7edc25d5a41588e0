"""What tests and benches count in an exported ONNX file: ONNX Runtime's fused transformer ops."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx

# Ops that tests and benchmarks count in an exported file: ONNX Runtime's transformer fusions and the plain
# layer norms that the export keeps instead of SkipLayerNormalization.
FUSED_OPS = (
    "Attention", "EmbedLayerNormalization", "Gelu", "BiasGelu", "FastGelu", "SkipLayerNormalization",
    "LayerNormalization",
)


def fused_op_counts(path: Path) -> dict[str, int]:
    """How many of ONNX Runtime's fused transformer ops (plain or quantized) a file holds."""
    counts = Counter(node.op_type for node in onnx.load(str(path)).graph.node)
    return {op: counts[op] + counts.get(f"Q{op}", 0) for op in FUSED_OPS}
