"""What the admin view shows, as pure functions: tiles, decisions, progress and history (plots: web.admin.plots)."""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from typing import Any

from core.command_line import ExitCode
from core.evaluation.decision import FeedbackParts
from core.evaluation.monitor import TrafficCheck, alert_lines
from core.input_forms import FORM_NAMES
from core.registry.stages import RunRecord, Stage
from feedback.monitoring import TrafficReport
from feedback.training.readiness import Readiness
from feedback.validate import WITHDRAWN, Status
from web.admin.decision_words import decision_text as decision_text  # the page's decision, rendered from the record
from web.admin.decision_words import statistics_fold
from web.admin.jobs import Expected, JobStatus


def now() -> str:
    return time.strftime("%H:%M:%S")


def decision_numbers(run: RunRecord | None) -> dict[str, Any]:
    """The last run's record for the accordion beside its decision: every rule with the numbers it compared."""
    if run is None:
        return {}
    record = run.as_dict()
    # The label fixes read through, and validation as labelled and as corrected, only where there were any.
    fixes = {k: record[k] for k in ("label_fixes", "validation_scores") if record.get(k)}
    return {k: record[k] for k in ("decision", "reasons", "rows", "seconds", "challenger")} | fixes | {
        "rules": [r.to_dict() for r in run.rules]}


def review_line(waiting: int) -> str:
    """How many true-looking corrections (suspicious answers from signed-in or checked people) wait for review."""
    if not waiting:
        return "No suspicious answers from signed-in or checked people wait for review."
    return (f"**{waiting:,}** suspicious answer(s) from signed-in or checked people wait for your review (listed "
            "first there): likely true corrections the model was sure of, left out of training until accepted.")


def duration_words(expected: Expected) -> str:
    """How long a retrain should take, and whether that was measured on this host or is a first guess."""
    seconds = expected.seconds
    took = f"about **{seconds:.0f} s**" if seconds < 90 else f"about **{seconds / 60:.0f} min**"
    kind = "retrain" if expected.trains else "run that stopped before training"
    if not expected.runs:
        guess = ("no retrain that trained a model has finished on this host yet" if expected.trains
                 else "no run has stopped before training on this host yet")
        return f"{took} (a first guess: {guess})"
    runs = f"its last {kind}" if expected.runs == 1 else f"the median of its last {expected.runs} {kind}s"
    return f"{took}, measured on this host ({runs})"


def preview_text(ready: Readiness, expected: Expected, traffic: TrafficReport | None = None) -> str:
    """The retrain preview: what a retrain would train and be judged on (`Readiness.parts`, the count the tiles, the
    run's log and its decision state), whether enough is new, how long, and how the champion is estimated to do on
    what it serves now. `expected` is for a run like this one: one that trains, or one that stops first."""
    parts = ready.parts
    if parts.train:
        plan = (f"It would train on the base data and those {parts.train:,}, and judge the new model on the base "
                f"validation data" + (f", the {parts.holdout:,} held out" if parts.holdout else "")
                + (f" and the traffic set's {parts.traffic:,}" if parts.traffic else "") + ".")
    else:
        plan = "With none to train on, it would stop before training: no new model, the current one stays."
    if ready.label_fixes:
        plan += (f" It reads the base data and the answers through your **{ready.label_fixes:,} label fix(es)**: "
                 "relabelled rows with their new label, excluded rows left out, in validation too.")
    text = (f"A retrain would read the trusted feedback as **{parts.words()}**. {plan} It should take "
            f"{duration_words(expected)}, and the current model keeps serving meanwhile.\n\n"
            f"**Judged by:** {ready.evidence.words()}\n\n{statistics_fold(ready.evidence)}\n\n"
            f"{review_line(ready.credible_waiting)}")
    if traffic is not None:
        text += f"\n\n{estimate_sentence(traffic.check)}"
    if not ready.enough:
        text += (f"\n\n⚠️ **Little new feedback:** {ready.new_trusted:,} new trusted answer(s) since the last run, "
                 f"below NEWSLOOP_RETRAIN_MIN_FEEDBACK ({ready.min_new:,}).")
        if parts.train:  # with nothing to train on no gate runs: the plan above says so
            text += " The new model will most likely not be clearly better, and the gate will refuse it."
    return text


