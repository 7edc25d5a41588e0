"""Fine-tuning loop: AdamW with per-group learning rates, warmup + linear decay, label smoothing,
length-bucketed dynamic padding, a time budget that shapes the schedule, and a progress bar."""

from __future__ import annotations

import logging
import math
import os
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.metrics import f1_score
from torch import nn
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from core.settings.policies import TrainConfig
from retrain.classifier.model import NewsClassifier, freeze_lower_layers
from retrain.classifier.tokens import collate, predict_logits, token_ids
from retrain.training.targets import soft_targets

log = logging.getLogger(__name__)

MetricsCallback = Callable[[dict[str, float], int], None]
_BUCKET_SPAN = 50  # batches per length-sorted pool: long enough to group lengths, short enough to stay random
_TIMING_STEPS = 8  # how often (in steps) the time budget re-plans the schedule
_SPEED_WINDOW = 40  # recent steps whose speed predicts the rest of the run
_SPEED_SAFETY = 1.05  # validation passes and stragglers also take time


@dataclass
class TrainResult:
    steps: int = 0
    examples_seen: int = 0
    seconds: float = 0.0
    stopped_by_budget: bool = False
    history: list[dict[str, float]] = field(default_factory=list)

    @property
    def examples_per_second(self) -> float:
        return self.examples_seen / self.seconds if self.seconds else 0.0


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_batches(lengths: Sequence[int], batch_size: int, rng: np.random.Generator, bucket: bool) -> list[np.ndarray]:
    """One epoch of index batches. With `bucket`, texts of similar length share a batch (less padding)."""
    order = rng.permutation(len(lengths))
    if bucket:
        span = batch_size * _BUCKET_SPAN
        lengths_arr = np.asarray(lengths)
        pools = [order[i : i + span] for i in range(0, len(order), span)]
        order = np.concatenate([pool[np.argsort(lengths_arr[pool], kind="stable")] for pool in pools])
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if bucket:
        rng.shuffle(batches)  # so the run does not see short texts first and long ones last
    return batches


def row_losses(logits: torch.Tensor, targets: torch.Tensor, sets: torch.Tensor | None = None) -> torch.Tensor:
    """Each row's loss: cross-entropy against its target distribution, or, for a row whose `sets` mask (bool,
    rows x labels) has any topic, -log of the probability the model gives the set (-log sum_{j in set} p_j): a
    split's old rows "B or C" are right whichever of the two the model says."""
    log_p = torch.log_softmax(logits, dim=-1)
    exact = -(targets * log_p).sum(dim=-1)
    if sets is None:
        return exact
    is_set = sets.any(dim=-1)
    # Rows without a set take every topic (log 1 = 0, finite), so no -inf reaches the gradient of the branch unused.
    mask = sets | ~is_set.unsqueeze(-1)
    in_set = -torch.logsumexp(log_p.masked_fill(~mask, float("-inf")), dim=-1)
    return torch.where(is_set, in_set, exact)


def plan_steps(lengths: Sequence[int], config: TrainConfig) -> int:
    """How many optimizer steps a run over texts of these token `lengths` takes: `epochs` passes over them, at least
    `min_steps` (a few hundred rows need many more epochs than tens of thousands to learn as much), and at most what
    `max_tokens` allows, a bound on the run's time that is the same on every machine."""
    steps = max(1, math.ceil(config.epochs * math.ceil(len(lengths) / config.batch_size)), config.min_steps)
    if config.max_tokens and lengths:
        steps = min(steps, max(1, int(config.max_tokens / (config.batch_size * float(np.mean(lengths))))))
    return steps


def _param_groups(model: NewsClassifier, config: TrainConfig) -> list[dict]:
    # Bias and LayerNorm weights are not decayed, as in BERT's original recipe.
    groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        is_head = name.startswith("head.")
        no_decay = param.ndim < 2
        groups.setdefault((is_head, no_decay), []).append(param)
    return [
        {
            "params": params,
            "lr": config.lr_head if is_head else config.lr_encoder,
            "weight_decay": 0.0 if no_decay else config.weight_decay,
        }
        for (is_head, no_decay), params in groups.items()
    ]


