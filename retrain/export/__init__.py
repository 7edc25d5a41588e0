"""From a trained classifier to a registered version: ONNX export with parity and int8, calibration, scores through
the serving path, publishing to the registry, and packing the starter shipped in the repository."""
