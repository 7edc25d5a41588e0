"""What the simulation reports: the per-round table, the targets, the order comparison and the SUMMARY line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.sim.data import MIN_SLICE_ROWS, SLICE_LABEL, SlicePlan
from bench.sim.rows import ORDERS, RoundRow

# The target: the slice error falls by at least this share.
TARGET_ERROR_REDUCTION = 0.3


def print_header(order: str) -> None:
    print(f"\n## order: {order}")
    print(f"{'round':>5} {'labels':>6} {'corr':>5} {'susp':>5} {'chk':>4} {'bad':>4} {'out':>3} {'fb':>4} {'slice':>6} "
          f"{'base':>6} {'chall':>6} {'secs':>6}  decision")
    print("(corr: corrections so far; susp: answers marked suspicious; chk: answers on known-answer checks; bad: "
          "trusted feedback rows with a wrong label; out: annotators not trained on; fb: trusted feedback rows the "
          "retrain trained on; slice/base: champion accuracy on slice-test / base validation; chall: challenger's "
          "slice accuracy)")


def print_row(row: RoundRow) -> None:
    chall = f"{row.challenger_slice_acc:.3f}" if row.challenger_slice_acc is not None else "-"
    decision = row.decision + (f": {row.reason[:150]}" if row.reason else "")
    if row.worse_on_base:
        decision += " [promoted model worse on base]"
    print(f"{row.round:>5} {row.labels:>6} {row.corrections:>5} {row.suspicious:>5} {row.checks:>4} "
          f"{row.poisoned:>4} {row.caught:>3} {row.feedback_train:>4} "
          f"{row.slice_acc:>6.3f} "
          f"{row.base_acc:>6.3f} {chall:>6} {row.seconds:>6.0f}  {decision}", flush=True)


def print_plan(plan: SlicePlan, words: Sequence[str], kept: dict[str, int], check_size: bool) -> None:
    print(f"slice: {SLICE_LABEL} articles matching {', '.join(words)}: {plan.slice_rows} rows outside validation "
          f"({', '.join(f'{k} {v}' for k, v in plan.slice_by_file.items())}); "
          f"stream part {len(plan.slice_stream)}, held-out slice-test {len(plan.slice_test)}")
    if check_size and plan.slice_rows < MIN_SLICE_ROWS:
        print(f"WARNING: slice has fewer than {MIN_SLICE_ROWS} rows; its accuracy will be noisy")
    print(f"stream: {len(plan.stream)} articles ({len(plan.slice_stream)} slice + {len(plan.other_stream)} other, "
          f"none in the champion's data); training folder keeps {sum(kept.values())} rows "
          f"({', '.join(f'{k} {v}' for k, v in kept.items())})")


def print_results(results: dict[str, dict[str, Any]], comparison: dict[str, Any] | None) -> None:
    print()
    for order, result in results.items():
        red = result["relative_error_reduction"]
        print(f"{order}: slice error {1 - result['slice_acc_start']:.3f} -> {1 - result['slice_acc_end']:.3f} "
              f"(relative reduction {'n/a' if red is None else f'{red * 100:.1f}%'}) after {result['corrections']} "
              f"corrections / {result['labels']} labels; base validation {result['base_acc_start']:.4f} -> "
              f"{result['base_acc_end']:.4f} (drop {result['base_drop_points']:+.2f} pt); troll answers "
              f"{result['malicious']}, wrong labels trusted {result['wrong_labels_trusted']}; promoted "
              f"{result['promoted']}/{result['rounds']}; promoted model worse on base than its predecessor: "
              f"{result['worse_promotion_rounds'] or 'never'}")
    if comparison:
        need = {order: "not reached" if n is None else n for order, n in comparison["labels_needed"].items()}
        print(f"labels to reach the same slice gain ({comparison['target_gain'] * 100:+.1f} pt: the random order's "
              f"final gain, at least a {TARGET_ERROR_REDUCTION:.0%} error reduction): {need}; uncertainty saves "
              f"{saving_text(comparison)}")


def labels_to_reach(rows: list[RoundRow], gain: float) -> int | None:
    """Labels after which the champion's slice accuracy first gained at least `gain`; None if never."""
    start = rows[0].slice_acc
    return next((r.labels for r in rows if r.slice_acc - start >= gain - 1e-9), None)


