"""A taxonomy scenario's starter: trained once by the real bootstrap on the scenario's data folder, kept in a cache
folder under a key naming everything it depends on, and copied into each run's home from there.

A starter on the offline data takes the bootstrap's full budget on 2 cores; the rounds after it take minutes. The
key hashes the data folder's bytes (so the scenario, the taught topic, the data, the seed and the carved sizes)
and the bootstrap's recipe (its training settings, time and row caps included), so a changed recipe trains anew.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bench.sim.champion import train_champion
from core.storage.paths import REGISTRY_LOCK, REGISTRY_RECORD, STAGING_DIR

if TYPE_CHECKING:
    from retrain.classifier.model import ModelFactory
    from retrain.inputs import BootstrapSetup

MANIFEST = "starter.json"


@dataclass(frozen=True)
class StarterSpec:
    """What a starter depends on: its data folder's bytes and the bootstrap's recipe."""

    data_digest: str  # sha256 of the data folder's CSVs (bench.sim.carve.folder_digest)
    recipe: str  # the bootstrap's training settings, base model, row caps and input forms, as JSON
    tiny: bool  # the 2-layer random model of the quick mode, not the base encoder

    def key(self, scenario: str) -> str:
        payload = json.dumps(asdict(self), sort_keys=True)
        return f"{scenario}-{hashlib.sha256(payload.encode()).hexdigest()[:16]}"


def starter_spec(setup: BootstrapSetup, data_digest: str, tiny: bool) -> StarterSpec:
    """The spec of the starter `setup` trains; the thread count is left out (a speed, not a recipe)."""
    recipe = {"train": setup.train.model_dump(mode="json", exclude={"threads"}), "base_model": setup.base_model,
              "dropout": setup.dropout, "max_rows": setup.max_rows, "init_from": setup.init_from,
              "forms": [[form.value, cap] for form, cap in setup.forms]}
    return StarterSpec(data_digest, json.dumps(recipe, sort_keys=True), tiny)


@dataclass(frozen=True)
class StarterOutcome:
    seconds: float  # the bootstrap's, when it was trained (now or when cached)
    cached: bool  # copied from the cache rather than trained in this run
    where: Path | None  # the cache entry, if any


def starter_into(
    setup: BootstrapSetup, spec: StarterSpec, scenario: str, cache: Path | None, factory: ModelFactory | None = None
) -> StarterOutcome:
    """Give the home `setup` names a champion: the cached starter for `spec`, else the one `setup`'s bootstrap
    trains on its data folder now (kept in `cache`, when given, for the next run)."""
    models = setup.paths.models_dir
    entry = cache / spec.key(scenario) if cache is not None else None
    if entry is not None and (entry / "models" / REGISTRY_RECORD).is_file():
        shutil.copytree(entry / "models", models)
        seconds = float(json.loads((entry / MANIFEST).read_text(encoding="utf-8"))["bootstrap_seconds"])
        return StarterOutcome(seconds, True, entry)
    seconds = train_champion(setup, factory)
    if entry is not None:
        keep(models, entry, {"scenario": scenario, **asdict(spec), "bootstrap_seconds": round(seconds, 1),
                             "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return StarterOutcome(seconds, False, entry)


def keep(models: Path, entry: Path, manifest: dict[str, object]) -> None:
    """Copy a freshly bootstrapped registry into the cache entry, whole or not at all (a rename)."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}-"))
    shutil.copytree(models, staging / "models", ignore=shutil.ignore_patterns(REGISTRY_LOCK, STAGING_DIR))
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    if entry.exists():
        shutil.rmtree(entry)
    staging.rename(entry)
