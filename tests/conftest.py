"""Shared fixtures: a tiny trained champion in a temporary NEWSLOOP_HOME, built once per session."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT, Settings, load_settings

SHARED_AG_NEWS = Path(os.environ.get("NEWSLOOP_TEST_AG_NEWS", PROJECT_ROOT.parent / "shared" / "data" / "ag_news"))

# Tests never reach a hub: an accidental download fails at once instead of hanging.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def tiny_settings(home: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {"home": home, "data": "seed", "max_length": 64, "bootstrap_max_minutes": 0.0}
    return load_settings(**(values | overrides))


def build_tiny_champion(home: Path, seed: int = 0, track: bool = False, **overrides: object) -> Settings:
    """Train a 2-layer random BERT on the seed set for a few steps and make it champion (seconds)."""
    from transformers import AutoTokenizer

    from retrain.model import resolve_base_model, tiny_model
    from retrain.pipeline import bootstrap

    settings = tiny_settings(home, **overrides)
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    bootstrap(settings, model_and_tokenizer=(tiny_model(seed=seed), tokenizer), track=track)
    return settings


@pytest.fixture(scope="session")
def tiny_champion_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("tiny_home")
    build_tiny_champion(home)
    return home


@pytest.fixture
def tiny_home_copy(tiny_champion_home: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny home, for tests that change the registry."""
    import shutil

    dest = tmp_path / "home"
    shutil.copytree(tiny_champion_home, dest)
    return dest


@contextlib.contextmanager
def launched_app(settings: Settings, store: object = None, service: object = None) -> Iterator[tuple[str, object]]:
    """The real app on a free loopback port, for tests that drive it like a user; yields (url, service)."""
    from app import build_app
    from core.registry import ModelRegistry
    from core.serving import ChampionService

    service = service or ChampionService(ModelRegistry(settings.models_dir))
    demo = build_app(service, settings, store)  # type: ignore[arg-type]
    demo.queue(default_concurrency_limit=4)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/", service
    finally:
        demo.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
