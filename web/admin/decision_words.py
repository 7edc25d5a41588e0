"""A retrain's decision on the admin view, composed from its typed records (`core.registry.stages.RunRecord`) and
each rule's one phrasing (`core.evaluation.decision.describe`): every number shown is a field of the record."""

from __future__ import annotations

from core.evaluation.decision import Rule, describe, pct, points
from core.evaluation.paired import SampleSize
from core.registry.stages import Outcome, RunRecord


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


def traffic_sentence(need: SampleSize) -> str:
    """How many traffic labels the gate has, and how many more it needs to detect the target gain."""
    assumed = (f"the models disagree on {pct(need.discordance)} of articles "
               f"({'measured by the last run' if need.measured else 'NEWSLOOP_GATE_DISCORDANCE, until a run measures it'})")
    test = (f"a {points(need.gain).lstrip('+')} gain with {pct(need.power)} power (one-sided exact McNemar at "
            f"alpha {need.alpha:.3g}, adjusted for {need.tests} tests; {assumed})")
    if need.needed is None:
        return f"**Traffic set:** {need.have:,} labels; no practical number of labels detects {test}."
    if need.more == 0:
        return f"**Traffic set:** {need.have:,} labels, enough to detect {test}."
    return (f"**Traffic set:** {need.have:,} labels on articles drawn at random; **{need.more:,} more** "
            f"({need.needed:,} in all) are needed to detect {test}.")