def outcome(rows: list[RoundRow], max_corrections: int) -> dict[str, Any]:
    """The targets, computed at the last round that used at most `max_corrections` corrections."""
    first = rows[0]
    within = [r for r in rows if r.corrections <= max_corrections]
    last = within[-1]
    err0, err = 1.0 - first.slice_acc, 1.0 - last.slice_acc
    return {
        "round": last.round,
        "labels": last.labels,
        "corrections": last.corrections,
        "slice_acc_start": first.slice_acc,
        "slice_acc_end": last.slice_acc,
        "relative_error_reduction": (err0 - err) / err0 if err0 > 0 else None,
        "base_acc_start": first.base_acc,
        "base_acc_end": last.base_acc,
        "base_drop_points": (first.base_acc - last.base_acc) * 100,
        "promoted": sum(r.decision == "promoted" for r in rows),
        "rounds": len(rows) - 1,
        "worse_promotion_rounds": [r.round for r in rows if r.worse_on_base],
        "malicious": last.malicious,
        "checks": last.checks,
        "annotators_left_out": last.caught,
        "wrong_labels_trusted": last.poisoned,
    }


def compare(runs: dict[str, list[RoundRow]]) -> dict[str, Any] | None:
    """Labels each order needed for the same slice gain: the random order's final gain, but at least the
    gain of a 30% relative error reduction (when random gains nothing, "reach its gain" is trivially met).

    When only the uncertainty order got there, the saving is a lower bound: random needs more labels
    than it was given.
    """
    if not set(ORDERS) <= runs.keys():
        return None
    random_rows = runs["random"]
    floor = TARGET_ERROR_REDUCTION * (1.0 - random_rows[0].slice_acc)
    gain = max(random_rows[-1].slice_acc - random_rows[0].slice_acc, floor)
    needed = {order: labels_to_reach(runs[order], gain) for order in ORDERS}
    diff, at_least = None, False
    if needed["uncertainty"] is not None:
        if needed["random"] is not None:
            diff = needed["random"] - needed["uncertainty"]
        else:
            diff, at_least = random_rows[-1].labels - needed["uncertainty"], True
    return {"target_gain": gain, "labels_needed": needed, "labels_saved_by_uncertainty": diff,
            "saving_is_lower_bound": at_least}


def saving_text(comparison: dict[str, Any]) -> str:
    saved = comparison["labels_saved_by_uncertainty"]
    if saved is None:
        return "n/a"
    return f"more than {saved}" if comparison["saving_is_lower_bound"] else str(saved)


def summary_line(mode: str, plan: SlicePlan, primary: str, result: dict[str, Any], comparison: dict[str, Any] | None,
                 max_corrections: int, wall_s: float) -> str:
    red = result["relative_error_reduction"]
    parts = [
        f"SUMMARY loop {mode} ({primary} order): slice {plan.slice_rows} rows "
        f"(stream {len(plan.slice_stream)}, test {len(plan.slice_test)});",
        f"slice accuracy {result['slice_acc_start']:.3f} -> {result['slice_acc_end']:.3f}",
        f"= relative error reduction {red * 100:.1f}%" if red is not None else "= error reduction n/a",
        f"with {result['corrections']} corrections (<= {max_corrections}) / {result['labels']} labels;",
        f"base validation drop {result['base_drop_points']:+.2f} pt;",
        f"promoted {result['promoted']}/{result['rounds']},",
        "a promoted model worse on base: " + (f"yes (rounds {result['worse_promotion_rounds']})"
                                              if result["worse_promotion_rounds"] else "no") + ";",
    ]
    if result["malicious"] or result["checks"]:
        parts.append(
            f"wrong answers (trolls, Sybils) {result['malicious']}, check answers {result['checks']}, annotators left out "
            f"{result['annotators_left_out']}, wrong labels trusted {result['wrong_labels_trusted']};"
        )
    if comparison:
        need = comparison["labels_needed"]
        parts.append(
            f"labels to reach the same slice gain {comparison['target_gain'] * 100:+.1f} pt: "
            f"uncertainty {need['uncertainty'] if need['uncertainty'] is not None else 'not reached'}, "
            f"random {need['random'] if need['random'] is not None else 'not reached'}, "
            f"saved {saving_text(comparison)};"
        )
    parts.append(f"wall {wall_s / 60:.1f} min")
    return " ".join(parts)
