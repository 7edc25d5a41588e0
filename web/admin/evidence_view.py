"""Judged by your own articles: the golden set, the queue's traffic share, what the gate's evidence can see, and a
refused challenger promoted on the maintainer's word (`newsloop promote`, run as a job like a rollback)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gradio as gr

from core.registry.versions import RegistryEvent
from feedback.errors import FeedbackError
from web.admin.actions import AdminActions
from web.admin.guard import NO_STORE, admin_only
from web.server.events import PRIVATE

PROMOTE_WAIT_S = 120.0  # a promotion by hand writes two small records and MLflow's: seconds, not minutes


def golden_line(summary: Any) -> str:
    """The golden set now, in one line (`feedback.evaluation.golden.GoldenSummary`)."""
    if not summary.total:
        return ("**Golden set:** none yet. Import a file of your own labelled articles (a `label` and a `text` "
                "column): they judge every new model and are never trained on.")
    topics = ", ".join(f"{name} {n:,}" for name, n in summary.by_topic.items())
    return (f"**Golden set:** {summary.total:,} articles ({topics}); last imported from {summary.last_source} by "
            f"{summary.last_added_by}, {summary.last_added_at[:16].replace('T', ' ')} UTC.")


def refusal_words(event: RegistryEvent) -> str:
    """What the gate said of a refused challenger: the numbers a maintainer reads before overruling it."""
    evidence = event.get("evidence") or {}
    reasons = evidence.get("refused_because") or event.get("reasons") or []
    lines = [f"The gate refused **{event.get('version')}** ({str(event.get('at', ''))[:16].replace('T', ' ')} UTC) "
             f"against **{evidence.get('judged_against', 'the champion then')}**:"]
    lines += [f"- {reason}" for reason in reasons]
    if evidence.get("power"):
        lines.append(f"- {evidence['power']}")
    return "\n".join(lines)


class EvidencePanel:
    """The panel's handlers, each wrapped in `admin_only`."""

    def __init__(self, admin: AdminActions) -> None:
        self.admin = admin

    def refused(self) -> RegistryEvent | None:
        """The last refused challenger, while it is the registry's latest judged version and not serving."""
        registry = self.admin.registry
        latest = registry.read_record().get("challenger")
        champion = registry.champion()
        if not latest or (champion is not None and champion.version == latest):
            return None
        return registry.refusal(latest)

    @admin_only(lambda _: (gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()))
    def load(self, request: gr.Request, profile: gr.OAuthProfile | None = None) -> tuple[Any, ...]:
        """The evidence line, the golden set, the traffic share and the refused challenger, if any."""
        store = self.admin.store
        if store is None:
            return NO_STORE, "", gr.skip(), "", gr.update(visible=False)
        from feedback.training.readiness import readiness  # here: only this panel and the preview need it

        ready = readiness(store, self.admin.trust, self.admin.retrain, self.admin.promotion, self.admin.jobs.last_run())
        share = store.traffic_share.maintained()
        refused = self.refused()
        return (f"**Judged by:** {ready.evidence.words()}", golden_line(store.golden.summary()),
                share if share is not None else self.admin.queue_traffic_share,
                refusal_words(refused) if refused else "No refused challenger waits: the last one judged serves, or "
                "none was refused.", gr.update(visible=refused is not None))

    @admin_only()
    def import_golden(self, file: str | None, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        if self.admin.store is None or not file:
            return "Choose a CSV or JSONL file."
        by = self.admin.signed_in_as(request, profile)
        try:
            report = self.admin.store.golden.import_file(Path(file), by=by)
        except FeedbackError as exc:
            return f"Nothing imported: {exc}"
        return (f"Golden set: {report.added:,} added, {report.relabelled:,} relabelled, {report.unchanged:,} unchanged "
                f"({report.total:,} in all). They judge every new model and are never trained on.")

    @admin_only()
    def set_share(self, share: float, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        if self.admin.store is None:
            return NO_STORE
        try:
            self.admin.store.traffic_share.set(float(share), self.admin.signed_in_as(request, profile))
        except (FeedbackError, TypeError, ValueError) as exc:
            return f"Not saved: {exc}"
        return (f"Saved: {float(share):.0%} of queue turns now serve the traffic set, whose answers judge new models "
                "(pool articles already drawn keep their place).")

    @admin_only()
    def promote(self, reason: str, request: gr.Request, profile: gr.OAuthProfile | None = None) -> str:
        """Run `newsloop promote VERSION --reason ... --by ... --expect CHAMPION` (compare-and-swap: only over the
        champion the maintainer saw)."""
        refused = self.refused()
        if refused is None:
            return "There is no refused challenger to promote."
        if not " ".join(str(reason or "").split()):
            return "Say why you overrule the gate: the reason is recorded with the promotion."
        champion = self.admin.registry.champion()
        args = ["promote", str(refused.get("version")), "--reason", str(reason),
                "--by", self.admin.signed_in_as(request, profile)]
        started = self.admin.jobs.start(*args, *(["--expect", champion.version] if champion else []))
        if not started.startswith("Started"):
            return started
        code = self.admin.jobs.wait(PROMOTE_WAIT_S)
        now = self.admin.registry.champion()
        if code == 0 and now is not None and now.version == refused.get("version"):
            return (f"Promoted by hand: **{now.version}** serves now. Your reason and the gate's numbers are in the "
                    "run history; **Roll back** undoes it.")
        tail = self.admin.jobs.status().log_tail.strip().splitlines()[-1:] or ["no output"]
        return f"Not promoted: {tail[0]}" if code is not None else "The promotion is still running…"


def build_evidence(admin: AdminActions) -> tuple[Callable[[Any], Any], Any]:
    """The panel. Returns `reload(event)`, which fills it after `event`, and the promote event (which changes the
    champion: the overview follows it)."""
    panel = EvidencePanel(admin)
    with gr.Column(elem_id="evidence-panel"):
        gr.Markdown("## Judged by your own articles")
        evidence = gr.Markdown(elem_id="evidence-words")
        golden = gr.Markdown(elem_id="golden-status")
        with gr.Row():
            golden_file = gr.UploadButton("Import a golden set (CSV or JSONL: label, text)",
                                          file_types=[".csv", ".jsonl"], elem_id="golden-upload")
            golden_msg = gr.Markdown(elem_id="golden-msg", elem_classes=["live"])
        with gr.Row():
            share = gr.Slider(0.0, 0.9, step=0.05, label="Share of queue turns that serve the traffic set",
                              info="Its answers judge new models and never train them: more turns, evidence sooner.",
                              elem_id="traffic-share")
            share_btn = gr.Button("Save the traffic share", elem_id="traffic-share-save")
        share_msg = gr.Markdown(elem_id="traffic-share-msg", elem_classes=["live"])
        refused = gr.Markdown(elem_id="refused-challenger")
        with gr.Column(visible=False, elem_id="promote-by-hand") as by_hand:
            reason = gr.Textbox(label="Why you overrule the gate (recorded with the promotion)", max_length=500,
                                elem_id="promote-reason")
            promote_btn = gr.Button("Promote it anyway", variant="stop", elem_id="promote-btn")
        promote_msg = gr.Markdown(elem_id="promote-msg", elem_classes=["live"])
    outputs = [evidence, golden, share, refused, by_hand]

    def reload(event: Any) -> Any:
        return event.then(panel.load, outputs=outputs, **PRIVATE)

    reload(golden_file.upload(panel.import_golden, inputs=golden_file, outputs=golden_msg, **PRIVATE))
    reload(share_btn.click(panel.set_share, inputs=share, outputs=share_msg, **PRIVATE))
    promoted = reload(promote_btn.click(panel.promote, inputs=reason, outputs=promote_msg, **PRIVATE))
    return reload, promoted
