"""Shared fixtures: a tiny trained champion in a temporary NEWSLOOP_HOME, built once per session."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.models import build_tiny_champion
from testkit.pg_cluster import Cluster, StoreFactory, find_pg_bin, throwaway_cluster

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


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL server for the whole run; skips when Debian's postgresql is not installed."""
    if find_pg_bin() is None:
        pytest.skip("PostgreSQL not installed (no pg_ctl; .ci/run installs it): PostgreSQL backend not tested")
    with throwaway_cluster() as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def make_store(request: pytest.FixtureRequest) -> Iterator[StoreFactory]:
    """Builds FeedbackStores on the backend under test: the store tests run once per backend."""
    cluster = request.getfixturevalue("pg_cluster") if request.param == "postgresql" else None
    factory = StoreFactory(cluster)
    yield factory
    factory.close_all()
