"""The admin view's figures, drawn so they cannot mislead: the champion's confusion matrix, every version's
scores per evaluation set (served and refused versions told apart, on an axis that shows the size of a real
change, with the gate's significance), answers per day, and the champion's estimated and measured accuracy on
its traffic."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.evaluation.decision import EvalSetName, GateResult, Rule
from core.evaluation.monitor import FORMS, TrafficCheck
from core.input_forms import FORM_NAMES
from core.registry.stages import RunRecord
from core.registry.versions import ModelRegistry
from feedback.monitoring import DayPoint
from web.admin.report import served_accuracy

MIN_SPAN = 0.10  # the accuracy axis spans at least 10 points, so a 0.06-point dip looks like what it is
# Each set's marker and colour (colour-blind safe, and told apart by shape alone in grey print).
SETS = {
    EvalSetName.BASE.value: ("base validation", "o", "#1d4ed8"),
    EvalSetName.HOLDOUT.value: ("feedback holdout", "s", "#b45309"),
    EvalSetName.TRAFFIC.value: ("traffic sample", "^", "#047857"),
}
_SERVED_ACTIONS = ("promote", "adopt", "rollback")


@dataclass
class VersionScores:
    """One model version: whether it ever served, whether the gate refused it, and its accuracy per set."""

    version: str
    served: bool
    refused: bool
    accuracy: dict[str, float] = field(default_factory=dict)  # set name -> accuracy
    rows: dict[str, int] = field(default_factory=dict)  # set name -> rows scored (for the 95% interval)


def version_scores(registry: ModelRegistry, run: RunRecord | None, last: int = 12) -> list[VersionScores]:
    """The `last` versions, oldest first: base-validation accuracy from each version's own record, and the
    feedback-holdout and traffic accuracies the last run's gate measured for its champion and challenger."""
    record = registry.read_record()
    served = {record["champion"], *record["history"]}
    served |= {e.get("version") for e in record["events"] if e.get("action") in _SERVED_ACTIONS}
    refused = {e.get("version") for e in record["events"] if e.get("action") == "refused"}
    out = []
    for version in registry.versions()[-last:]:
        if not version[1:].isdigit():
            continue  # a set-aside copy, never a numbered version
        meta = registry.get(version).meta
        entry = VersionScores(version, version in served, version in refused and version not in served)
        accuracy = served_accuracy(meta)
        if accuracy is not None:
            entry.accuracy[EvalSetName.BASE.value] = accuracy
            entry.rows[EvalSetName.BASE.value] = int((meta.get("validation") or {}).get("n") or 0)
        out.append(entry)
    gate = run.gate if run else None
    if run and gate:
        by_version = {entry.version: entry for entry in out}
        for which, name in (("champion", run.champion_before), ("challenger", run.challenger)):
            found = by_version.get(name or "")
            if found is None:
                continue
            for scores in gate.sets:
                value = getattr(scores, f"{which}_accuracy")
                if scores.name != EvalSetName.BASE.value and value is not None and scores.n:
                    found.accuracy[scores.name] = float(value)
                    found.rows[scores.name] = int(scores.n)
    return out


def significance_note(run: RunRecord | None) -> str:
    """The last run's gate in one line: the gain it measured, its p-value against alpha, and the verdict."""
    if run is None or run.gate is None or not run.challenger:
        return ""
    gate: GateResult = run.gate
    gain = gate.rule(Rule.GAIN)
    alpha = f" (needs < {gain.threshold:g})" if gain and gain.threshold is not None else ""
    verdict = "promoted" if run.decision == "promoted" else "refused"
    return (f"{run.challenger} vs {run.champion_before}: macro-F1 {gate.delta * 100:+.2f} pt, "
            f"p = {gate.p_value:.2g}{alpha}: {verdict}")


