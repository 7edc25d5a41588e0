"""A retrain's decision on the admin view, composed from its typed records (`core.registry.stages.RunRecord`) and
each rule's one phrasing (`core.evaluation.decision.describe`): every number shown is a field of the record."""

from __future__ import annotations

from core.evaluation.decision import Rule, describe, pct, points
from core.registry.stages import Outcome, RunRecord
from feedback.training.readiness import Evidence


def decision_text(run: RunRecord | None) -> str:
    """The last retrain's outcome: what happened, why (every failed rule, or the evidence for a promotion), and
    what it trained and was judged on."""
    if run is None:
        return "No retrain has run yet."
    rows = run.rows
    data = (f" It trained on {rows.get('feedback_train', 0):,} feedback and {rows.get('base_train', 0):,} base rows "
            f"and was judged on {rows.get('base_validation', 0):,} base-validation, "
            f"{rows.get('feedback_holdout', 0):,} held-out feedback and {rows.get('traffic', 0):,} traffic rows, "
            f"in {run.seconds / 60:.1f} min.")
    if run.decision == Outcome.PROMOTED:
        evidence = [describe(r) for r in run.rules if r.rule in (Rule.GAIN, Rule.BASE_ACCURACY, Rule.NEW_TOPIC)]
        return f"**Promoted.** The new model **{run.champion_after}** replaced **{run.champion_before}**. " + \
            " ".join(evidence) + data
    reasons = " ".join(filter(None, (describe(r) for r in run.failed_rules)))
    if run.decision == Outcome.REFUSED:
        return f"**Not promoted.** **{run.champion_before}** stays in service. {reasons}" + (
            data if run.challenger else "")
    error = f" {run.error}" if run.error else ""
    return f"**The retrain failed**; **{run.champion_before or run.challenger or 'the current model'}** keeps serving. {reasons}{error}"


def statistics_fold(evidence: Evidence) -> str:
    """The statistics behind "a gain under about N points is invisible", folded away for whoever wants them."""
    power, words = evidence.power, []
    if power.n:
        words.append(f"the models are taken to disagree on {pct(power.discordance)} of articles "
                     f"({'as the last retrain measured' if power.measured else 'NEWSLOOP_GATE_DISCORDANCE, until a retrain measures it'})")
    words += [f"a gain counts as visible when the gate would pass it {pct(power.power)} of the time",
              f"the gate needs the new model right on more of your articles and a loss of "
              f"{points(power.margin).lstrip('+')} or more ruled out at {pct(1 - power.alpha)} confidence",
              f"your own articles decide from {evidence.own_rows:,} on (NEWSLOOP_GATE_OWN_ROWS)"]
    return ("<details><summary>The statistics behind this</summary>\n\n"
            + "".join(f"- {w}\n" for w in words) + "\n</details>")
