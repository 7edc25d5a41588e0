"""Training side of NewsLoop: fine-tuning, ONNX export, evaluation, the promotion gate, the CLI.

All torch code lives here; `core` serves what this package exports.
"""
