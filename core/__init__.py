"""Serving side of NewsLoop: configuration, text cleaning, data loading, model registry, ONNX inference.

Nothing here imports torch, Gradio, `feedback` or `retrain`.
"""
