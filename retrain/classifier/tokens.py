"""How the classifier reads texts: their token ids as serving reads them, padded batches, and batched logits."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from core.reading import Reading
from retrain.classifier.model import NewsClassifier

INFERENCE_BATCH = 64  # texts a batch when a model only reads them (logits, embeddings)


def token_ids(tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading) -> list[list[int]]:
    """Each text's tokens as the model reads them (`core.reading`): the ids serving feeds the exported file."""
    # Whole texts first (no truncation, no warning about their length), then the head and tail the reading keeps.
    return [reading.ids(ids) for ids in tokenizer(list(texts), truncation=False, verbose=False)["input_ids"]]


def collate(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, seq in enumerate(ids):
        input_ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, : len(seq)] = 1
    return input_ids, mask


def by_length(
    tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading, batch_size: int
) -> Iterator[tuple[np.ndarray, torch.Tensor, torch.Tensor]]:
    """The texts read in batches of similar length (less padding): each batch's positions in `texts`, token ids
    and attention mask."""
    ids = token_ids(tokenizer, texts, reading)
    order = np.argsort([len(x) for x in ids], kind="stable")
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        input_ids, mask = collate([ids[i] for i in idx], tokenizer.pad_token_id or 0)
        yield idx, input_ids, mask


@torch.inference_mode()
def predict_logits(
    model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], reading: Reading,
    batch_size: int = INFERENCE_BATCH,
) -> np.ndarray:
    """PyTorch logits (eval mode), batched in length order."""
    model.eval()
    out = np.zeros((len(texts), model.num_labels), dtype=np.float32)
    for idx, input_ids, mask in by_length(tokenizer, texts, reading, batch_size):
        device = next(model.parameters()).device
        out[idx] = model(input_ids.to(device), mask.to(device)).float().cpu().numpy()
    return out