def train(
    model: NewsClassifier,
    tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    labels: Sequence[int],
    config: TrainConfig,
    *,
    weights: Sequence[float] | None = None,
    targets: np.ndarray | None = None,
    sets: np.ndarray | None = None,
    val_texts: Sequence[str] = (),
    val_labels: Sequence[int] = (),
    on_metrics: MetricsCallback | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TrainResult:
    """Fine-tune `model` in place. Returns counts, timing and the loss/F1 history.

    `targets` (one probability row per text, see `soft_targets`) replaces the label-smoothed labels as
    what the model is trained toward; `labels` still name each row's class. `sets` (bool, one row per text) marks
    the rows trained toward a set of allowed topics instead (`row_losses`). `clock` (seconds) times the
    run and drives the time budget; tests pass a fake one so that no result depends on the machine's speed.
    """
    if len(texts) != len(labels) or not texts:
        raise ValueError("need the same, non-zero number of texts and labels")
    seed_everything(config.seed)
    torch.set_num_threads(config.threads or os.cpu_count() or 1)
    frozen = freeze_lower_layers(model, config.freeze_layers)
    if frozen:
        log.info("froze the embeddings and %d lower layers (%.1fM parameters)", config.freeze_layers, frozen / 1e6)
    rng = np.random.default_rng(config.seed)
    pad_id = tokenizer.pad_token_id or 0
    ids = token_ids(tokenizer, texts, config.reading)
    lengths = [len(x) for x in ids]
    num_labels = model.num_labels
    if targets is None:
        targets = soft_targets(labels, num_labels, config.label_smoothing)
    if np.shape(targets) != (len(texts), num_labels):
        raise ValueError(f"targets have shape {np.shape(targets)}, expected {(len(texts), num_labels)}")
    target = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))
    w = torch.tensor(list(weights) if weights is not None else [1.0] * len(texts), dtype=torch.float32)
    if sets is not None and np.shape(sets) != (len(texts), num_labels):
        raise ValueError(f"sets have shape {np.shape(sets)}, expected {(len(texts), num_labels)}")
    in_sets = torch.from_numpy(np.asarray(sets, dtype=bool)) if sets is not None and np.any(sets) else None

    planned_steps = plan_steps(lengths, config)
    state = {"total": planned_steps}

    def lr_factor(step: int) -> float:
        warmup = max(1, int(config.warmup_ratio * state["total"]))
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (state["total"] - step) / max(1, state["total"] - warmup))

    optimizer = torch.optim.AdamW(_param_groups(model, config))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=config.label_smoothing, reduction="none")
    eval_every = config.eval_every or max(1, planned_steps // config.eval_checks)
    val_subset = _subset(val_texts, val_labels, config.eval_rows, config.seed)

    result = TrainResult()
    # A retrain worker with a GPU trains there; the model returns to the CPU for export and scoring.
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    target, w = target.to(device), w.to(device)
    in_sets = in_sets.to(device) if in_sets is not None else None
    budget_s = config.max_minutes * 60.0
    start = clock()
    stamps: deque[float] = deque(maxlen=_SPEED_WINDOW + 1)
    model.train()
    bar = tqdm(total=planned_steps, desc="training", unit="step", dynamic_ncols=True)
    step, epoch, running = 0, 0, 0.0
    try:
        while step < state["total"]:
            for batch in make_batches(lengths, config.batch_size, rng, config.bucket_by_length):
                if step >= state["total"]:
                    break
                input_ids, mask = collate([ids[i] for i in batch], pad_id)
                logits = model(input_ids.to(device), mask.to(device))
                per_example = row_losses(logits, target[batch], in_sets[batch] if in_sets is not None else None)
                loss = (per_example * w[batch]).sum() / w[batch].sum()
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                step += 1
                result.examples_seen += len(batch)
                running = loss.item() if step == 1 else 0.95 * running + 0.05 * loss.item()
                bar.update(1)
                bar.set_postfix(loss=f"{running:.3f}", epoch=epoch)
                stamps.append(clock())  # the first steps include one-off warmup: skipped below
                if budget_s and step > 2 and step % _TIMING_STEPS == 0:
                    # Speed over the recent steps only, so the plan follows the machine's current load.
                    window = list(stamps)[-_SPEED_WINDOW:] if step > _SPEED_WINDOW else list(stamps)[2:]
                    per_step = (window[-1] - window[0]) / max(1, len(window) - 1) * _SPEED_SAFETY
                    affordable = step + int((budget_s - (clock() - start)) / per_step)
                    # Re-planned both ways, since the speed seen so far can change with machine load.
                    state["total"] = min(planned_steps, max(step, affordable))
                    result.stopped_by_budget = state["total"] < planned_steps
                    bar.total = state["total"]
                    bar.refresh()
                if budget_s and clock() - start > budget_s:
                    state["total"] = step  # out of time: end here whatever the plan said
                    result.stopped_by_budget = True
                if on_metrics and step % 10 == 0:
                    on_metrics({"train_loss": running, "lr_encoder": float(scheduler.get_last_lr()[0])}, step)
                if val_subset and (step % eval_every == 0 or step == state["total"]):
                    point = _validate(model, tokenizer, val_subset, config, loss_fn)
                    point |= {"step": step, "train_loss": running}
                    result.history.append(point)
                    if on_metrics:
                        on_metrics({k: v for k, v in point.items() if k != "step"}, step)
                    model.train()
            epoch += 1
    finally:
        bar.close()
        model.to("cpu")
    result.steps = step
    result.seconds = clock() - start
    model.eval()
    log.info(
        "trained %d steps (%d examples) in %.0f s, %.1f examples/s%s",
        step, result.examples_seen, result.seconds, result.examples_per_second,
        " (shortened to fit the time budget)" if result.stopped_by_budget else "",
    )
    return result


def _subset(texts: Sequence[str], labels: Sequence[int], n: int, seed: int) -> tuple[list[str], list[int]] | None:
    if not texts:
        return None
    idx = np.random.default_rng(seed).permutation(len(texts))[:n]
    return [texts[i] for i in idx], [labels[i] for i in idx]


def _validate(
    model: NewsClassifier, tokenizer: PreTrainedTokenizerBase, subset: tuple[list[str], list[int]], config: TrainConfig,
    loss_fn: nn.Module,
) -> dict[str, float]:
    texts, labels = subset
    logits = predict_logits(model, tokenizer, texts, config.reading)
    y = torch.tensor(labels)
    loss = loss_fn(torch.from_numpy(logits), y).mean().item()
    pred = logits.argmax(axis=1)
    return {
        "val_loss": float(loss),
        "val_accuracy": float((pred == np.asarray(labels)).mean()),
        "val_macro_f1": float(f1_score(labels, pred, average="macro", zero_division=0)),
    }
