"""NewsLoop's process wiring: read settings, serve the champion, open the feedback store, launch the page.

The page (`web/`) is built around objects it is given (a classifier, a feedback store, typed policies); it
does not load models or read settings itself. `main()` wires the real ones and bootstraps a first champion
when there is none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import subprocess
import sys
import threading
import time
from typing import Any

from fastapi import APIRouter, FastAPI

from core.host.cpu_share import BESIDE_SERVING_ENV
from core.registry.mlflow_champion import alias_version, champion_source, is_tracking_server, register_starter
from core.registry.starter import install_starter
from core.registry.versions import ModelRegistry
from core.settings.config import ConfigError, Settings, ensure_home, load_settings
from core.storage.locks import LockBusy, file_lock
from core.storage.snapshot_schedule import SnapshotSchedule, restore_if_fresh
from feedback.shared_state import (
    Busy,
    SharedAdminSessions,
    SharedMap,
    SharedRateLimiter,
    database_lock,
    shared_failure_throttle,
)
from feedback.store import FeedbackStore
from web.admin.actions import AdminActions
from web.admin.jobs import RetrainJobs
from web.admin.routes import admin_router
from web.admin.sessions import TICKET_TTL_S
from web.page.actions import Classifier, NewsLoopActions, PageLimits
from web.page.tabs import build_page
from web.server.api import build_api
from web.server.asgi import ServerOptions, build_server, serve
from web.server.identity import IdentityService, ProxyPolicy
from web.server.origin_guard import OriginPolicy

log = logging.getLogger("newsloop.app")


def page_limits(settings: Settings) -> PageLimits:
    """What the page accepts from one client, cut from the settings."""
    return PageLimits(
        max_input_chars=settings.max_input_chars,
        classify_per_minute=settings.classify_per_minute,
        queue_per_minute=settings.queue_per_minute,
        session_capacity=settings.session_capacity,
        session_memory_bytes=int(settings.session_memory_mb * 1024 * 1024),
    )


def identity_secret(settings: Settings) -> bytes:
    """The key that signs browser ids: the setting, else a random one kept (0600) in home."""
    if settings.secret_key is not None and settings.secret_key.get_secret_value():
        return settings.secret_key.get_secret_value().encode()
    path = settings.paths.secret_key
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    except FileExistsError:
        pass
    return path.read_text().strip().encode()


def identity_service(settings: Settings) -> IdentityService:
    proxy = ProxyPolicy(hops=settings.trusted_proxy_hops, addresses=settings.proxy_address_list)
    return IdentityService(identity_secret(settings), proxy, secure_cookie=settings.on_space)


def _users(settings: Settings) -> list[tuple[str, str]] | None:
    if settings.users is None or not settings.users.get_secret_value().strip():
        return None
    pairs = [entry.split(":", 1) for entry in settings.users.get_secret_value().split(",") if entry.strip()]
    if any(len(pair) != 2 or not pair[0].strip() or not pair[1] for pair in pairs):
        raise ConfigError("NEWSLOOP_USERS must be 'name:password' entries separated by commas")
    return [(name.strip(), password) for name, password in pairs]


def shared_web_state(settings: Settings, store: FeedbackStore | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """With a shared database, the state replicas must agree on: the page's rate limiters and queue items,
    and admin sessions, sign-in failures and tickets (keyword arguments of NewsLoopActions and AdminActions);
    else none, in memory."""
    if not settings.database_url or store is None:
        return {}, {}
    db = store.database
    page = {
        "classify_limit": SharedRateLimiter(db, "classify", settings.classify_per_minute, 60.0),
        "queue_limit": SharedRateLimiter(db, "queue", settings.queue_per_minute, 60.0),
        "queue_items": SharedMap(db, "queue_item"),
    }
    admin = {
        "sessions": SharedAdminSessions(db, settings.admin_session_minutes * 60.0),
        "throttle": shared_failure_throttle(db),
        "tickets": SharedMap(db, "admin_ticket", ttl_s=TICKET_TTL_S),
    }
    return page, admin


def build_app(classifier: Classifier, settings: Settings, store: FeedbackStore | None = None) -> FastAPI:
    """The server around `classifier` and `store`: page, REST API, identities and limits cut from `settings`."""
    identities = identity_service(settings)
    page_state, admin_state = shared_web_state(settings, store)
    actions = NewsLoopActions(
        classifier, store, limits=page_limits(settings), queue=settings.queue_policy(), identities=identities, **page_state
    )
    admin = None
    if settings.admin_enabled:
        admin = AdminActions(
            store,
            password=settings.admin_password,
            registry=ModelRegistry(settings.paths.models_dir),
            jobs=RetrainJobs(settings.paths),
            identities=identities,
            admins=settings.admin_list,
            session_minutes=settings.admin_session_minutes,
            trust=settings.trust_policy(),
            retrain=settings.retrain_policy(),
            promotion=settings.gate_config(),
            hub_dataset=settings.hub_dataset,
            hub_token=settings.hub_token,
            export_dir=settings.home / "exports",  # under home: never served by Gradio (blocked_paths)
            **admin_state,
        )
    demo = build_page(actions, admin, hf_sign_in=settings.hf_sign_in)
    # api_open=False: every event goes through the queue (its concurrency and size limits); no direct POST.
    demo.queue(api_open=False, default_concurrency_limit=8, max_size=256)
    options = ServerOptions(
        max_upload_bytes=int(settings.max_upload_mb * 1024 * 1024),
        # State (database, models, MLflow store, the identity key) must never be downloadable.
        blocked_paths=(str(settings.home),),
        auth=_users(settings),
        session_capacity=settings.session_capacity,
        events_per_address=settings.events_per_address,
        new_sessions_per_minute=settings.new_sessions_per_minute,
        new_sessions_per_second=settings.new_sessions_per_second,
        routers=[*api_routers(classifier, actions, identities, settings.max_batch_texts), *([admin_router(admin)] if admin else [])],
        origins=OriginPolicy.from_urls(settings.public_url_list, settings.space_host),
        early_refusals=[(actions.classify, actions.classify_refusal),
                        *([(admin.login, admin.sign_in_refusal)] if admin else [])],
    )
    return build_server(demo, identities, options, is_admin=admin.is_admin if admin else lambda _: False)


def api_routers(classifier: Classifier, actions: NewsLoopActions, identities: IdentityService, max_texts: int) -> list[APIRouter]:
    """The REST API beside the page (web.server.api), sharing the page's limits, rate limiter and identity rules."""
    return [build_api(classifier, actions.limits, actions.classify_limit, identities.address_of, max_texts=max_texts)]


