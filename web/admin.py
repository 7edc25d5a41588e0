"""The maintainer's actions: sign-in, overview, answer review, retrain and rollback, pool import, export."""

from __future__ import annotations

import hmac
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import gradio as gr
from pydantic import SecretStr

from core.labels import LABELS
from core.limits import RateLimiter
from core.registry import ModelRegistry
from feedback.errors import FeedbackError
from feedback.store import FeedbackStore
from web.identity import client_address
from web.jobs import RetrainJobs

log = logging.getLogger("newsloop.app")


class AdminActions:
    """The maintainer's view. Every handler checks the session server-side: hiding the panel is not security."""

    def __init__(
        self,
        store: FeedbackStore | None,
        *,
        password: SecretStr | None,
        registry: ModelRegistry,
        jobs: RetrainJobs,
        trusted_proxy_hops: int = 0,
    ) -> None:
        self.store = store
        self.password = password
        self.registry = registry
        self.jobs = jobs
        self.trusted_proxy_hops = trusted_proxy_hops
        self.sessions: set[str] = set()
        self.login_limit = RateLimiter(5, 300.0)

    @property
    def enabled(self) -> bool:
        return self.password is not None and bool(self.password.get_secret_value())

    def _authorized(self, request: gr.Request | None) -> bool:
        return bool(request is not None and request.session_hash in self.sessions)

    def login(self, password: str, request: gr.Request) -> tuple[str, dict[str, Any]]:
        if not self.enabled:
            return "The admin view is disabled on this server.", gr.update(visible=False)
        wait = self.login_limit.check(client_address(request, self.trusted_proxy_hops))
        if wait:
            return f"Too many attempts: try again in {wait:.0f} s.", gr.update(visible=False)
        expected = self.password.get_secret_value()  # type: ignore[union-attr]
        if not hmac.compare_digest((password or "").encode(), expected.encode()):
            log.warning("admin login refused for %s", client_address(request, self.trusted_proxy_hops))
            return "Wrong password.", gr.update(visible=False)
        self.sessions.add(request.session_hash or "")
        return "Signed in.", gr.update(visible=True)

    def overview(self, request: gr.Request) -> tuple[str, list[list[Any]], list[list[Any]], list[list[Any]], str]:
        """Feedback statistics, suspicious answers, run history, the champion's confusion matrix, retrain progress."""
        if not self._authorized(request):
            return "Sign in first.", [], [], [], ""
        stats = self.store.stats() if self.store else {}
        suspicious = [
            [r["id"], r["annotator"], r["user_label"], r["predicted_label"], r["suspicious_reason"], r["text"][:200]]
            for r in (self.store.answers(status="suspicious", limit=200) if self.store else [])
        ]
        status = self.registry.status()
        history = [
            [e.get("at"), e.get("action"), e.get("version"), e.get("reason") or "; ".join(e.get("reasons", []))]
            for e in reversed(status["events"])
        ]
        meta = status.get("champion_meta") or {}
        matrix = meta.get("validation", {}).get("confusion_matrix") or []
        confusion = [[LABELS[i], *row] for i, row in enumerate(matrix)]
        summary = {
            "champion": status["champion"],
            "previous": status["previous"],
            "champion_validation": {k: v for k, v in meta.get("validation", {}).items() if k != "confusion_matrix"},
            "feedback": stats,
        }
        return json.dumps(summary, indent=2), suspicious, history, confusion, self.jobs.progress()

    def review(self, answer_id: float | None, verdict: str, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        if self.store is None or answer_id is None:
            return "Enter the id of an answer."
        try:
            self.store.set_status(int(answer_id), verdict)
        except FeedbackError as exc:
            return f"Not changed: {exc}"
        return f"Answer {int(answer_id)} {verdict}."

    def launch_retrain(self, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        return self.jobs.start("run")

    def rollback(self, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        return self.jobs.start("rollback", "--reason", "admin view")

    def import_pool(self, file: str | None, checks: bool, request: gr.Request) -> str:
        if not self._authorized(request):
            return "Sign in first."
        if self.store is None or not file:
            return "Choose a CSV or JSONL file."
        try:
            report = self.store.import_pool(Path(file), source=Path(file).name, checks=bool(checks))
        except FeedbackError as exc:
            return f"Nothing imported: {exc}"
        what = "known-answer check(s)" if checks else "article(s)"
        return f"Imported {report.added} {what} ({report.duplicates} already in the pool)."

    def export(self, fmt: str, request: gr.Request) -> str | None:
        if not self._authorized(request) or self.store is None:
            return None
        fd, path = tempfile.mkstemp(prefix="newsloop-feedback-", suffix=f".{fmt}")
        os.close(fd)
        self.store.export(Path(path), fmt)
        return path