def estimate_sentence(check: TrafficCheck) -> str:
    """The champion's estimated accuracy on its recent traffic, per form, in one sentence (and the alert)."""
    if not check.forms:
        return f"No text was served to the champion in the last {check.days} day(s): nothing to estimate yet."
    parts = [f"{FORM_NAMES[c.form]} {c.estimated:.1%} ({c.n:,} texts"
             + (f"; validation {c.validation:.1%})" if c.validation is not None else ")")
             for c in check.forms.values()]
    text = (f"Estimated accuracy on the last {check.days} day(s) of served traffic, from the champion's calibrated "
            f"confidences (no labels needed): {', '.join(parts)}.")
    lines = alert_lines(check)
    return text + ("".join(f"\n\n⚠️ **Alert:** {line}" for line in lines) if lines else "")


def alert_markdown(check: TrafficCheck) -> str:
    """The admin view's alert line: the alert, or that there is none and what would raise one."""
    lines = alert_lines(check)
    if lines:
        return "\n\n".join(f"⚠️ **Alert:** {line}" for line in lines)
    policy = check.policy
    return (f"No alert: no input form is estimated more than {policy.alert_points:g} points below its validation "
            f"accuracy over the last {check.days} day(s) (a form needs {policy.min_texts:,} served texts first).")


def drift_markdown(check: TrafficCheck, names: Sequence[str] = ()) -> str:
    """The window's drift against the model's own data, as a small table (Jensen-Shannon distance: 0 = same);
    `names`: the model's own topics by their current names, in its output order (the order of the label shares)."""
    def jsd(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f}"

    mix = ", ".join(f"{FORM_NAMES[form]} {share:.0%}" for form, share in check.form_mix.items()) or "–"
    labels = ", ".join(f"{name} {share:.0%}" for name, share in zip(names, check.label_shares, strict=False)) or "–"
    rows = [f"| input forms | {mix} | {jsd(check.form_mix_drift)} |",
            f"| predicted labels | {labels} | {jsd(check.label_drift)} |"]
    rows += [f"| confidence, {FORM_NAMES[c.form]} | mean {c.estimated:.1%} over {c.n:,} texts | "
             f"{jsd(c.confidence_drift)} |" for c in check.forms.values()]
    return ("| drift over the window | served | distance to the model's own |\n|---|---|---:|\n" + "\n".join(rows)
            + "\n\nDistance: Jensen-Shannon (0 = the same distribution, 1 = disjoint) against the forms the model was "
            "trained on, the labels of its validation rows, and its validation confidences.")


def tiles(stats: Mapping[str, Any], trusted: FeedbackParts | None, pool_left: int) -> str:
    """The feedback counters as tiles; the trusted tile says how many of them a retrain would train on (the rest
    judge the new model: `FeedbackParts`)."""
    checks = [tuple(map(int, v.split("/"))) for v in (stats.get("checks_right") or {}).values()]
    answered = sum(a for _, a in checks)
    accuracy = f"{sum(r for r, _ in checks) / answered:.0%}" if answered else "–"
    status = stats.get("by_status") or {}
    live = int(stats.get("answers", 0)) - sum(int(status.get(withdrawn, 0)) for withdrawn in WITHDRAWN)
    items = [
        (f"{live:,}", "answers", "live answers (undone and replaced ones not counted)", ""),
        ("–" if trusted is None else f"{trusted.trusted:,}", "trusted texts",
         "–" if trusted is None else trusted.words(), "" if trusted is None else f"{trusted.train:,} to train on"),
        (f"{int(status.get(Status.SUSPICIOUS, 0)):,}", "suspicious waiting", "answers waiting for your review", ""),
        (f"{pool_left:,}", "pool left", "queue articles still needing labels", ""),
        (f"{int(stats.get('annotators', 0)):,}", "annotators", "people (browsers or accounts) who answered", ""),
        (accuracy, "check accuracy", f"known-answer checks answered right ({answered} answered)", ""),
    ]
    cells = "".join(
        f'<div class="tile" role="group" aria-label="{what}" title="{html.escape(hint)}">'
        f'<div class="n">{n}</div><div class="what">{what}</div>'
        + (f'<div class="what">{html.escape(sub)}</div>' if sub else "") + "</div>"
        for n, what, hint, sub in items
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


# How a `python -m retrain` job ended, by its exit status (core.command_line.ExitCode); the decision itself is shown
# beside. REFUSED is any run that kept the champion, the gate's refusal or a stop before training: the decision says
# which.
_ENDINGS: dict[int, str] = {ExitCode.OK: "finished",
                            ExitCode.REFUSED: "finished: not promoted, the champion stays (the decision says why)",
                            ExitCode.BUSY: "did not run: another retrain is running"}


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
