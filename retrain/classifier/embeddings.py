"""Pooled encoder embeddings: the masked mean of an encoder's last hidden states over what it reads of each text,
from a classifier or a base encoder, kept in a disk cache under home; and what the head's last layer reads."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from core.reading import Reading
from core.text import text_hash
from retrain.classifier.model import NewsClassifier, is_checkpoint, load_base, load_checkpoint, mean_pooled
from retrain.classifier.tokens import INFERENCE_BATCH, by_length

log = logging.getLogger(__name__)

Embedder = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, dim) pooled embeddings


def pooled(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading,
           batch_size: int = INFERENCE_BATCH) -> np.ndarray:
    """The masked mean of the encoder's last hidden states over what it reads of each text (what the classifier's
    head reads), batched in length order."""
    encoder.eval()
    out = np.zeros((len(texts), encoder.config.hidden_size), dtype=np.float32)
    started = time.perf_counter()
    with torch.inference_mode():
        for batch, (idx, input_ids, mask) in enumerate(by_length(tokenizer, texts, reading, batch_size)):
            hidden = encoder(input_ids=input_ids, attention_mask=mask).last_hidden_state
            out[idx] = mean_pooled(hidden, mask).numpy()
            if batch % 50 == 49:
                log.info("embedded %d of %d texts (%.0f s)", batch * batch_size + len(idx), len(texts),
                         time.perf_counter() - started)
    return out


@torch.no_grad()
def head_inputs(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading
                ) -> torch.Tensor:
    """What the head's last layer reads for each text: the pooled encoder output through the head's hidden layer,
    dropout off."""
    vectors = torch.from_numpy(pooled(model.encoder, tokenizer, texts, reading))
    model.eval()
    return model.head[:-1](vectors)


def encoder_embedder(checkpoint_or_base: str, max_length: int, batch_size: int = INFERENCE_BATCH) -> Embedder:
    """Mean-pooled embeddings from a saved classifier's encoder (a champion's checkpoint folder), or from a base
    encoder (a Hugging Face id or folder; "" = the packaged all-MiniLM-L6-v2)."""

    def embed(texts: Sequence[str]) -> np.ndarray:
        path = Path(checkpoint_or_base) if checkpoint_or_base else None
        model, tokenizer = (load_checkpoint(path) if path is not None and is_checkpoint(path)
                            else load_base(checkpoint_or_base))
        return pooled(model.encoder, tokenizer, texts, Reading(max_length), batch_size)

    return embed


def cached_embeddings(cache_dir: Path, model_key: str, texts: Sequence[str], embed: Embedder) -> np.ndarray:
    """`embed(texts)`, kept in `cache_dir` under a digest of the model and the texts."""
    digest = hashlib.sha256(model_key.encode())
    for text in texts:
        digest.update(text_hash(text).encode())
    path = Path(cache_dir) / f"{digest.hexdigest()[:32]}.npy"
    if path.is_file():
        log.info("embeddings from the cache (%s)", path.name)
        return np.load(path)
    vectors = embed(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors)
    tmp.replace(path)
    return vectors
