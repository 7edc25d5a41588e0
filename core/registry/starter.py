"""The starter champion shipped in the repository: installed as the first model version, no training needed."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path

from core.labels import LABELS
from core.registry.versions import ModelRegistry, ModelVersion
from core.settings.config import PROJECT_ROOT
from core.storage.paths import META_FILE

log = logging.getLogger(__name__)

STARTER_DIR = PROJECT_ROOT / "models" / "starter"
MODEL_CARD = "MODEL_CARD.md"


def starter_meta(starter_dir: Path = STARTER_DIR) -> dict | None:
    """The starter's metadata, or None when there is no usable starter there."""
    try:
        return json.loads((Path(starter_dir) / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def starter_fits(meta: dict | None, labels: Sequence[str] = LABELS) -> bool:
    """Whether a starter predicts exactly `labels` (the configured data's topics, `core.data.source_labels`; AG
    News's four by default), in the same order."""
    if not meta:
        return False
    return tuple(meta.get("labels", ())) == tuple(labels) and bool(meta.get("serve_file"))


def installed_meta(meta: dict) -> dict:
    """The starter's metadata as a model version of its own: marked a starter, its version and commit time left to
    whoever installs or registers it."""
    kept = {key: value for key, value in meta.items() if key not in ("version", "committed_at")}
    return kept | {"kind": "starter", "starter_of": meta.get("source_version")}


def install_starter(
    registry: ModelRegistry, starter_dir: Path = STARTER_DIR, labels: Sequence[str] = LABELS
) -> ModelVersion | None:
    """Make the shipped starter the champion of an empty registry; returns the new version, or None.

    Nothing happens when the registry already has a champion or the starter does not predict `labels` (the
    configured data's topics: data of your own topics needs a bootstrap, not AG News's starter).
    The files are copied into a staging directory and committed like any export, so the registry's
    guarantees (a version appears whole, the record changes atomically) hold for the starter too.
    """
    if registry.champion() is not None:
        return None
    meta = starter_meta(starter_dir)
    if not starter_fits(meta, labels):
        log.info("no starter model for labels %s in %s", ", ".join(labels), starter_dir)
        return None
    assert meta is not None
    staging = registry.new_staging()
    shutil.copytree(starter_dir, staging, dirs_exist_ok=True, ignore=shutil.ignore_patterns(META_FILE))
    version = registry.commit(staging, installed_meta(meta))
    promoted = registry.promote(version.version, reason="starter shipped with the project")
    log.info("installed the starter model as %s (%s)", promoted.version, meta.get("data", ""))
    return promoted
