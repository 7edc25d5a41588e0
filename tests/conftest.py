"""Shared fixtures: a tiny trained champion in a temporary NEWSLOOP_HOME, built once per session."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import build_tiny_champion

# Tests never reach a hub: an accidental download fails at once instead of hanging.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="session")
def tiny_champion_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("tiny_home")
    build_tiny_champion(home)
    return home


@pytest.fixture
def tiny_home_copy(tiny_champion_home: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny home, for tests that change the registry."""
    dest = tmp_path / "home"
    shutil.copytree(tiny_champion_home, dest)
    return dest
