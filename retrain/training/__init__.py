"""Training: the fine-tuning loop, the rows and targets a retrain trains toward, the lexical half of a hybrid, and the
TF-IDF baseline a fine-tuned encoder must beat."""
