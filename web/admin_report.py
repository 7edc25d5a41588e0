"""What the admin view shows, as pure functions: tiles, plots, plain-language decisions, progress and history."""

from __future__ import annotations

import html
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from core.labels import LABELS
from feedback.agreement import Agreement
from web.jobs import JobStatus

# Gate reasons (retrain/gate.py, retrain/run.py) in words a maintainer reads at a glance.
_PLAIN = [
    (r"macro-F1 gain (-?[\d.]+) is below the required margin ([\d.]+) \(champion ([\d.]+), challenger ([\d.]+)\)",
     lambda m: f"The new model was not clearly better: it scored {float(m[4]):.1%} against {float(m[3]):.1%} "
               f"(macro-F1) and needed {float(m[2]):.1%} more."),
    (r"McNemar p-value ([\d.e-]+) is not below alpha ([\d.]+)",
     lambda m: "The difference could be chance: the two models disagreed on too few articles to be sure "
               f"(p = {float(m[1]):.2g}; it must be below {m[2]})."),
    (r"only (\d+) discordant examples .*needs at least (\d+)",
     lambda m: f"The two models disagreed on only {m[1]} articles; at least {m[2]} are needed to judge."),
    (r"challenger is not better on the discordant examples",
     lambda m: "Where the two models disagreed, the new one was not right more often."),
    (r"challenger is significantly worse on (\w+)", lambda m: f"The new model is clearly worse on the {m[1]} set."),
    (r"accuracy on (\w+) fell from ([\d.]+) to ([\d.]+)",
     lambda m: f"It got worse on the base validation data ({float(m[2]):.1%} → {float(m[3]):.1%})."),
    (r"(.+?) recall on \w+ fell from ([\d.]+) to ([\d.]+)",
     lambda m: f"It finds fewer {m[1]} articles than the current model ({float(m[2]):.1%} → {float(m[3]):.1%})."),
    (r"no trusted feedback", lambda m: "There is no trusted feedback to learn from yet."),
    (r"the champion is now", lambda m: "Another model was put in service while it ran, so this one was not promoted."),
]


def now() -> str:
    return time.strftime("%H:%M:%S")


def plain(reason: str) -> str:
    for pattern, say in _PLAIN:
        match = re.search(pattern, reason)
        if match:
            return say(match)
    return reason[:1].upper() + reason[1:]


def decision_text(run: Mapping[str, Any]) -> str:
    """The last retrain's outcome in plain words (the raw numbers go in an accordion beside it)."""
    if not run:
        return "No retrain has run yet."
    before, after, new = run.get("champion_before"), run.get("champion_after"), run.get("challenger")
    rows = run.get("rows") or {}
    minutes = float(run.get("seconds") or 0) / 60
    data = f" It trained on {rows.get('feedback', 0):,} feedback and {rows.get('base', 0):,} base rows in {minutes:.0f} min."
    reasons = " ".join(plain(r) for r in run.get("reasons") or [])
    if run.get("decision") == "promoted":
        return f"**Promoted.** The new model **{after}** replaced **{before}**.{data}"
    if run.get("decision") == "refused":
        return f"**Not promoted.** **{before}** stays in service. {reasons}{data}"
    return f"**The retrain failed**; **{before or new}** keeps serving. {reasons}"


def tiles(stats: Mapping[str, Any], trusted: int | None, pool_left: int) -> str:
    """The feedback counters as tiles."""
    checks = [tuple(map(int, v.split("/"))) for v in (stats.get("checks_right") or {}).values()]
    answered = sum(a for _, a in checks)
    accuracy = f"{sum(r for r, _ in checks) / answered:.0%}" if answered else "–"
    status = stats.get("by_status") or {}
    live = int(stats.get("answers", 0)) - int(status.get("undone", 0)) - int(status.get("replaced", 0))
    items = [
        (f"{live:,}", "answers", "live answers (undone and replaced ones not counted)"),
        ("–" if trusted is None else f"{trusted:,}", "trusted", "texts a retrain would train on"),
        (f"{int(status.get('suspicious', 0)):,}", "suspicious waiting", "answers waiting for your review"),
        (f"{pool_left:,}", "pool left", "queue articles still needing labels"),
        (f"{int(stats.get('annotators', 0)):,}", "annotators", "people (browsers or accounts) who answered"),
        (accuracy, "check accuracy", f"known-answer checks answered right ({answered} answered)"),
    ]
    cells = "".join(
        f'<div class="tile" role="group" aria-label="{what}" title="{html.escape(hint)}">'
        f'<div class="n">{n}</div><div class="what">{what}</div></div>'
        for n, what, hint in items
    )
    return f'<div class="tile-row">{cells}</div>'


