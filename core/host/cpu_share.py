"""How a retrain shares the CPU with serving: a lower scheduling priority, and fewer threads beside the app.

A retrain is a batch job; a classification is someone waiting. The retrain process runs `nice`-er than the app (the
kernel then hands the CPU to a request first) and, when the app started it, trains on one core fewer than the
machine has. Why, with what it was measured to cost: docs/decisions/retrain-beside-serving.md.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.settings.config import Settings

log = logging.getLogger(__name__)

MAX_NICE = 19  # the lowest priority Linux knows
# What the app puts in the environment of the retrains it starts (Settings.retrain_beside_serving).
BESIDE_SERVING_ENV = {"NEWSLOOP_RETRAIN_BESIDE_SERVING": "true"}


@dataclass(frozen=True)
class CpuShare:
    """What a retrain process takes: its niceness and its training threads (0 = all cores)."""

    nice: int
    threads: int


def retrain_share(cores: int, *, beside_serving: bool, nice: int, threads: int) -> CpuShare:
    """The retrain's share of `cores`: always `nice` (0-19); `threads` when the host set them, else, beside
    the serving app, all cores but one (at least one), so a request never waits for a core; else all."""
    if not 0 <= nice <= MAX_NICE:
        raise ValueError(f"nice must lie in [0, {MAX_NICE}], got {nice}")
    if threads < 0 or cores < 1:
        raise ValueError(f"threads must be >= 0 and cores >= 1, got {threads} and {cores}")
    if threads:
        return CpuShare(nice, threads)
    return CpuShare(nice, max(1, cores - 1) if beside_serving else 0)


def lower_priority(nice: int) -> int:
    """Make this process at least `nice` nice (never less nice: that needs privileges); returns its niceness.

    Call it before the process starts threads: on Linux a thread inherits its creator's niceness, and
    this sets the calling thread's.
    """
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice > current:
        os.setpriority(os.PRIO_PROCESS, 0, min(nice, MAX_NICE))
    return os.getpriority(os.PRIO_PROCESS, 0)


def available_cores() -> int:
    """Cores this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def yield_cpu(settings: Settings) -> Settings:
    """Lower this process to the retrain's priority; returns the settings with the training threads it may use."""
    share = retrain_share(available_cores(), beside_serving=settings.retrain.beside_serving,
                          nice=settings.retrain.nice, threads=settings.train.threads)
    nice = lower_priority(share.nice)
    log.info("retrain at niceness %d with %s training threads%s", nice, share.threads or "all",
             " (beside serving)" if settings.retrain.beside_serving else "")
    return settings.with_(torch_threads=share.threads)
