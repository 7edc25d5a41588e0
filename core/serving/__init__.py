"""Serving: ONNX Runtime inference with hot swap, request batching and rate limits."""
