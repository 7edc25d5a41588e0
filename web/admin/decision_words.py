"""A retrain's decision in a maintainer's words, rendered from its typed records (`core.evaluation.decision`,
`core.registry.stages.RunRecord`): every number shown is a field of the record, formatted by `pct` or `points`."""

from __future__ import annotations

from core.evaluation.decision import EvalSetName, Rule, RuleResult
from core.evaluation.paired import SampleSize
from core.registry.stages import Outcome, RunRecord

SET_WORDS = {
    EvalSetName.BASE: "the base validation data",
    EvalSetName.HOLDOUT: "the held-out feedback",
    EvalSetName.TRAFFIC: "the traffic set (articles drawn at random from the pool)",
    EvalSetName.POOLED: "all evaluation articles together",
}


def pct(x: float | None) -> str:
    """A share (0..1) as a percentage with two decimals."""
    return "?" if x is None else f"{x * 100:.2f}%"


def points(x: float | None) -> str:
    """A difference of shares (0..1) in percentage points, signed."""
    return "?" if x is None else f"{x * 100:+.2f} points"


def p_text(p: float | None) -> str:
    return "?" if p is None else f"{p:.2g}"


def _set(subject: str) -> str:
    try:
        return SET_WORDS[EvalSetName(subject)]
    except ValueError:
        return subject


def rule_sentence(r: RuleResult) -> str:
    """One rule's verdict in plain words, from its fields."""
    alone = f"the new model alone was right on {r.challenger_only:,}, the current one alone on {r.champion_only:,}"
    if r.rule == Rule.CHAMPION:
        return "There was no model in service to compare against." if not r.passed else ""
    if r.rule == Rule.FEEDBACK:
        if r.passed:
            return ""
        if r.left_out:
            return (f"Nothing to learn from: all {r.left_out:,} trusted answers are on articles of the base "
                    "validation set, which training never uses (the gate judges on them).")
        return "There is no trusted feedback to learn from yet."
    if r.rule == Rule.MARGIN:
        verdict = "It scored" if r.passed else "The new model was not clearly better: it scored"
        return (f"{verdict} {pct(r.challenger)} against {pct(r.champion)} (macro-F1, base data blended with users' "
                f"articles); it needed a gain of {points(r.threshold)}.")
    if r.rule == Rule.DISCORDANT:
        return (f"The two models disagreed on only {r.challenger_only + r.champion_only:,} articles; at least "
                f"{r.threshold or 0:.0f} are needed to judge.")
    if r.rule == Rule.GAIN:
        best = min(r.tests, key=lambda t: t.p_value, default=None)
        where = (f" On {_set(best.subject)} ({best.n:,} articles) the new model alone was right on "
                 f"{best.challenger_only:,}, the current one alone on {best.champion_only:,}.") if best else ""
        if r.passed:
            return f"It is significantly better (p = {p_text(r.p_value)}, below {r.threshold:g}).{where}"
        return (f"The gain could be chance (p = {p_text(r.p_value)}; it must be below {r.threshold:g}, "
                f"one-sided, adjusted for {len(r.tests)} tests).{where}")
    if r.rule == Rule.NOT_WORSE:
        if r.passed:
            return ""
        return (f"The new model is clearly worse on {_set(r.subject)}: accuracy {pct(r.champion)} → "
                f"{pct(r.challenger)}; {alone} of {r.n:,} articles (p = {p_text(r.p_value)}).")
    if r.rule in (Rule.BASE_ACCURACY, Rule.LABEL_RECALL):
        what = "Accuracy on the base validation data" if r.rule == Rule.BASE_ACCURACY else (
            f"How many {r.subject} articles it finds (recall, base validation)")
        verdict = "is ruled out" if r.passed else "cannot be ruled out"
        return (f"{what}: {pct(r.champion)} → {pct(r.challenger)} ({points(r.difference)}, {r.n:,} articles). "
                f"A loss of {points(r.threshold).lstrip('+')} or more {verdict} (lower bound {points(r.bound)} at "
                f"{pct(r.confidence)} confidence).")
    if r.rule == Rule.CHAMPION_UNCHANGED:
        if r.passed:
            return ""
        return f"Another model ({r.note or 'none'}) was put in service while it ran, so this one was not promoted."
    return f"{r.rule.value}: {'passed' if r.passed else 'failed'}."


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
        evidence = [rule_sentence(r) for r in run.rules if r.rule in (Rule.GAIN, Rule.BASE_ACCURACY)]
        return f"**Promoted.** The new model **{run.champion_after}** replaced **{run.champion_before}**. " + \
            " ".join(evidence) + data
    reasons = " ".join(filter(None, (rule_sentence(r) for r in run.failed_rules)))
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