def progress_html(job: JobStatus) -> str:
    """The job started here: stage, percent and time left while it runs; how it ended after."""
    if not job.command:
        return "No job started from this view since the server started."
    if job.running and job.command.startswith("run"):
        left = f"about {max(job.seconds_left or 0, 60) / 60:.0f} min left" if job.seconds_left else "finishing"
        return (f'<p><strong>{job.stage}</strong> · {job.percent:.0f}% · {left}</p>'
                f'<progress max="100" value="{job.percent:.0f}" aria-label="Retrain progress" style="width:100%">'
                f"{job.percent:.0f}%</progress>")
    if job.running:
        return f"<p>Running <code>{html.escape(job.command)}</code>…</p>"
    outcome = "finished" if job.exit_code in (0, 3) else f"stopped with exit code {job.exit_code}"
    return f"<p><code>retrain {html.escape(job.command)}</code> {outcome}.</p>"


def history_rows(events: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Newest first, every reason in full and in plain words."""
    rows = []
    for event in reversed(events):
        reasons = [event["reason"]] if event.get("reason") else list(event.get("reasons") or [])
        rows.append([str(event.get("at", ""))[:16].replace("T", " "), event.get("action"), event.get("version"),
                     " ".join(plain(r) for r in reasons)])
    return rows


def agreement_rows(result: Agreement) -> tuple[str, list[list[Any]]]:
    if result.alpha is None:
        head = f"Not enough overlap yet: {result.texts} text(s) have labels from two or more annotators."
    else:
        head = (f"Krippendorff's alpha **{result.alpha:.2f}** over {result.texts} texts labelled by two or more "
                "annotators (1 = full agreement, 0 = chance). A much higher alpha without someone means they "
                "disagree with the rest.")
    rows = [[a.annotator, a.shared, f"{a.agree:.0%}", "–" if a.alpha_without is None else f"{a.alpha_without:.2f}"]
            for a in result.annotators]
    return head, rows


def confusion_figure(matrix: Sequence[Sequence[int]]) -> Any:
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
    ax.set_xticks(range(len(LABELS)), LABELS, rotation=20)
    ax.set_yticks(range(len(LABELS)), LABELS)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title("Champion on validation")
    fig.tight_layout()
    plt.close(fig)
    return fig


def served_accuracy(meta: dict[str, Any]) -> float | None:
    """A version's validation accuracy for the file it serves (meta: `validation.int8` or `.fp32`)."""
    validation = meta.get("validation") or {}
    kind = "int8" if "int8" in str(meta.get("serve_file", "")) else "fp32"
    accuracy = (validation.get(kind) or {}).get("accuracy", validation.get("accuracy"))
    return float(accuracy) if isinstance(accuracy, int | float) else None


def versions_figure(points: Sequence[tuple[str, float]]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 3.2), dpi=80)
    ax.plot([v for v, _ in points], [a for _, a in points], marker="o", color="#1d4ed8")
    ax.set_ylabel("validation accuracy")
    ax.set_title("Champion accuracy by version")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    plt.close(fig)
    return fig


def per_day_figure(days: Counter[str]) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 3.2), dpi=80)
    ordered = sorted(days)[-30:]
    ax.bar(ordered, [days[d] for d in ordered], color="#1d4ed8")
    ax.set_title("Answers per day (last 30)")
    ax.tick_params(axis="x", rotation=45)
    fig.tight_layout()
    plt.close(fig)
    return fig
