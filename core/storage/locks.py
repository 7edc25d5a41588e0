"""The one inter-process lock: a kernel `flock` on a local file, released by the kernel if its holder dies."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


class LockBusy(RuntimeError):
    """A non-blocking lock attempt found the lock held by another process."""


def is_locked(path: Path) -> bool:
    """Whether another process holds `path`'s lock now. It takes a shared lock for an instant to find out, so
    a holder trying to lock at that very instant would see it busy: ask only when it matters (rarely)."""
    if not path.is_file():
        return False
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@contextlib.contextmanager
def file_lock(path: Path, *, blocking: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing). With `blocking=False`, raise LockBusy if held.

    flock is released by the kernel when the holder dies, so a crash never leaves the lock stuck. It needs a
    local file system: never point it at storage without file locking (a bucket mount, say).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            raise LockBusy(f"{path} is held by another process") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
