"""The admin view's pure presentation helpers."""

from __future__ import annotations

from web.admin_report import served_accuracy


def test_served_accuracy_reads_the_file_the_version_serves() -> None:
    meta = {"serve_file": "model.int8.onnx", "validation": {"int8": {"accuracy": 0.93}, "fp32": {"accuracy": 0.94}}}
    assert served_accuracy(meta) == 0.93
    assert served_accuracy(meta | {"serve_file": "model.onnx"}) == 0.94
    assert served_accuracy({"validation": {"accuracy": 0.5}}) == 0.5
    assert served_accuracy({}) is None
