"""NewsLoop's process wiring: read settings, serve the champion, open the feedback store, launch the page.

The page (`web/`) is built around objects it is given (a classifier, a feedback store, typed policies); it
does not load models or read settings itself. `main()` wires the real ones and bootstraps a first champion
when there is none.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import gradio as gr

from core.config import Settings, ensure_home, load_settings
from core.registry import ModelRegistry
from core.snapshot_schedule import SnapshotSchedule, restore_if_fresh
from core.starter import install_starter
from feedback.store import FeedbackStore
from web.actions import Classifier, NewsLoopActions, PageLimits
from web.admin import AdminActions
from web.jobs import RetrainJobs
from web.page import build_page

log = logging.getLogger("newsloop.app")


def page_limits(settings: Settings) -> PageLimits:
    """What the page accepts from one client, cut from the settings."""
    return PageLimits(
        max_input_chars=settings.max_input_chars,
        classify_per_minute=settings.classify_per_minute,
        trusted_proxy_hops=settings.trusted_proxy_hops,
    )


def build_app(classifier: Classifier, settings: Settings, store: FeedbackStore | None = None) -> gr.Blocks:
    """The page around `classifier` and `store`, with the small policies it needs cut from `settings` here."""
    actions = NewsLoopActions(classifier, store, limits=page_limits(settings), queue=settings.queue_policy())
    admin = None
    if settings.admin_enabled:
        admin = AdminActions(
            store,
            password=settings.admin_password,
            registry=ModelRegistry(settings.paths.models_dir),
            jobs=RetrainJobs(settings.paths),
            trusted_proxy_hops=settings.trusted_proxy_hops,
        )
    return build_page(actions, admin)


def ensure_champion(settings: Settings) -> None:
    """Serve the shipped starter when there is no champion; train one (in a child process, so this serving
    process never imports torch) only when no starter fits the labels."""
    registry = ModelRegistry(settings.paths.models_dir)
    if registry.champion() is not None or install_starter(registry) is not None:
        return
    log.info("no champion model and no starter for these labels: training one now (progress below)")
    subprocess.run([sys.executable, "-m", "retrain", "bootstrap"], check=True)


def start_snapshots(settings: Settings) -> SnapshotSchedule | None:
    """Restore a wiped host from the durable directory, then keep snapshotting to it (see core.durable)."""
    if settings.durable_dir is None:
        return None
    restored = restore_if_fresh(settings.paths, settings.durable_dir)
    if restored is not None:
        log.info("restored state from %s", restored)
    schedule = SnapshotSchedule(settings.paths, settings.durable_dir, settings.snapshot_minutes * 60)
    schedule.start()
    schedule.snapshot_on_sigterm()
    return schedule


def start_schedule(settings: Settings) -> threading.Thread | None:
    """In-app retrain schedule: every interval, a child process retrains if enough feedback has arrived."""
    if settings.retrain_interval_min <= 0:
        return None

    def loop() -> None:
        while True:
            time.sleep(settings.retrain_interval_min * 60)
            # `watch --once` checks the count of new answers itself; the retrain lock prevents overlap.
            subprocess.run([sys.executable, "-m", "retrain", "watch", "--once"], check=False)

    thread = threading.Thread(target=loop, name="retrain-schedule", daemon=True)
    thread.start()
    return thread


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    ensure_home(settings)
    start_snapshots(settings)
    ensure_champion(settings)
    from core.serving import ChampionService  # here, so `import app` (tests, tools) does not load ONNX Runtime

    service = ChampionService(
        ModelRegistry(settings.paths.models_dir),
        threads=settings.onnx_threads,
        check_interval_s=settings.reload_interval_s,
        max_batch=settings.max_batch,
        batch_wait_ms=settings.batch_wait_ms,
    )
    service.refresh()
    service.start_watching()
    store = FeedbackStore.from_settings(settings)
    start_schedule(settings)
    demo = build_app(service, settings, store)
    demo.queue(default_concurrency_limit=8, max_size=256)
    # State (database, models, MLflow store) must never be downloadable, whatever Gradio allows by default.
    demo.launch(server_name=settings.host, server_port=settings.port, blocked_paths=[str(settings.home)])


if __name__ == "__main__":
    main()
