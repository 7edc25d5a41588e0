"""A maintainer's word over the gate's: a challenger the gate refused is promoted by hand, with a reason, and the
promotion is recorded where every decision is (the registry's history, with the gate's numbers; MLflow).

Never automatic: only `newsloop promote` (which the admin page's button runs) calls this; `retrain` and `watch`
promote through the gate alone. A rollback undoes it as it undoes any promotion.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from core.registry.versions import ANY, ModelRegistry
from core.taxonomy import Taxonomy
from retrain.export.scoring import model_labels
from retrain.tracking.tracker import RETRAIN_EXPERIMENT, Tracker, TrackingTarget

MAX_REASON_CHARS = 500


class ConsentError(ValueError):
    """A promotion by hand that cannot be made; the message says why and what to do instead."""


@dataclass(frozen=True)
class ManualPromotion:
    """One promotion by hand: what now serves, what it replaced, who, when, why, and the gate's refusal."""

    version: str
    replaced: str | None
    by: str
    reason: str
    at: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"champion": self.version, "manual": True} | asdict(self)

    def record_in_mlflow(self, tracking: TrackingTarget) -> str | None:
        """A run of its own in the retrain experiment: who, why and the refused gate's numbers; its id."""
        with Tracker(tracking, RETRAIN_EXPERIMENT, f"manual-promotion-{self.version}") as tracker:
            tracker.set_tags({"kind": "manual_promotion", "decision": "promoted by hand", "version": self.version,
                              "replaced": self.replaced or "", "promoted_by": self.by, "reason": self.reason,
                              "refused_because": " | ".join(self.evidence.get("refused_because") or [])})
            tracker.log_dict(self.as_dict(), "manual_promotion.json")
            return tracker.run_id


def promote_by_hand(registry: ModelRegistry, version: str, reason: str, *, by: str, topics: Taxonomy,
                    expected_champion: str | None | object = ANY) -> ManualPromotion:
    """Serve `version`, a challenger the gate refused, because `by` says so for `reason`. Refused (ConsentError)
    without a reason, for a version the gate did not refuse, or one whose topics are not the current topic list."""
    words = " ".join(str(reason).split())
    if not words:
        raise ConsentError("say why you overrule the gate (a reason is recorded with the promotion)")
    if len(words) > MAX_REASON_CHARS:
        raise ConsentError(f"a reason has at most {MAX_REASON_CHARS} characters, not {len(words):,}")
    champion = registry.champion()
    if champion is not None and champion.version == version:
        raise ConsentError(f"{version} already serves")
    refusal = registry.refusal(version)
    if refusal is None:
        raise ConsentError(f"the gate never refused {version}: only a refused challenger is promoted by hand (an "
                           "earlier champion comes back with `newsloop rollback`)")
    labels = model_labels(registry.get(version))
    if labels != topics.keys:
        raise ConsentError(f"{version} answers {', '.join(labels)}, but the topics are now "
                           f"{', '.join(topics.names)}: it cannot serve them; retrain instead")
    evidence = dict(refusal.get("evidence") or {"refused_because": list(refusal.get("reasons") or [])})
    why = " ".join(evidence.get("refused_because") or []) or "no reason recorded"
    recorded = f"Promoted by hand by {by}: {words} (the gate had refused it: {why})"
    registry.promote(version, reason=recorded, expected_champion=expected_champion, by=by, evidence=evidence)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return ManualPromotion(version, champion.version if champion else None, by, words, at, evidence)
