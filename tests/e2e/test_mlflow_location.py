"""MLflow's artifacts stay under NEWSLOOP_HOME whatever the current directory: a host keeps home, not ./mlruns."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.models import build_tiny_champion


@pytest.mark.parametrize("named_store", [False, True], ids=["default-store", "store-named-by-the-host"])
def test_a_tracked_bootstrap_from_another_directory_writes_no_mlruns_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named_store: bool
) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("NEWSLOOP_MLFLOW_TRACKING_URI", raising=False)
    if named_store:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'tracking.db'}")
    build_tiny_champion(home, track=True)

    assert list(elsewhere.iterdir()) == []
    logged = [p.name for p in (home / "mlartifacts").rglob("*") if p.is_file()]
    assert "model.onnx" in logged and "meta.json" in logged
