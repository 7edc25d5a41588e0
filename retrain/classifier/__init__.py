"""The classifier: the network (an encoder, mean pooling, a small head) with its checkpoints, how it reads texts into
tokens and logits, and its pooled embeddings. The bottom layer of retrain/: it imports nothing else of it."""
