"""A throwaway PostgreSQL cluster (Debian's initdb/pg_ctl in a temporary directory) for tests and benches."""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from core.host.net import free_port


def find_pg_bin() -> Path | None:
    """The directory holding initdb and pg_ctl (on PATH, or Debian's /usr/lib/postgresql/*/bin), or None."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class Cluster:
    """One PostgreSQL server on a free loopback port, trust authentication, fsync off (tests only)."""

    def __init__(self, bin_dir: Path, root: Path, port: int) -> None:
        self.bin_dir, self.root, self.port = bin_dir, root, port
        self._names = itertools.count(1)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database; returns its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def _as_owner(argv: list[str]) -> list[str]:
    # initdb refuses to run as root; CI containers run as root, so run the server as Debian's postgres user.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


@contextlib.contextmanager
def throwaway_cluster(max_connections: int = 300, *, durable: bool = False) -> Iterator[Cluster]:
    """Start a cluster in a temporary directory; stop it and delete the directory afterwards.

    Tests run without fsync; `durable=True` keeps PostgreSQL's defaults (fsync on every commit), for benches.
    """
    bin_dir = find_pg_bin()
    if bin_dir is None:
        raise FileNotFoundError("pg_ctl not found (apt-get install -y postgresql)")
    root = Path(tempfile.mkdtemp(prefix="newsloop-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    data, port = root / "data", free_port()
    subprocess.run(
        _as_owner([str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-locale",
                   "-E", "UTF8", "--no-sync"]),
        check=True, capture_output=True,
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections={max_connections}"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    subprocess.run(
        _as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"]),
        check=True, capture_output=True,
    )
    try:
        yield Cluster(bin_dir, root, port)
    finally:
        subprocess.run(_as_owner([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


class StoreFactory:
    """`FeedbackStore(path, ...)` on SQLite, or on a fresh PostgreSQL database per distinct path."""

    def __init__(self, cluster: Cluster | None) -> None:
        self.cluster = cluster
        self.backend = "postgresql" if cluster else "sqlite"
        self._urls: dict[Path, str] = {}
        self._stores: list[object] = []

    def location(self, path: Path) -> Path | str:
        """What to hand FeedbackStore (or a child process) for `path` on this backend."""
        if self.cluster is None:
            return path
        if path not in self._urls:
            self._urls[path] = self.cluster.create_database()
        return self._urls[path]

    def __call__(self, path: Path, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        from feedback.store import FeedbackStore

        store = FeedbackStore(self.location(path), *args, **kwargs)  # type: ignore[arg-type]
        self._stores.append(store)
        return store

    def close_all(self) -> None:
        if self.cluster is not None:  # pools hold server connections; SQLite connections close with their threads
            for store in self._stores:
                store.close()  # type: ignore[attr-defined]