def axis_range(values: Sequence[float], min_span: float = MIN_SPAN) -> tuple[float, float]:
    """A y range holding every value, at least `min_span` wide, inside [0, 1]."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    pad = max(0.0, min_span - (hi - lo)) / 2 + 0.01
    lo, hi = lo - pad, hi + pad
    if lo < 0.0:
        lo, hi = 0.0, min(1.0, hi - lo)
    if hi > 1.0:
        lo, hi = max(0.0, lo - (hi - 1.0)), 1.0
    return lo, hi


def _interval(p: float, n: int) -> float:
    """Half the width of a normal-approximation 95% interval for an accuracy p measured on n rows."""
    return 1.96 * math.sqrt(max(p * (1 - p), 1e-9) / n) if n else 0.0


def versions_figure(points: Sequence[VersionScores], note: str = "") -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(5.6, 4.2), dpi=80)
    offsets = {name: (i - 1) * 0.18 for i, name in enumerate(SETS)}
    # The axis holds every interval too, clipped to 0..1: a wide interval is part of what the plot must show.
    values = [min(1.0, max(0.0, v + sign * _interval(v, p.rows.get(name, 0))))
              for p in points for name, v in p.accuracy.items() for sign in (-1, 1)]
    for name, (_, marker, colour) in SETS.items():
        line = [(i, p.accuracy[name]) for i, p in enumerate(points) if p.served and name in p.accuracy]
        if name == EvalSetName.BASE.value and len(line) > 1:
            # The accuracy in service over time: it steps only where a version was promoted, so a refused
            # version in between is never joined to it.
            ax.plot([i + offsets[name] for i, _ in line], [a for _, a in line], color=colour, linewidth=1.2,
                    drawstyle="steps-post", zorder=1)
        for i, p in enumerate(points):
            if name not in p.accuracy:
                continue
            a = p.accuracy[name]
            ax.errorbar(i + offsets[name], a, yerr=_interval(a, p.rows.get(name, 0)), fmt=marker, markersize=7,
                        color=colour, markerfacecolor=colour if p.served else "white", markeredgewidth=1.6,
                        capsize=3, zorder=2)
    ax.set_xticks(range(len(points)), [p.version + ("\nrefused" if p.refused else "") for p in points], fontsize=9)
    lo, hi = axis_range(values)
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=0))
    ax.set_ylabel("accuracy (bars: 95% interval)")
    ax.set_xlim(-0.6, max(len(points) - 0.4, 0.6))
    ax.grid(axis="y", color="#d1d5db", linewidth=0.6)
    shown = [name for name in SETS if any(name in p.accuracy for p in points)]
    handles = [Line2D([], [], marker=SETS[n][1], color=SETS[n][2], linestyle="", label=SETS[n][0]) for n in shown]
    handles += [Line2D([], [], marker="o", color="#374151", linestyle="", label="served (filled)"),
                Line2D([], [], marker="o", color="#374151", markerfacecolor="white", linestyle="",
                       label="refused (hollow)")]
    ax.set_title("Accuracy by version and evaluation set", fontsize=11)
    # Legend and the gate's verdict sit below the axes, where they cover no point.
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, 0.06 if note else 0.0))
    if note:
        fig.text(0.5, 0.01, note, ha="center", va="bottom", fontsize=8, color="#111827", wrap=True)
    fig.tight_layout(rect=(0, 0.2 if note else 0.14, 1, 1))
    plt.close(fig)
    return fig


def confusion_figure(matrix: Sequence[Sequence[int]], names: Sequence[str] = ()) -> Any:
    """The champion's validation confusion matrix, its rows and columns named `names` (the model's own topics, by
    their current names; numbered when they do not fit)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 3.8), dpi=80)
    if matrix:
        ax.imshow(matrix, cmap="Blues")
        peak = max(max(row) for row in matrix) or 1
        for i, row in enumerate(matrix):
            for j, n in enumerate(row):
                ax.text(j, i, str(n), ha="center", va="center", color="white" if n > peak / 2 else "black")
    ticks = list(names) if len(names) == len(matrix) else [str(i + 1) for i in range(len(matrix))]
    ax.set_xticks(range(len(ticks)), ticks, rotation=20)
    ax.set_yticks(range(len(ticks)), ticks)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title("Champion on validation")
    fig.tight_layout()
    plt.close(fig)
    return fig


