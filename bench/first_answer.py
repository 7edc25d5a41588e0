"""Time from `python app.py` on an empty home to its first classification, as a new host would see it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import options
from core.host.net import free_port
from core.settings.config import PROJECT_ROOT

TARGET_S = 60.0
HEADLINE = "Oil prices climb as OPEC signals deeper output cuts."


def first_answer_seconds(home: Path, timeout_s: float, log: Path) -> tuple[float, str, str]:
    """Start the app on an empty `home`; return (seconds to the first answer, its label, the model's kind)."""
    from gradio_client import Client

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSLOOP_")}
    env |= {"NEWSLOOP_HOME": str(home), "NEWSLOOP_PORT": str(port), "GRADIO_ANALYTICS_ENABLED": "False"}
    started = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=PROJECT_ROOT, env=env, stdout=out, stderr=out)
    try:
        while time.perf_counter() - started < timeout_s:
            if proc.poll() is not None:
                raise RuntimeError(f"the app exited with {proc.returncode}; see {log}")
            try:
                label = Client(f"http://127.0.0.1:{port}/", verbose=False).predict(HEADLINE, api_name="/classify")[0]
            except Exception:
                time.sleep(0.2)
                continue
            seconds = time.perf_counter() - started
            from core.registry.versions import ModelRegistry

            champion = ModelRegistry(home / "models").champion()
            return seconds, str(label["label"]), str(champion.meta.get("kind") if champion else "none")
        raise TimeoutError(f"no answer within {timeout_s:.0f} s; see {log}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def main(argv: Sequence[str] | None = None) -> int:
    parser = options.parser(__doc__)
    parser.add_argument("--timeout", type=float, default=1800.0, help="give up after this many seconds")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="newsloop-first-answer-") as tmp:
        seconds, label, kind = first_answer_seconds(Path(tmp) / "home", args.timeout, Path(tmp) / "app.log")
    verdict = "met" if seconds <= TARGET_S else "MISSED"
    print(f"first answer: {seconds:.1f} s after `python app.py` on an empty home ({kind} model, said {label!r})")
    print(f"SUMMARY first answer {seconds:.1f} s (target <= {TARGET_S:.0f} s: {verdict}); model kind {kind}")
    return 0 if seconds <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
