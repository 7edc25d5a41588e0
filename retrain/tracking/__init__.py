"""MLflow at the edge: one tracked run per training or retrain, the registered model's aliases, and the evaluation
plots a run logs."""
