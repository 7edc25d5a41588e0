"""What a fresh visitor's page load costs: NewsLoop as a Space runs it (admin password set, Hugging Face sign-in on)
beside a one-textbox Gradio app, the framework's floor, started together in one run on this machine.

A load is what a browser fetches that the app makes: the page (`/`, its configuration inline) and its theme
(`/theme.css`), as a fresh visitor (no cookies) whose browser accepts compressed responses. The framework's
hashed scripts, styles and fonts are the same for every Gradio app and cached, so they are left out. For each app it
prints the bytes on the wire (headers and body) and the server time per load (request sent to last byte, on
loopback), the median of `--loads` loads taken in turns, and NewsLoop's ratio to the floor. It also counts the
server events a fresh page sends as it opens (the page's load events and what they trigger in turn, from its
configuration): each one goes through Gradio's queue beside the visitors' own requests.

    python -m bench.page_weight
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench import options
from core.host.net import free_port
from core.settings.config import PROJECT_ROOT
from testkit.oauth import space_oauth_env

PATHS = ("/", "/theme.css")
BROWSER_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,*/*;q=0.8",
    "Accept-Encoding": "gzip, deflate, br, zstd",
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) bench.page_weight",
    "X-Forwarded-For": "203.0.113.7",  # what a Space's proxy adds (NewsLoop believes one hop there)
}
ADMIN_PASSWORD = "bench-page-weight-admin-password"


@dataclass(frozen=True)
class Load:
    """One fresh visitor's load: bytes on the wire and seconds from the first request sent to the last byte."""

    bytes: int
    seconds: float


def load_once(url: str) -> Load:
    """Fetch PATHS on a new connection, as a browser with no cookies; the responses are left compressed."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    total, seconds = 0, 0.0
    try:
        for path in PATHS:
            start = time.perf_counter()
            conn.request("GET", path, headers=BROWSER_HEADERS)
            response = conn.getresponse()
            body = response.read()  # http.client never decompresses: these are the bytes sent
            seconds += time.perf_counter() - start
            if response.status != 200:
                raise RuntimeError(f"GET {url.rstrip('/')}{path} answered {response.status}")
            head = f"HTTP/1.1 {response.status} {response.reason}\r\n" + "".join(
                f"{name}: {value}\r\n" for name, value in response.getheaders()) + "\r\n"
            total += len(head.encode()) + len(body)
    finally:
        conn.close()
    return Load(total, seconds)


def load_events(url: str) -> int:
    """Server events a fresh page sends when it opens: its `load` events and every event chained after them."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request("GET", "/config", headers={k: v for k, v in BROWSER_HEADERS.items() if k != "Accept-Encoding"})
        config = json.loads(conn.getresponse().read())
    finally:
        conn.close()
    fired: set[int] = set()
    for dep in config["dependencies"]:  # chained events come after the event they follow
        trigger = dep.get("trigger_after")
        if any(target[1] == "load" for target in dep["targets"]) or (trigger is not None and trigger in fired):
            fired.add(dep["id"])
    return sum(1 for dep in config["dependencies"] if dep["id"] in fired and dep.get("backend_fn"))


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with status {proc.returncode}")
        try:
            load_once(url)
            return
        except (OSError, RuntimeError, http.client.HTTPException):
            time.sleep(0.5)
    raise RuntimeError(f"{url} did not come up within {timeout_s:.0f} s")


@contextmanager
def started(command: list[str], env: dict[str, str], log: Path, port: int) -> Iterator[str]:
    with log.open("wb") as out:
        proc = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_up(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


def newsloop_env(home: Path, port: int) -> dict[str, str]:
    """`python app.py` as a Space runs it: the Space's variables, Hugging Face sign-in, an admin password."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSLOOP_", "SPACE_", "OAUTH_"))}
    return env | space_oauth_env(space_id="bench/page-weight") | {
        "NEWSLOOP_HOME": str(home), "NEWSLOOP_HOST": "127.0.0.1", "NEWSLOOP_PORT": str(port),
        "NEWSLOOP_ADMIN_PASSWORD": ADMIN_PASSWORD, "NEWSLOOP_RETRAIN_INTERVAL_MIN": "0",
        # Every load comes from one address here: room for them all (a crowd's limits are not what is measured).
        "NEWSLOOP_NEW_SESSIONS_PER_MINUTE": "10000", "NEWSLOOP_NEW_SESSIONS_PER_SECOND": "1000",
        "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(PROJECT_ROOT),
    }


def serve_floor(port: int) -> None:
    """The framework's floor: a Gradio app of one textbox, launched as Gradio launches it."""
    import gradio as gr

    with gr.Blocks() as demo:
        gr.Textbox()
    demo.launch(server_name="127.0.0.1", server_port=port, ssr_mode=False, quiet=True)


def measure(urls: dict[str, str], loads: int) -> dict[str, list[Load]]:
    """`loads` loads of each app, taken in turns so both see the same machine; one warm-up load each first."""
    for url in urls.values():
        load_once(url)
    taken: dict[str, list[Load]] = {name: [] for name in urls}
    for _ in range(loads):
        for name, url in urls.items():
            taken[name].append(load_once(url))
    return taken


def table(taken: dict[str, list[Load]], events: dict[str, int], floor: str) -> str:
    medians = {name: (statistics.median(x.bytes for x in runs), statistics.median(x.seconds for x in runs))
               for name, runs in taken.items()}
    floor_bytes, floor_s = medians[floor]
    lines = ["| page | bytes on the wire | server time per load | bytes vs floor | time vs floor | events on opening |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, (size, seconds) in medians.items():
        lines.append(f"| {name} | {size / 1000:.1f} KB | {seconds * 1000:.1f} ms | {size / floor_bytes:.2f}x | "
                     f"{seconds / floor_s:.2f}x | {events[name]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = options.parser(__doc__, prog="python -m bench.page_weight")
    parser.add_argument("--loads", type=int, default=7, help="loads of each app (the median is printed)")
    parser.add_argument("--floor-app", type=int, metavar="PORT", help=argparse.SUPPRESS)  # the child process
    args = parser.parse_args(argv)
    if args.floor_app:
        serve_floor(args.floor_app)
        return 0
    floor_name, app_name = "a one-textbox Gradio app (the floor)", "NewsLoop at / as a Space runs it (admin password set)"
    with tempfile.TemporaryDirectory(prefix="page_weight_") as tmp:
        work = Path(tmp)
        floor_port, app_port = free_port(), free_port()
        floor_env = {k: v for k, v in os.environ.items() if not k.startswith("GRADIO_")} | {
            "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(PROJECT_ROOT)}
        floor_cmd = [sys.executable, "-m", "bench.page_weight", "--floor-app", str(floor_port)]
        with started(floor_cmd, floor_env, work / "floor.log", floor_port) as floor_url, \
                started([sys.executable, "app.py"], newsloop_env(work / "home", app_port), work / "app.log",
                        app_port) as app_url:
            urls = {floor_name: floor_url, app_name: app_url}
            taken = measure(urls, args.loads)
            load = os.getloadavg()[0]
            events = {name: load_events(url) for name, url in urls.items()}
    print(f"Page weight per fresh visitor's load ({' and '.join(PATHS)}, compressed where the server compresses), "
          f"median of {args.loads}:\n")
    print(table(taken, events, floor_name))
    # The servers' own CPU counts in the load average too: a figure well above the loads' one client says others ran.
    print(f"\nMachine: {os.cpu_count()} cores, load average {load:.2f} over the last minute at the end of the run.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
