"""Helpers shared by the benchmarks: how much CPU other processes took while we measured."""

from __future__ import annotations

import os
import resource
import time

CONTENDED_SHARE = 0.05  # other processes above this share of the machine make a measurement suspect
_MIN_CPU_SECONDS = 2.0


def _busy_and_own_seconds() -> tuple[float, float] | None:
    """CPU seconds the whole machine and this process (with its waited-for children) have used."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            values = [int(v) for v in handle.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
    busy = (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        own += usage.ru_utime + usage.ru_stime
    return busy, own


class CpuWatch:
    """Measures the share of the machine's CPU that other processes used since it was started.

    A benchmark on a shared machine is only as good as its quiet: a test suite running alongside can
    halve a throughput figure. This says which numbers to distrust. Linux only: `share` is None
    elsewhere, and for spans too short to tell.
    """

    def __init__(self) -> None:
        self._wall = time.perf_counter()
        self._start = _busy_and_own_seconds()

    def share(self) -> float | None:
        end = _busy_and_own_seconds()
        if self._start is None or end is None:
            return None
        other = (end[0] - self._start[0]) - (end[1] - self._start[1])
        capacity = (time.perf_counter() - self._wall) * (os.cpu_count() or 1)
        if capacity < _MIN_CPU_SECONDS:  # /proc/stat counts in ticks of 10 ms: too coarse for short spans
            return None
        return max(0.0, other) / capacity


def contention_note(share: float | None, what: str = "the run") -> str:
    if share is None:
        return "Other processes' CPU use: unknown (no /proc/stat, or too short to tell)"
    warning = " (numbers are suspect: rerun on a quiet machine)" if share > CONTENDED_SHARE else ""
    return f"Other processes used {share * 100:.0f}% of the machine's CPU during {what}{warning}"


def share_cell(share: float | None) -> str:
    return "n/a" if share is None else f"{share * 100:.0f}%" + (" !" if share > CONTENDED_SHARE else "")