def per_day_figure(days: Counter[str] | Mapping[str, int]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 3.2), dpi=80)
    ordered = sorted(days)[-30:]
    # Days at positions, named by tick labels: strings as x values would be matplotlib's categorical units, which
    # log a line per figure for strings that read as dates.
    ax.bar(range(len(ordered)), [days[d] for d in ordered], color="#1d4ed8")
    ax.set_xticks(range(len(ordered)), ordered, rotation=45)
    ax.set_xlim(-0.6, max(len(ordered) - 0.4, 6.4))  # room for a week: one day is one bar, not the whole width
    ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    if not ordered:  # an axis from 0, not one around nothing (-0.04..0.04), and the reason it is empty
        ax.set_ylim(0, 1)
        ax.set_yticks([0])
        ax.text(0.5, 0.5, "No answers yet", ha="center", va="center", transform=ax.transAxes, color="#374151")
    ax.set_ylabel("answers")
    ax.set_title("Answers per day (last 30)")
    fig.tight_layout()
    plt.close(fig)
    return fig


def traffic_figure(points: Sequence[DayPoint], check: TrafficCheck) -> Any:
    """The champion on its traffic, one panel per input form served: the estimated accuracy per day (line) beside the traffic set's measured accuracy (points, 95% Wilson interval), the form's validation accuracy
    (dashed) and the alert's line (dotted). The estimate's interval is how far the day's true accuracy may lie
    from its expectation on that many texts (core.evaluation.estimate.Estimate)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    forms = [form for form in FORMS if any(p.form == form for p in points)] or list(FORMS)
    fig, axes = plt.subplots(1, len(forms), figsize=(max(6.4, 4.0 * len(forms) + 0.6), 3.8), dpi=80, sharey=True,
                             squeeze=False)
    days = sorted({p.day for p in points})
    # The axis holds the points and the lines; an interval of a day with a handful of texts may run off it (it is
    # drawn clipped): stretching the axis to it would flatten every other day.
    values = [v for p in points for v in (p.estimated, p.measured) if not math.isnan(v)]
    values += [c.validation - check.policy.alert_points / 100 for c in check.forms.values() if c.validation is not None]
    for ax, form in zip(axes[0], forms, strict=True):
        mine = sorted((p for p in points if p.form == form), key=lambda p: p.day)
        x = [days.index(p.day) for p in mine]
        ax.errorbar(x, [p.estimated for p in mine], yerr=[1.96 * p.estimated_se for p in mine], fmt="o-",
                    color="#1d4ed8", linewidth=1.4, markersize=5, capsize=3, label="estimated from confidences, 95%")
        labelled = [p for p in mine if p.labelled]
        if labelled:
            ax.errorbar([days.index(p.day) for p in labelled], [p.measured for p in labelled],
                        yerr=[[p.measured - p.measured_low for p in labelled], [p.measured_high - p.measured for p in labelled]],
                        fmt="^", color="#047857", capsize=3, markersize=6, label="measured on traffic labels, 95%")
        check_form = check.forms.get(form)
        validation = check_form.validation if check_form else None
        if validation is not None:
            ax.axhline(validation, color="#374151", linestyle="--", linewidth=1, label="validation")
            ax.axhline(validation - check.policy.alert_points / 100, color="#b91c1c", linestyle=":", linewidth=1.2,
                       label="alert below")
            values.append(validation)
        alert = " · ALERT" if check_form is not None and check_form.alert else ""
        ax.set_title(f"{FORM_NAMES[form]}{alert}", fontsize=10, color="#b91c1c" if alert else "#111827")
        ax.set_xticks(range(len(days)), [d[5:] for d in days], rotation=45, fontsize=8)
        ax.set_xlim(-0.5, max(len(days) - 0.5, 0.5))
        ax.grid(axis="y", color="#d1d5db", linewidth=0.6)
        if not mine:
            ax.text(0.5, 0.5, "nothing served", ha="center", va="center", transform=ax.transAxes, color="#6b7280")
    lo, hi = axis_range(values or [0.9])
    axes[0][0].set_ylim(lo, hi)
    axes[0][0].yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=0))
    axes[0][0].set_ylabel("champion accuracy")
    handles, names = [], []
    for ax in axes[0]:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            if name not in names:
                handles.append(handle)
                names.append(name)
    fig.suptitle("Champion on served traffic, per day (UTC)", fontsize=11)
    fig.legend(handles, names, fontsize=8, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.2, 1, 1))
    plt.close(fig)
    return fig
