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
from typing import Any

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


@dataclass(frozen=True)
class RowTensors:
    """What a run trains on, one entry per text: its token ids, its target distribution, its loss weight and, for a
    row trained toward a set of topics, those topics (a bool mask over the topics; None when every row is exact)."""

    ids: list[list[int]]
    targets: torch.Tensor
    weights: torch.Tensor
    sets: torch.Tensor | None

    @property
    def lengths(self) -> list[int]:
        return [len(x) for x in self.ids]

    def to(self, device: torch.device) -> RowTensors:
        return RowTensors(self.ids, self.targets.to(device), self.weights.to(device),
                         self.sets.to(device) if self.sets is not None else None)

    def loss(self, logits: torch.Tensor, batch: np.ndarray) -> torch.Tensor:
        """The weighted mean of the `batch` rows' losses (`row_losses`) on their `logits`."""
        per_example = row_losses(logits, self.targets[batch], self.sets[batch] if self.sets is not None else None)
        return (per_example * self.weights[batch]).sum() / self.weights[batch].sum()


def row_tensors(
    tokenizer: PreTrainedTokenizerBase, texts: Sequence[str], labels: Sequence[int], config: TrainConfig,
    num_labels: int, *, weights: Sequence[float] | None, targets: np.ndarray | None, sets: np.ndarray | None,
) -> RowTensors:
    """`train`'s rows: the texts as the model reads them, toward `targets` (default: the label-smoothed labels), at
    `weights` (default 1); ValueError when `targets` or `sets` are not one row per text and one column per topic."""
    ids = token_ids(tokenizer, texts, config.reading)
    if targets is None:
        targets = soft_targets(labels, num_labels, config.label_smoothing)
    if np.shape(targets) != (len(texts), num_labels):
        raise ValueError(f"targets have shape {np.shape(targets)}, expected {(len(texts), num_labels)}")
    target = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))
    w = torch.tensor(list(weights) if weights is not None else [1.0] * len(texts), dtype=torch.float32)
    if sets is not None and np.shape(sets) != (len(texts), num_labels):
        raise ValueError(f"sets have shape {np.shape(sets)}, expected {(len(texts), num_labels)}")
    in_sets = torch.from_numpy(np.asarray(sets, dtype=bool)) if sets is not None and np.any(sets) else None
    return RowTensors(ids, target, w, in_sets)


class StepPlan:
    """How many steps a run takes, and its learning-rate schedule over them (warmup, then linear decay): planned up
    front (`plan_steps`), then, with a time budget, re-planned every few steps to what the budget affords at the
    speed of the recent steps, and ended when the budget is spent."""

    def __init__(self, planned: int, config: TrainConfig, clock: Callable[[], float]) -> None:
        self.planned = self.total = planned
        self.warmup_ratio = config.warmup_ratio
        self.budget_s = config.max_minutes * 60.0
        self.clock = clock
        self.started = 0.0
        self.stamps: deque[float] = deque(maxlen=_SPEED_WINDOW + 1)
        self.stopped_by_budget = False

    def lr_factor(self, step: int) -> float:
        warmup = max(1, int(self.warmup_ratio * self.total))
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (self.total - step) / max(1, self.total - warmup))

    def start(self) -> None:
        self.started = self.clock()

    def replan(self, step: int) -> bool:
        """Time the step just taken, and every few steps plan the rest again; True when it did."""
        self.stamps.append(self.clock())  # the first steps include one-off warmup: skipped below
        if not (self.budget_s and step > 2 and step % _TIMING_STEPS == 0):
            return False
        # Speed over the recent steps only, so the plan follows the machine's current load.
        window = list(self.stamps)[-_SPEED_WINDOW:] if step > _SPEED_WINDOW else list(self.stamps)[2:]
        per_step = (window[-1] - window[0]) / max(1, len(window) - 1) * _SPEED_SAFETY
        affordable = step + int((self.budget_s - (self.clock() - self.started)) / per_step)
        # Re-planned both ways, since the speed seen so far can change with machine load.
        self.total = min(self.planned, max(step, affordable))
        self.stopped_by_budget = self.total < self.planned
        return True

    def end_if_spent(self, step: int) -> None:
        if self.budget_s and self.clock() - self.started > self.budget_s:
            self.total = step  # out of time: end here whatever the plan said
            self.stopped_by_budget = True