def ensure_champion(settings: Settings) -> None:
    """Serve the shipped starter when there is no champion; train one (in a child process, so this serving
    process never imports torch) only when no starter fits the labels."""
    registry = ModelRegistry(settings.paths.models_dir)
    if registry.champion() is not None or install_starter(registry) is not None:
        return
    log.info("no champion model and no starter for these labels: training one now (progress below)")
    subprocess.run([sys.executable, "-m", "retrain", "bootstrap"], check=True)


def register_starter_on_server(settings: Settings, wait_s: float = 300.0) -> None:
    """A fresh tracking server has no @champion: the first replica to find none registers the shipped starter,
    under the retrain lock (this home's, and the shared database's advisory lock, which excludes every machine).
    A replica that finds the lock held waits (up to `wait_s`) for the holder to register it, then serves it."""
    if not is_tracking_server(settings.tracking_uri) or alias_version(settings.tracking_uri) is not None:
        return
    shared = database_lock(settings.database_url) if settings.database_url else contextlib.nullcontext()
    try:
        with file_lock(settings.paths.retrain_lock, blocking=False), shared:
            register_starter(settings.tracking_uri)
    except (LockBusy, Busy):
        log.info("the retrain lock is held elsewhere: waiting for @champion to be registered")
        deadline = time.monotonic() + wait_s
        while alias_version(settings.tracking_uri) is None and time.monotonic() < deadline:
            time.sleep(1.0)


def start_snapshots(settings: Settings) -> SnapshotSchedule | None:
    """Restore a wiped host from the durable directory, then keep snapshotting to it (see core.storage.durable)."""
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
            # `watch --once` counts new trusted answers itself (feedback.readiness); the retrain lock prevents overlap.
            subprocess.run([sys.executable, "-m", "retrain", "watch", "--once"], check=False,
                           env=os.environ | BESIDE_SERVING_ENV)  # it shares the app's cores (core.host.cpu_share)

    thread = threading.Thread(target=loop, name="retrain-schedule", daemon=True)
    thread.start()
    return thread


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings()
    except ConfigError as exc:  # e.g. a weak admin password on a public host: refuse to start, saying why
        sys.exit(f"NewsLoop will not start: {exc}")
    ensure_home(settings)
    start_snapshots(settings)
    ensure_champion(settings)
    register_starter_on_server(settings)
    from core.serving.classifier import (
        ChampionService,  # here, so `import app` (tests, tools) does not load ONNX Runtime
    )

    service = ChampionService(
        champion_source(settings.tracking_uri, settings.paths.models_dir),
        threads=settings.onnx_threads,
        check_interval_s=settings.reload_interval_s,
        max_batch=settings.max_batch,
        batch_wait_ms=settings.batch_wait_ms,
    )
    service.refresh()
    service.start_watching()
    store = FeedbackStore.from_settings(settings)
    start_schedule(settings)
    serve(build_app(service, settings, store), settings.host, settings.port)


if __name__ == "__main__":
    main()
