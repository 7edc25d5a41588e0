"""Networking: a free TCP port for a server that tests or benchmarks launch, and whether a remote host answers."""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit


def free_port(host: str = "127.0.0.1") -> int:
    """A port that nothing listens on right now (another process may still take it before you bind)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def unreachable(url: str, timeout_s: float) -> str | None:
    """Why a TCP connection to `url`'s host and port cannot be made within `timeout_s` (a name that does not resolve,
    a refused or silent port), or None when it can. The whole try, name lookup included, is bounded: it runs in a
    daemon thread that is left behind if it has not answered in time (a lookup has no timeout of its own)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc.strerror or str(exc) or type(exc).__name__)

    thread = threading.Thread(target=connect, name="reachable", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        return f"{host}:{port} did not answer within {timeout_s:g} s"
    return None if outcome[0] is None else f"{host}:{port}: {outcome[0]}"
