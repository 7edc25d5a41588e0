"""What the admin view shows, as pure functions: tiles, decisions, progress and history (plots: web.admin.plots)."""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from typing import Any

from core.registry.stages import RunRecord, Stage
from feedback.readiness import Readiness
from feedback.validate import WITHDRAWN, Status
from web.admin.decision_words import decision_text as decision_text  # the page's decision, rendered from the record
from web.admin.decision_words import traffic_sentence
from web.admin.jobs import Expected, JobStatus


def now() -> str:
    return time.strftime("%H:%M:%S")


def decision_numbers(run: RunRecord | None) -> dict[str, Any]:
    """The last run's record for the accordion beside its decision: every rule with the numbers it compared."""
    if run is None:
        return {}
    record = run.as_dict()
    return {k: record[k] for k in ("decision", "reasons", "rows", "seconds", "challenger")} | {
        "rules": [r.to_dict() for r in run.rules]}


def review_line(waiting: int) -> str:
    """How many true-looking corrections (suspicious answers from signed-in or checked people) wait for review."""
    if not waiting:
        return "No suspicious answers from signed-in or checked people wait for review."
    return (f"**{waiting:,}** suspicious answer(s) from signed-in or checked people wait for your review (listed "
            "first there): likely true corrections the model was sure of, left out of training until accepted.")


def duration_words(expected: Expected) -> str:
    """How long a retrain should take, and what the estimate rests on."""
    minutes = f"about **{max(expected.seconds, 60) / 60:.0f} min**"
    if not expected.runs:
        return f"{minutes} (a first guess: no retrain that trained a model has finished on this host yet)"
    runs = "its last retrain" if expected.runs == 1 else f"the median of its last {expected.runs} retrains"
    return f"{minutes} on this host ({runs})"


def preview_text(ready: Readiness, expected: Expected) -> str:
    """The retrain preview: what a retrain would train and be judged on, whether enough is new, how long."""
    text = (f"A retrain would train on **{ready.train:,} trusted feedback text(s)** beside the base data, hold out "
            f"{ready.holdout:,} and judge on {ready.traffic.have:,} traffic labels; it should take "
            f"{duration_words(expected)}, and the current model keeps serving meanwhile.\n\n"
            f"{traffic_sentence(ready.traffic)}\n\n{review_line(ready.credible_waiting)}")
    if not ready.enough:
        text += (f"\n\n⚠️ **Little new feedback:** {ready.new_trusted:,} new trusted answer(s) since the last run, "
                 f"below NEWSLOOP_RETRAIN_MIN_FEEDBACK ({ready.min_new:,}). The new model will most likely not be "
                 "clearly better, and the gate will refuse it.")
    return text


def tiles(stats: Mapping[str, Any], trusted: int | None, pool_left: int) -> str:
    """The feedback counters as tiles."""
    checks = [tuple(map(int, v.split("/"))) for v in (stats.get("checks_right") or {}).values()]
    answered = sum(a for _, a in checks)
    accuracy = f"{sum(r for r, _ in checks) / answered:.0%}" if answered else "–"
    status = stats.get("by_status") or {}
    live = int(stats.get("answers", 0)) - sum(int(status.get(withdrawn, 0)) for withdrawn in WITHDRAWN)
    items = [
        (f"{live:,}", "answers", "live answers (undone and replaced ones not counted)"),
        ("–" if trusted is None else f"{trusted:,}", "trusted", "texts a retrain would train on"),
        (f"{int(status.get(Status.SUSPICIOUS, 0)):,}", "suspicious waiting", "answers waiting for your review"),
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
    """The job started here, or a retrain started elsewhere: stage, percent and time left while it runs; how the
    job started here ended after."""
    if not job.command:
        return "No job started from this view since the server started."
    if job.running and job.command.startswith("run"):
        if job.step == Stage.DONE:
            left = f"{job.decision or 'ended'}, finishing up"
        elif job.seconds_left:
            left = f"about {max(job.seconds_left, 60) / 60:.0f} min left"
        else:
            left = "taking longer than the last run"
        where = f" · started elsewhere (process {job.elsewhere}), not from this view" if job.elsewhere else ""
        return (f'<p><strong>{job.stage}</strong> · {job.percent:.0f}% · {left}{where}</p>'
                f'<progress max="100" value="{job.percent:.0f}" aria-label="Retrain progress" style="width:100%">'
                f"{job.percent:.0f}%</progress>")
    if job.running:
        return f"<p>Running <code>{html.escape(job.command)}</code>…</p>"
    return f"<p><code>retrain {html.escape(job.command)}</code> {_ENDINGS.get(job.exit_code or 0, _stopped(job))}.</p>"


# What `python -m retrain` exit codes mean (retrain/__main__.py); the decision itself is shown beside.
_ENDINGS = {0: "finished", 3: "finished: the gate kept the champion", 4: "did not run: another retrain is running"}


def _stopped(job: JobStatus) -> str:
    return f"stopped with exit code {job.exit_code}"


def history_rows(events: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Newest first, every reason in full, as the run recorded it (`core.evaluation.decision.describe`)."""
    rows = []
    for event in reversed(events):
        reasons = [event["reason"]] if event.get("reason") else list(event.get("reasons") or [])
        rows.append([str(event.get("at", ""))[:16].replace("T", " "), event.get("action"), event.get("version"),
                     " ".join(reasons)])
    return rows


def served_accuracy(meta: dict[str, Any]) -> float | None:
    """A version's validation accuracy for the file it serves (meta: `validation.int8` or `.fp32`)."""
    validation = meta.get("validation") or {}
    kind = "int8" if "int8" in str(meta.get("serve_file", "")) else "fp32"
    accuracy = (validation.get(kind) or {}).get("accuracy", validation.get("accuracy"))
    return float(accuracy) if isinstance(accuracy, int | float) else None
