"""Real processes for tests and benches: an MLflow server on PostgreSQL, app replicas, the retrain CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from core.host.net import free_port
from core.settings.config import PROJECT_ROOT
from testkit.models import MANY_PAGES_ENV

# The tiny test model's settings (testkit.models.tiny_settings) and a retrain recipe under which it learns the
# seed set in seconds (as in tests/e2e/test_retrain_run.py), so a challenger clearly passes the gate.
TINY_ENV = {
    "NEWSLOOP_DATA": "seed", "NEWSLOOP_MAX_LENGTH": "64", "NEWSLOOP_BOOTSTRAP_MAX_MINUTES": "0",
    "NEWSLOOP_RETRAIN_EPOCHS": "12", "NEWSLOOP_RETRAIN_LR_ENCODER": "3e-3", "NEWSLOOP_RETRAIN_LR_HEAD": "3e-3",
    "NEWSLOOP_RETRAIN_BASE_ROWS": "0", "NEWSLOOP_RETRAIN_MAX_MINUTES": "0",
    # 57 seed validation rows cannot rule out a 1- or 3-point loss (tests/e2e/test_retrain_run.py: LEARNING).
    "NEWSLOOP_GATE_BASE_MARGIN": "0.2", "NEWSLOOP_GATE_RECALL_MARGIN": "0.5",
    # The encoder alone, trained for its epochs (testkit.models.tiny_settings says why).
    "NEWSLOOP_LEXICAL": "false", "NEWSLOOP_MIN_STEPS": "0", "NEWSLOOP_MAX_TOKENS": "0",
    "NEWSLOOP_CLASSIFY_PER_MINUTE": "100000", "NEWSLOOP_FEEDBACK_PER_MINUTE": "100000",
    "NEWSLOOP_ADDRESS_FEEDBACK_PER_MINUTE": "100000",
    **MANY_PAGES_ENV,  # every simulated browser comes from loopback
    "NEWSLOOP_RELOAD_INTERVAL_S": "1", "NEWSLOOP_ONNX_THREADS": "1", "NEWSLOOP_TORCH_THREADS": "2",
    "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
}


def process_env(home: Path, database_url: str, tracking_uri: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "MLFLOW_"))}
    env |= TINY_ENV | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_DATABASE_URL": database_url,
        "NEWSLOOP_MLFLOW_TRACKING_URI": tracking_uri, "PYTHONPATH": str(PROJECT_ROOT),
    }
    return env | extra


def get_json(url: str, timeout: float = 5.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def wait_until(check, timeout: float, what: str, proc: subprocess.Popen | None = None):  # type: ignore[no-untyped-def]
    """Poll `check()` until it returns something truthy; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode}")
        try:
            result = check()
            if result:
                return result
            last = result
        except (OSError, urllib.error.URLError, ValueError) as exc:
            last = exc
        time.sleep(0.25)
    raise AssertionError(f"{what} within {timeout:.0f} s (last: {last})")


def start_mlflow(backend_url: str, artifacts: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`mlflow server` on a PostgreSQL backend store, serving artifacts from a local directory."""
    port = free_port()
    sqlalchemy_url = backend_url.replace("postgresql://", "postgresql+psycopg://", 1)  # psycopg 3, not psycopg2
    proc = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", sqlalchemy_url,
         "--artifacts-destination", str(artifacts), "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    wait_until(lambda: urllib.request.urlopen(f"{uri}/health", timeout=2).status == 200, 120, "mlflow server up", proc)
    return proc, uri


def start_replica(env: dict[str, str], log: Path, port: int | None = None) -> tuple[subprocess.Popen, str]:
    """One app replica (`python app.py`) on its own port; returns once /healthz answers."""
    port = port or free_port()
    env = env | {"NEWSLOOP_PORT": str(port), "NEWSLOOP_HOST": "127.0.0.1"}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env,
                            stdout=log.open("a"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    wait_until(lambda: get_json(f"{url}healthz")["status"] == "ok", 120, f"replica on port {port} up", proc)
    return proc, url


def served_version(url: str) -> str | None:
    try:
        return get_json(f"{url}readyz").get("model_version")
    except (OSError, urllib.error.URLError, ValueError):
        return None
