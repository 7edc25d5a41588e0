"""The real server (page, REST API, browser ids, upload guard) in this process, on a free loopback port."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from core.host.net import free_port
from core.settings.config import Settings
from core.settings.policies import StoreLimits
from feedback.store import FeedbackStore
from testkit.models import tiny_settings


@contextlib.contextmanager
def launched_app(settings: Settings, store: object = None, service: object = None) -> Iterator[tuple[str, object]]:
    """The real server (page, REST API, browser ids, upload guard) on a free loopback port, as `app.main`
    serves it; yields (url, service)."""
    from app import build_app
    from core.registry.versions import ModelRegistry
    from core.serving.classifier import ChampionService
    from web.server.asgi import ServerThread

    service = service or ChampionService(ModelRegistry(settings.paths.models_dir))
    port = free_port()
    server = ServerThread(build_app(service, settings, store), "127.0.0.1", port)  # type: ignore[arg-type]
    server.start()
    try:
        yield f"http://127.0.0.1:{port}/", service
    finally:
        server.stop()


def open_limits_store(path: Path, pool: list[str] | None = None) -> FeedbackStore:
    """A feedback store whose answer limits never refuse a test's fast clicks, with `pool` to label."""
    store = FeedbackStore(path, StoreLimits(writes_per_minute=10_000, address_writes_per_minute=10_000))
    if pool:
        store.pool.add(pool, source="test")
    return store


def open_limits_settings(home: Path, **overrides: object) -> Settings:
    """The tiny model's settings with page limits a browser test's fast clicks never reach."""
    return tiny_settings(home, classify_per_minute=10_000, queue_per_minute=10_000, **overrides)
