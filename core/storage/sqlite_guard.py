"""Keep this process's SQLite locks: refuse opening a live database's files other than through SQLite.

SQLite's locks are POSIX record locks, and those belong to the process: when the process closes *any*
descriptor of the database file, the kernel drops every lock the process holds on it, the ones its SQLite
connections hold included. (SQLite's own connections in one process share one lock table and put such closes
off; nothing else does.) Another process that closes its connection then finds no other holder, checkpoints,
and deletes the -wal and -shm files from under this one: every later query here fails with "disk I/O error"
or "database disk image is malformed". Hashing, copying or serving the file is enough to cause that.

`watch(path)` makes an audit hook (PEP 578; installed once per process, on first use) refuse every Python
open of the database and its -wal, -shm and -journal files, by any path (`..`, symlinks, /proc/self/fd),
for as long as the returned `Watch` is alive. SQLite itself does not go through Python's file functions,
so it is never refused. Copies go through SQLite's backup API on a connection (`feedback.database.db.Database.backup`,
`core.storage.durable`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import Counter
from pathlib import Path

SUFFIXES = ("", "-wal", "-shm", "-journal")
# The audit event of every Python open (built-in open, io.open, os.open, pathlib): closing what it opened is
# what drops the locks. Deleting or renaming a file opens nothing, so those are left alone.
_OPEN = "open"
_MAGIC_PREFIXES = ("/proc/", "/dev/")  # /proc/self/fd/N, /dev/fd/N: links to an open file, by any name

_lock = threading.Lock()
_counts: Counter[str] = Counter()  # real path -> live watches
# Read by the hook without the lock: each change replaces these objects whole.
_live: frozenset[str] = frozenset()
_names: frozenset[str] = frozenset()
_installed = False


class LiveDatabaseFile(PermissionError):
    """An operation on a live SQLite database's file from outside SQLite, refused."""


class Watch:
    """A live database's files, guarded until `close()` (or until this object is garbage collected)."""

    def __init__(self, paths: tuple[str, ...]) -> None:
        self._paths: tuple[str, ...] | None = paths

    def close(self) -> None:
        paths, self._paths = self._paths, None
        if paths:
            _change(paths, -1)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the module's globals may be gone already
            self.close()


def live_files(path: Path | str) -> tuple[str, ...]:
    """The real paths of a database's file and the files SQLite keeps beside it."""
    real = os.path.realpath(path)
    return tuple(real + suffix for suffix in SUFFIXES)


def watch(path: Path | str) -> Watch:
    """Refuse, in this process, every operation outside SQLite on the database at `path` (see the module)."""
    global _installed
    paths = live_files(path)
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
    _change(paths, +1)
    return Watch(paths)


def is_live(path: Path | str) -> bool:
    """Whether `path` is one of the files of a database watched in this process."""
    return os.path.realpath(path) in _live


def _change(paths: tuple[str, ...], step: int) -> None:
    global _live, _names
    with _lock:
        for path in paths:
            _counts[path] += step
            if _counts[path] <= 0:
                del _counts[path]
        _live = frozenset(_counts)
        _names = frozenset(os.path.basename(path) for path in _counts)


def _real(path: object) -> str | None:
    """The real path an open names, when it may be a watched file (cheaply: most are not)."""
    if isinstance(path, int) or not isinstance(path, str | bytes | os.PathLike):
        return None  # an open descriptor: wrapping it adds no new description
    try:
        name = os.fsdecode(path)
    except (TypeError, ValueError):
        return None
    if name.rpartition("/")[2] not in _names and not name.startswith(_MAGIC_PREFIXES):
        return None
    return os.path.realpath(name)


def _hook(event: str, args: tuple[object, ...]) -> None:
    if event != _OPEN or not _live or not args:
        return
    real = _real(args[0])
    if real is not None and real in _live:
        raise LiveDatabaseFile(
            f"refused to open {real}: it is a live SQLite database's file, open in this process, and closing it "
            "again would drop this process's locks on it (copy a database with SQLite's backup API)"
        )
