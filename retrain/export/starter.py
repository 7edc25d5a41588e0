"""Packing a trained model version as the starter shipped in the repository, with its model card."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from core.data import Example, InputForm, in_form, read_csv
from core.evaluation.metrics import evaluate_probabilities
from core.labels import LABELS
from core.registry.starter import MODEL_CARD, starter_meta
from core.registry.versions import ModelRegistry, ModelVersion
from core.serving.classifier import OnnxClassifier
from core.settings.policies import ExportConfig
from core.storage.paths import CHECKPOINT_DIR, FP32_FILE, INT8_FILE, META_FILE, TOKENIZER_FILE, VALIDATION_PROBS
from retrain.classifier.model import load_checkpoint, save_checkpoint
from retrain.export.calibration import calibrate, calibrated_probs
from retrain.export.publish import publish


def data_files(source: str) -> dict[str, dict[str, Any]]:
    """Each CSV of a data folder (or the one CSV) with its size and sha256, so the card names exact data."""
    path = Path(source).expanduser()
    files = sorted(path.glob("*.csv")) if path.is_dir() else ([path] if path.is_file() else [])
    return {f.name: {"bytes": f.stat().st_size, "sha256": hashlib.sha256(f.read_bytes()).hexdigest()} for f in files}


def rows_seen(source: str, trained: set[str]) -> dict[str, dict[str, Any]]:
    """Which rows of each CSV of `source` a model trained on: the file's row count, how many it saw, and the seen
    rows as ranges [first, last] of 0-based row numbers (the header not counted). A row is seen when its text is
    among `trained` (the texts of the training split: every input form is cut from those rows)."""
    path = Path(source).expanduser()
    files = sorted(path.glob("*.csv")) if path.is_dir() else ([path] if path.is_file() else [])
    seen_by_file: dict[str, dict[str, Any]] = {}
    for file in files:
        flags = [example.text in trained for example in read_csv(file)]
        ranges: list[list[int]] = []
        for i, seen in enumerate(flags):
            if not seen:
                continue
            if ranges and ranges[-1][1] == i - 1:
                ranges[-1][1] = i
            else:
                ranges.append([i, i])
        seen_by_file[file.name] = {"rows": len(flags), "seen": sum(flags), "ranges": ranges}
    return seen_by_file


def _metrics(model_dir: Path, onnx_file: str, validation: list[Example]) -> dict[str, Any]:
    classifier = OnnxClassifier(model_dir, onnx_file=onnx_file)  # columns and per-label scores in its own topics
    probs = classifier.predict_proba([e.text for e in validation])
    return evaluate_probabilities([e.label for e in validation], probs, classifier.labels)


def package_starter(
    version: ModelVersion,
    out_dir: Path,
    validation: list[Example],
    *,
    description: str,
    data: dict[str, Any],
    command: str,
    provenance: dict[str, Any] | None = None,
    seen: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Write `out_dir` (replacing it) with the served int8 ONNX file, fp16 warm-start weights and a model card.

    fp16 weights halve the repository's cost of warm starts; `retrain.classifier.model.load_checkpoint` loads them
    back in fp32, and the fp32/int8 ONNX figures on the card are measured here on `validation`.
    `provenance` (source_version, trained_at) names the original training when `version` is a re-export.
    """
    out_dir = Path(out_dir)
    fp32 = _metrics(version.path, FP32_FILE, validation)
    int8 = _metrics(version.path, INT8_FILE, validation)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}-"))
    for name in (INT8_FILE, TOKENIZER_FILE, VALIDATION_PROBS):
        if (version.path / name).is_file():
            shutil.copy2(version.path / name, staging / name)
    model, tokenizer = load_checkpoint(version.path / CHECKPOINT_DIR)
    save_checkpoint(model.half(), tokenizer, staging / CHECKPOINT_DIR)
    sizes = {
        str(p.relative_to(staging)): p.stat().st_size for p in sorted(staging.rglob("*")) if p.is_file()
    }
    meta = {key: value for key, value in version.meta.items() if key not in ("version", "committed_at")}
    meta |= {
        "labels": list(model.labels),
        "data": description,  # names the data set, never a path: the page shows it
        "serve_file": INT8_FILE,
        "source_version": version.version,
        "trained_at": version.meta.get("committed_at"),
        "data_files": data,
        "command": command,
        "file_bytes": sizes,
        "validation_report": {"n": len(validation), "fp32": fp32, "int8": int8},
    } | (provenance or {}) | ({"rows_seen": seen} if seen is not None else {})
    meta["validation"] = {**meta.get("validation", {}), "fp32": _headline(fp32), "int8": _headline(int8)}
    meta["validation_by_form"] = forms_report(version.path, validation)
    (staging / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
    (staging / MODEL_CARD).write_text(model_card(meta), encoding="utf-8")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    os.rename(staging, out_dir)
    return meta


def reexport_starter(
    starter_dir: Path, validation: list[Example], config: ExportConfig, *, description: str, data: dict[str, Any]
) -> dict[str, Any]:
    """Export the shipped starter's checkpoint again with today's export recipe and pack it in place.

    The weights do not change, only the ONNX graph (and so the speed) of the served file; the card keeps
    the original training's record and command, and its validation figures are measured again.
    """
    old = starter_meta(starter_dir)
    if old is None:
        raise FileNotFoundError(f"no starter in {starter_dir}")
    model, tokenizer = load_checkpoint(Path(starter_dir) / CHECKPOINT_DIR)
    measured = ("validation", "validation_report", "file_bytes", "serve_file", "parity_max_abs_diff")
    record = {key: value for key, value in old.items() if key not in measured}
    with tempfile.TemporaryDirectory(prefix="newsloop-reexport-") as tmp:
        exported = publish(model, tokenizer, ModelRegistry(Path(tmp)), validation, config, record)
        return package_starter(
            exported.version, Path(starter_dir), validation, description=description, data=data,
            command=old.get("command", ""),
            provenance={"source_version": old.get("source_version"), "trained_at": old.get("trained_at")},
        )


def calibrate_starter(starter_dir: Path, validation: list[Example]) -> dict[str, Any]:
    """Fit the shipped starter's temperature on its validation in every input form (as every export now does,
    retrain.export.calibration.calibrate) and write it, with each form's ECE and Brier score before and after, into its
    meta and card, in place. The weights and files do not change; its figures are measured again, calibrated."""
    meta = starter_meta(starter_dir)
    if meta is None:
        raise FileNotFoundError(f"no starter in {starter_dir}")
    raw = OnnxClassifier(Path(starter_dir), onnx_file=INT8_FILE)
    raw.temperature = 1.0  # the fit starts from the uncalibrated softmax, whatever the meta holds now
    full = raw.proba_in_label_order([e.text for e in validation], labels=raw.labels)  # its own topics
    temperatures, meta["calibration"], meta["validation_read_as"] = calibrate(Path(starter_dir), INT8_FILE, validation, full, scorer=raw)
    meta |= temperatures.to_meta()
    (Path(starter_dir) / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
    # The gate reuses the cached validation probabilities: they are the served, calibrated ones now.
    np.save(Path(starter_dir) / VALIDATION_PROBS, calibrated_probs(temperatures, validation, full))
    meta["validation_by_form"] = forms_report(Path(starter_dir), validation)  # calibrated: AUROC/AUPRC may move
    int8 = _metrics(Path(starter_dir), INT8_FILE, validation)
    meta["validation_report"] = {**meta["validation_report"], "int8": int8}
    (Path(starter_dir) / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True), encoding="utf-8")
    (Path(starter_dir) / MODEL_CARD).write_text(model_card(meta), encoding="utf-8")
    return meta


def forms_report(model_dir: Path, validation: list[Example]) -> dict[str, dict[str, Any]]:
    """The served file's validation accuracy, macro-F1 and recall per label for each input form people paste."""
    report = {}
    for form in InputForm:
        rows = in_form(validation, form)
        if rows:
            m = _metrics(model_dir, INT8_FILE, rows)
            report[form.value] = _headline(m) | {
                "n": len(rows), "recall": {label: scores["recall"] for label, scores in m["per_label"].items()}
            }
    return report


def _headline(metrics: dict[str, Any]) -> dict[str, float]:
    return {"accuracy": metrics["accuracy"], "macro_f1": metrics["macro_f1"]}


def model_topics(meta: dict[str, Any]) -> tuple[str, ...]:
    """The topic keys a model predicts, in its output order, as its meta records them (the AG News four if not)."""
    return tuple(meta.get("labels") or LABELS)


def model_card(meta: dict[str, Any]) -> str:
    """The model card: data and its hash, recipe, seed, the reproducing command, validation metrics, sizes."""
    labels = model_topics(meta)
    lines = [*_card_intro(meta, labels), *_card_data(meta), *_card_recipe(meta), *_card_validation(meta, labels),
             *_card_calibration(meta), *_card_tries(meta), *_card_confident_errors(meta)]
    lines += ["", "## Files", "", "| file | bytes |", "|---|---:|",
              *[f"| `{name}` | {size} |" for name, size in meta["file_bytes"].items()], ""]
    return "\n".join(lines)


def _card_intro(meta: dict[str, Any], labels: tuple[str, ...]) -> list[str]:
    """The title, what the model is, and its topics (when the meta names them)."""
    return [
        "# NewsLoop starter model",
        "",
        f"A {meta.get('base_model', 'BERT-family')} encoder with a small MLP head, fine-tuned on "
        f"{'AG News topics' if labels == LABELS else 'its own topics'} ({', '.join(labels)}). Served as dynamically quantized int8 ONNX; `checkpoint/` holds fp16 weights "
        "that retrains warm-start from (loaded back in fp32).",
        "",
        *(["## Topics", "", f"Taxonomy version {meta.get('taxonomy_version', 1)}, in the model's output order:", "",
            "| key | name | description |", "|---|---|---|",
            *[f"| {t['key']} | {t['name']} | {t.get('description', '')} |" for t in meta["topics"]], ""]
          if meta.get("topics") else []),
    ]


def _card_data(meta: dict[str, Any]) -> list[str]:
    """What it trained on: the data, its rows, how validation was cut, and each file's size and hash."""
    return [
        "## Data",
        "",
        f"- {meta.get('data', 'unknown')}",
        f"- rows: {json.dumps(meta.get('rows', {}), sort_keys=True)}",
        *([f"- training rows by input form: {json.dumps(meta['rows_by_form'])}"] if meta.get("rows_by_form") else []),
        *(["- data rows seen (`rows_seen` in meta.json lists them): "
           + ", ".join(f"{name} {f['seen']} of {f['rows']}" for name, f in meta["rows_seen"].items())]
          if meta.get("rows_seen") else []),
        *([f"- continued from the checkpoint in `{meta['init_from']}`"] if meta.get("init_from") else []),
        "- validation: a fixed 10% of `train.csv` chosen by a hash of each cleaned text (`core.data.split_by_hash`)",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
        *[f"| `{name}` | {f['bytes']} | `{f['sha256']}` |" for name, f in meta.get("data_files", {}).items()],
        "",
    ]


def _card_recipe(meta: dict[str, Any]) -> list[str]:
    """The training settings, its time, and the command that reproduces it."""
    config = meta.get("train_config", {})
    return [
        "## Recipe",
        "",
        "| setting | value |",
        "|---|---|",
        *[f"| {key} | {value} |" for key, value in sorted(config.items())],
        f"| training seconds | {meta.get('train_seconds', 'n/a')} |",
        "",
        "Reproduce (2 CPU cores; docs/results/starter.md explains each step):",
        "",
        "```bash",
        meta.get("command", ""),
        "```",
        "",
    ]


def _card_validation(meta: dict[str, Any], labels: tuple[str, ...]) -> list[str]:
    """Validation scores: each file's headline, the served file's per label, and per input form."""
    report = meta["validation_report"]
    lines = [
        f"## Validation ({report['n']} rows)",
        "",
        "| file | accuracy | macro-F1 | macro AUROC | macro AUPRC |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ("fp32", "int8"):
        m = report[name]
        lines.append(
            f"| {name} | {m['accuracy']:.4f} | {m['macro_f1']:.4f} | {m['macro_auroc']:.4f} | {m['macro_auprc']:.4f} |"
        )
    lines += ["", "Per label (served int8 file):", "", "| label | precision | recall | F1 | AUROC | AUPRC | support |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    int8 = report["int8"]
    for label in labels:
        p = int8["per_label"][label]
        lines.append(
            f"| {label} | {p['precision']:.4f} | {p['recall']:.4f} | {p['f1']:.4f} | "
            f"{int8['auroc'].get(label, float('nan')):.4f} | {int8['auprc'].get(label, float('nan')):.4f} | {p['support']} |"
        )
    by_form = meta.get("validation_by_form", {})
    if by_form:
        lines += ["", "Per input form (served int8 file; the same validation rows read as headline only, body only):",
                  "", f"| input | rows | accuracy | macro-F1 | {' | '.join(labels)} (recall) |",
                  "|---|---:|---:|---:|" + "---:|" * len(labels)]
        for form, m in by_form.items():
            recalls = " | ".join(f"{m['recall'][label]:.4f}" for label in labels)
            lines.append(f"| {form} | {m['n']} | {m['accuracy']:.4f} | {m['macro_f1']:.4f} | {recalls} |")
    return lines


def _card_calibration(meta: dict[str, Any]) -> list[str]:
    """The calibration's temperatures and each form's calibration error and Brier score (none: no section)."""
    calibration = meta.get("calibration") or {}
    if not calibration:
        return []
    per_form = ", ".join(f"{form} {t:.3f}" for form, t in sorted((meta.get("temperatures") or {}).items()))
    lines = ["", f"## Calibration (temperature {meta.get('temperature', 1.0):.3f}"
             + (f"; by the form a text is read as: {per_form}" if per_form else "") + ")", "",
             "Fitted on the validation rows in every input form together (`core.evaluation.calibration`): per form "
             "as serving reads a text, a temperature, then an isotonic map of the top probability. Expected "
             "calibration error (15 bins of the top probability) and Brier score of the served file, by the rows' "
             "true form: before, after (fitted and measured on the same rows), cross-validated (each row "
             "calibrated by a fit on the other four fifths), and with a pooled temperature or temperatures only:",
             "", "| input | rows | ECE before | ECE after | ECE cross-validated | ECE, pooled temperature | "
             "ECE, temperatures only | Brier before | Brier after |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(c: dict[str, Any], key: str) -> str:
        return f"{c[key]:.4f}" if key in c else "-"

    for form, c in calibration.items():
        lines.append(f"| {form} | {c['n']} | {c['ece_before']:.4f} | {c['ece_after']:.4f} | "
                     f"{cell(c, 'ece_cross_validated')} | {cell(c, 'ece_pooled')} | {cell(c, 'ece_temperatures')} | "
                     f"{c['brier_before']:.4f} | {c['brier_after']:.4f} |")
    return lines


def _card_tries(meta: dict[str, Any]) -> list[str]:
    """What each try of the recipe bought, when the meta records them."""
    if not meta.get("tries"):
        return []
    return ["", "## What each try bought", "", "Served int8, the same validation rows; from the previous starter's "
            "checkpoint (docs/results/starter.md has the details):", "",
            "| try | command | title + description | headline only | body only | macro AUROC |",
            "|---|---|---:|---:|---:|---:|",
            *[f"| {t['try']} | {t['command']} | {t['full']} | {t['title']} | {t['body']} | {t['auroc']} |"
              for t in meta["tries"]]]


def _card_confident_errors(meta: dict[str, Any]) -> list[str]:
    """The most confident errors, each judged by a person, when the meta records them."""
    if not meta.get("confident_errors"):
        return []
    note = f" ({meta['confident_errors_note']})" if meta.get("confident_errors_note") else ""
    return ["", "## The most confident errors, judged", "", "Whole articles, each read by a person and judged "
            f"the model's mistake, a label that looks wrong, or a text either label fits{note}:", "",
            "| confidence | label -> predicted | article (its start) | judged |", "|---:|---|---|---|",
            *[f"| {e['confidence']} | {e['labels']} | {e['article']} | {e['judged']} |"
              for e in meta["confident_errors"]]]
