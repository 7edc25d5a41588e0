"""Loopback networking: a free TCP port for a server that tests or benchmarks launch."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port that nothing listens on right now (another process may still take it before you bind)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