@dataclass(frozen=True)
class Checks:
    """Validation during a run: a fixed sample of the validation rows, scored every `every` steps and at the end."""

    rows: tuple[list[str], list[int]] | None
    every: int
    loss_fn: nn.Module


@dataclass
class _Run:
    """One run's moving parts, which each step reads and advances."""

    model: NewsClassifier
    tokenizer: PreTrainedTokenizerBase
    config: TrainConfig
    rows: RowTensors
    plan: StepPlan
    checks: Checks
    on_metrics: MetricsCallback | None
    device: torch.device
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    result: TrainResult = field(default_factory=TrainResult)
    running: float = 0.0  # the training loss, smoothed

    def epochs(self, rng: np.random.Generator, bar: Any) -> None:
        """Steps, epoch after epoch, until the plan's total."""
        step, epoch = 0, 0
        while step < self.plan.total:
            for batch in make_batches(self.rows.lengths, self.config.batch_size, rng, self.config.bucket_by_length):
                if step >= self.plan.total:
                    break
                loss = self.take_step(batch)
                step += 1
                self.running = loss if step == 1 else 0.95 * self.running + 0.05 * loss
                bar.update(1)
                bar.set_postfix(loss=f"{self.running:.3f}", epoch=epoch)
                if self.plan.replan(step):
                    bar.total = self.plan.total
                    bar.refresh()
                self.plan.end_if_spent(step)
                self.report(step)
            epoch += 1
        self.result.steps = step

    def take_step(self, batch: np.ndarray) -> float:
        """One optimizer step on the `batch` rows; their loss."""
        input_ids, mask = collate([self.rows.ids[i] for i in batch], self.tokenizer.pad_token_id or 0)
        logits = self.model(input_ids.to(self.device), mask.to(self.device))
        loss = self.rows.loss(logits, batch)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.result.examples_seen += len(batch)
        return loss.item()

    def report(self, step: int) -> None:
        """The loss and learning rate every 10 steps, and the validation checks when due."""
        if self.on_metrics and step % 10 == 0:
            self.on_metrics({"train_loss": self.running, "lr_encoder": float(self.scheduler.get_last_lr()[0])}, step)
        if self.checks.rows and (step % self.checks.every == 0 or step == self.plan.total):
            point = _validate(self.model, self.tokenizer, self.checks.rows, self.config, self.checks.loss_fn)
            point |= {"step": step, "train_loss": self.running}
            self.result.history.append(point)
            if self.on_metrics:
                self.on_metrics({k: v for k, v in point.items() if k != "step"}, step)
            self.model.train()


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
    rows = row_tensors(tokenizer, texts, labels, config, model.num_labels, weights=weights, targets=targets, sets=sets)
    plan = StepPlan(plan_steps(rows.lengths, config), config, clock)
    optimizer = torch.optim.AdamW(_param_groups(model, config))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, plan.lr_factor)
    checks = Checks(_subset(val_texts, val_labels, config.eval_rows, config.seed),
                    config.eval_every or max(1, plan.planned // config.eval_checks),
                    nn.CrossEntropyLoss(label_smoothing=config.label_smoothing, reduction="none"))
    # A retrain worker with a GPU trains there; the model returns to the CPU for export and scoring.
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    run = _Run(model, tokenizer, config, rows.to(device), plan, checks, on_metrics, device, optimizer, scheduler)
    plan.start()
    model.train()
    bar = tqdm(total=plan.planned, desc="training", unit="step", dynamic_ncols=True)
    try:
        run.epochs(rng, bar)
    finally:
        bar.close()
        model.to("cpu")
    result = run.result
    result.seconds = clock() - plan.started
    result.stopped_by_budget = plan.stopped_by_budget
    model.eval()
    log.info(
        "trained %d steps (%d examples) in %.0f s, %.1f examples/s%s",
        result.steps, result.examples_seen, result.seconds, result.examples_per_second,
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
