"""Versioned model directories under NEWSLOOP_HOME and the record of which one is champion.

Layout::

    models/
      versions/v0001/     one exported model: ONNX file(s), tokenizer, meta.json (never modified)
      staging/<id>/       a model being written; renamed into versions/ only when complete
      registry.json       {"champion": "v0002", "history": ["v0001"], ...}, replaced atomically
      registry.lock       flock held while the record changes

A reader never sees a half-written model: a version directory appears by one rename of a finished
staging directory, and `registry.json` changes by one `os.replace` of a fully written file.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from core.storage.locks import file_lock
from core.storage.paths import META_FILE, REGISTRY_LOCK, REGISTRY_RECORD, STAGING_DIR, VERSIONS_DIR

_VERSION_PREFIX = "v"


class RegistryError(RuntimeError):
    """The registry cannot do what was asked (no champion, nothing to roll back to, bad version)."""


class ChampionChanged(RegistryError):
    """A compare-and-swap promotion or rollback found another champion than the one it was decided against."""


# "Whatever the champion is": the default of `expected_champion`, so plain calls keep working.
ANY = object()


class RegistryEvent(TypedDict, total=False):
    """One change of the record: what happened (`action`) to which version, when, and why."""

    at: str  # UTC, ISO 8601
    action: str  # adopt | promote | rollback | refused | failed
    version: str
    reason: str  # promote, adopt, rollback
    reasons: list[str]  # a decision that left the champion serving
    replaced: str | None  # rollback: the champion it replaced
    by: str  # promote by hand: the maintainer who overruled the gate
    manual: bool  # promote: a maintainer's decision, not the gate's
    evidence: dict[str, Any]  # refused, and a promotion by hand: the gate's numbers (GateResult.summary)


class RegistryRecord(TypedDict):
    """`registry.json`: the champion, the stack of champions a rollback returns to, and every change."""

    champion: str | None
    history: list[str]  # earlier champions, the last one on top
    events: list[RegistryEvent]
    challenger: NotRequired[str]  # the last version promoted or judged


@dataclass(frozen=True)
class ModelVersion:
    version: str
    path: Path
    meta: dict[str, Any]


def write_json_atomic(path: Path, payload: object) -> None:
    """Write JSON so that readers see the old file or the new one, never a partial one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class ModelRegistry:
    def __init__(self, models_dir: Path) -> None:
        self.root = Path(models_dir)
        self.versions_dir = self.root / VERSIONS_DIR
        self.staging_dir = self.root / STAGING_DIR
        self.record_path = self.root / REGISTRY_RECORD
        self.lock_path = self.root / REGISTRY_LOCK

    # Reading.
    def read_record(self) -> RegistryRecord:
        """The record as it is on disk (an empty one before the first champion); the one reader of the file."""
        try:
            raw = json.loads(self.record_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raw = {}
        if not isinstance(raw, dict):
            raise RegistryError(f"{self.record_path} does not hold a registry record")
        record = RegistryRecord(champion=raw.get("champion"), history=list(raw.get("history") or []),
                                events=list(raw.get("events") or []))
        if raw.get("challenger"):
            record["challenger"] = str(raw["challenger"])
        return record

    def marker(self) -> tuple[int, int] | None:
        """A cheap fingerprint of the record (one stat call), to notice a new champion."""
        try:
            st = self.record_path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_ino)

    def versions(self) -> list[str]:
        if not self.versions_dir.is_dir():
            return []
        return sorted(p.name for p in self.versions_dir.iterdir() if (p / META_FILE).is_file())

    def get(self, version: str) -> ModelVersion:
        path = self.versions_dir / version
        try:
            meta = json.loads((path / META_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RegistryError(f"model version {version!r} does not exist in {self.versions_dir}") from None
        return ModelVersion(version, path, meta)

    def champion(self) -> ModelVersion | None:
        version = self.read_record()["champion"]
        return self.get(version) if version else None

    def status(self) -> dict[str, Any]:
        record = self.read_record()
        champion = self.champion()
        return {
            "models_dir": str(self.root),
            "champion": champion.version if champion else None,
            "champion_meta": champion.meta if champion else None,
            "previous": list(reversed(record["history"])),
            "challenger": record.get("challenger"),
            "versions": self.versions(),
            "events": record["events"][-20:],
        }

    # Writing.
    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.lock_path)

    def new_staging(self) -> Path:
        """A fresh directory for an export in progress."""
        path = self.staging_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        path.mkdir(parents=True)
        return path

    def commit(self, staging: Path, meta: dict[str, Any]) -> ModelVersion:
        """Turn a finished staging directory into the next numbered version (not yet champion)."""
        staging = Path(staging)
        if staging.parent.resolve() != self.staging_dir.resolve():
            raise RegistryError(f"{staging} is not a staging directory of this registry")
        with self._locked():
            existing = [int(v[1:]) for v in self.versions() if v[1:].isdigit()]
            version = f"{_VERSION_PREFIX}{(max(existing) + 1) if existing else 1:04d}"
            meta = {**meta, "version": version, "committed_at": _now()}
            write_json_atomic(staging / META_FILE, meta)
            self.versions_dir.mkdir(parents=True, exist_ok=True)
            os.rename(staging, self.versions_dir / version)
        return self.get(version)

    def install(self, version: str, source: Path) -> ModelVersion:
        """Add a finished version directory made elsewhere (mirrored from a tracking server) under its own name."""
        source = Path(source)
        if source.parent.parent.resolve() != self.staging_dir.resolve():
            raise RegistryError(f"{source} is not inside a staging directory of this registry")
        with self._locked():
            if not (self.versions_dir / version / META_FILE).is_file():
                self.versions_dir.mkdir(parents=True, exist_ok=True)
                os.rename(source, self.versions_dir / version)
        shutil.rmtree(source.parent, ignore_errors=True)
        return self.get(version)

    def set_aside(self, version: str) -> str:
        """Rename a version that is not the one of that name elsewhere (a tracking server's); returns the new name."""
        aside = f"{version}-local-{uuid.uuid4().hex[:8]}"  # not numbered, so never taken for a version
        with self._locked():
            os.rename(self.versions_dir / version, self.versions_dir / aside)
        return aside

    def adopt(self, champion: str, history: list[str], reason: str) -> None:
        """Take the champion and its history from another record (a tracking server's), as one replacement."""
        with self._locked():
            for version in (*history, champion):
                self.get(version)  # every one must be here before the record names it
            record = self.read_record()
            record["champion"], record["history"] = champion, list(history)
            record["events"].append({"at": _now(), "action": "adopt", "version": champion, "reason": reason})
            write_json_atomic(self.record_path, record)

    def promote(self, version: str, reason: str = "", *, expected_champion: str | None | object = ANY, by: str = "",
                evidence: dict[str, Any] | None = None) -> ModelVersion:
        """Make `version` the champion; the old champion goes on the history stack.

        With `expected_champion` (compare-and-swap) the promotion happens only if the champion is still
        the one the decision was made against; otherwise ChampionChanged is raised and nothing changes. `by`: a
        maintainer promoting by hand (a refused challenger), recorded with the gate's `evidence`.
        """
        with self._locked():
            promoted = self.get(version)
            record = self.read_record()
            _expect(record, expected_champion, f"promote {version}")
            if record["champion"] == version:
                return promoted
            if record["champion"]:
                record["history"].append(record["champion"])
            record["champion"] = version
            record["challenger"] = version
            event: RegistryEvent = {"at": _now(), "action": "promote", "version": version, "reason": reason}
            if by:
                event |= {"by": by, "manual": True, "evidence": evidence or {}}
            record["events"].append(event)
            write_json_atomic(self.record_path, record)
        return promoted

    def note(self, version: str, action: str, reasons: list[str], evidence: dict[str, Any] | None = None) -> None:
        """Record a decision about a version that did not change the champion (e.g. a refused challenger, with the
        gate's numbers as `evidence`: what a maintainer reads before promoting it by hand)."""
        with self._locked():
            self.get(version)
            record = self.read_record()
            record["challenger"] = version
            event: RegistryEvent = {"at": _now(), "action": action, "version": version, "reasons": reasons}
            if evidence is not None:
                event["evidence"] = evidence
            record["events"].append(event)
            write_json_atomic(self.record_path, record)

    def refusal(self, version: str) -> RegistryEvent | None:
        """The newest "refused" event of `version`, or None when the gate never refused it."""
        return next((e for e in reversed(self.read_record()["events"])
                     if e.get("action") == "refused" and e.get("version") == version), None)

    def rollback(self, reason: str = "", *, expected_champion: str | None | object = ANY) -> ModelVersion:
        """Restore the previous champion. The replaced one is kept on disk but leaves the history.

        With `expected_champion`, only if the champion is still that version (see `promote`).
        """
        with self._locked():
            record = self.read_record()
            _expect(record, expected_champion, "roll back")
            if not record["history"]:
                raise RegistryError("no previous champion to roll back to")
            replaced = record["champion"]
            version = record["history"].pop()
            self.get(version)  # fail before writing if its directory vanished
            record["champion"] = version
            record["events"].append(
                {"at": _now(), "action": "rollback", "version": version, "replaced": replaced, "reason": reason}
            )
            write_json_atomic(self.record_path, record)
        return self.get(version)

    def clean_staging(self, older_than_s: float = 0.0) -> list[Path]:
        """Remove staging directories left by crashed exports; returns what was removed."""
        removed: list[Path] = []
        if not self.staging_dir.is_dir():
            return removed
        cutoff = time.time() - older_than_s
        for path in self.staging_dir.iterdir():
            if path.stat().st_mtime <= cutoff:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        return removed


def _expect(record: RegistryRecord, expected: str | None | object, action: str) -> None:
    if expected is not ANY and record["champion"] != expected:
        raise ChampionChanged(
            f"refused to {action}: the champion is now {record['champion']}, not {expected} as when this was decided"
        )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
