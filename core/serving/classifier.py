"""ONNX Runtime inference over the registry's champion, with hot swap. No torch on this path."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from core.evaluation.calibration import Temperatures
from core.input_forms import guess_form
from core.labels import LABELS
from core.reading import Reading
from core.registry.mlflow_champion import ChampionSource
from core.registry.versions import ModelRegistry, ModelVersion, RegistryError
from core.serving.batching import MicroBatcher
from core.serving.lexical import LexicalModel
from core.settings.config import ServingSection
from core.settings.policies import MAX_LENGTH
from core.storage.paths import FP32_FILE, META_FILE, TOKENIZER_FILE
from core.text import clean_text

log = logging.getLogger(__name__)



class NoChampionError(RuntimeError):
    """There is no model to serve yet."""


@dataclass(frozen=True)
class Prediction:
    label: str
    probabilities: dict[str, float]
    truncated: bool  # the text was longer than the model reads; only its head and tail were classified (core.reading)
    model_version: str
    form: str = ""  # the input form the text reads as (core.input_forms), an InputForm value


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


# ONNX Runtime fuses a residual Add and the LayerNormalization after it into SkipLayerNormalization, whose CPU
# kernel (1.31) takes ~110 us on a 51-token text against ~20 us for the pair it replaces; a BERT layer has two.
# Measured in docs/results/performance.md ("In process"); tests/unit/test_export.py checks the graph the runtime
# builds.
SLOW_FUSIONS = ("SkipLayerNormFusion",)


def inference_session(path: Path, options: ort.SessionOptions) -> ort.InferenceSession:
    """A CPU session on `path` without the fusions in SLOW_FUSIONS."""
    return ort.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(SLOW_FUSIONS)
    )


def session_options(threads: int = 0, spinning: bool = True) -> ort.SessionOptions:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or (os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    # Spinning workers answer a single text sooner but keep burning a core after each call, which the
    # HTTP layer of the same process could use; bench/serving.py --tune and bench/http_speed.py measure both.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return options


class OnnxClassifier:
    """One exported model directory: tokenizer + ONNX session. Safe to call from many threads."""

    def __init__(
        self, model_dir: Path, *, onnx_file: str | None = None, threads: int = 0, version: str = "",
        spinning: bool = True,
    ) -> None:
        self.model_dir = Path(model_dir)
        meta_path = self.model_dir / META_FILE
        self.meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        self.version = version or self.meta.get("version", self.model_dir.name)
        self.onnx_file = onnx_file or self.meta.get("serve_file", FP32_FILE)
        # Calibrated confidences (core.evaluation.calibration): every probability this object gives is
        # softmax(logits / T), T the one of the text's input form as core.input_forms reads it, its top one moved
        # along that form's confidence map.
        self.temperatures = Temperatures.from_meta(self.meta)
        self.session = inference_session(self.model_dir / self.onnx_file, session_options(threads, spinning))
        custom = self.session.get_modelmeta().custom_metadata_map
        self.labels: tuple[str, ...] = tuple(custom["labels"].split("|")) if "labels" in custom else LABELS
        # What training read of a long text, its head and tail (core.reading), as the file's metadata says.
        self.reading = Reading.from_meta(custom, int(self.meta.get("max_length", MAX_LENGTH)))
        self.max_length = self.reading.max_length
        self.tokenizer = Tokenizer.from_file(str(self.model_dir / TOKENIZER_FILE))
        self.tokenizer.no_truncation()  # whole texts: the reading keeps their head and tail
        self.tokenizer.no_padding()
        self._input_names = {i.name for i in self.session.get_inputs()}
        # A hybrid version's lexical half (core.serving.lexical): its log-probabilities join the encoder's.
        self.lexical = LexicalModel.load(self.model_dir)

    @property
    def temperature(self) -> float:
        """The pooled temperature (the one for a form without its own)."""
        return self.temperatures.pooled

    @temperature.setter
    def temperature(self, value: float) -> None:
        """One temperature for every form (1.0: the uncalibrated softmax)."""
        self.temperatures = Temperatures(float(value))

    def calibrated(self, logits: np.ndarray, forms: Sequence[str] | None) -> np.ndarray:
        """Calibrated probabilities of `logits`, rows of texts read as `forms` (core.evaluation.calibration)."""
        return self.temperatures.apply(logits, forms).astype(np.float32)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Each whole text's token ids, its special tokens included (before the reading keeps its head and tail)."""
        if len(texts) == 1:  # one text: nothing for encode_batch's thread pool to share out
            return [self.tokenizer.encode(clean_text(texts[0])).ids]
        return [e.ids for e in self.tokenizer.encode_batch([clean_text(t) for t in texts])]

    def _run(self, read: list[list[int]]) -> np.ndarray:
        if len(read) == 1:  # the common single-text request: no padding to build
            ids = np.asarray(read, dtype=np.int64)
            return self._session_run(ids, np.ones_like(ids))
        # Dynamic padding: pad to the longest text of this batch, not to max_length.
        width = max(len(r) for r in read)
        ids = np.zeros((len(read), width), dtype=np.int64)
        mask = np.zeros((len(read), width), dtype=np.int64)
        for row, tokens in enumerate(read):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        return self._session_run(ids, mask)

    def _session_run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        return self.session.run(["logits"], {k: v for k, v in feeds.items() if k in self._input_names})[0]

    def logits(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """The served logits of each text (before calibration): the encoder's, joined by the lexical model's where
        the version has one."""
        return self._served(texts, self.encode(texts) if texts else [], batch_size)

    def encoder_logits(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """The ONNX file's own logits, batched in length order so little compute goes to padding."""
        return self._logits(self.encode(texts) if texts else [], batch_size)

    def _served(self, texts: Sequence[str], encoded: list[list[int]], batch_size: int) -> np.ndarray:
        logits = self._logits(encoded, batch_size)
        return self.lexical.blend(logits, texts) if self.lexical is not None else logits

    def _logits(self, encoded: list[list[int]], batch_size: int) -> np.ndarray:
        if not encoded:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        read = [self.reading.ids(ids) for ids in encoded]
        if len(read) == 1:
            return self._run(read)
        order = np.argsort([len(r) for r in read], kind="stable")
        out = np.zeros((len(read), len(self.labels)), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self._run([read[i] for i in idx])
        return out

    def predict_proba(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Calibrated probabilities, one column per label in the model's own order (`self.labels`)."""
        forms = [guess_form(text).value for text in texts] if self.temperatures.reads_forms else None
        return self.calibrated(self.logits(texts, batch_size), forms)

    def proba_in_label_order(
        self, texts: Sequence[str], batch_size: int = 32, labels: Sequence[str] = LABELS
    ) -> np.ndarray:
        """Probabilities with columns in `labels` order (the examples' topics: a corpus's or the taxonomy's keys,
        `self.labels` for the model's own; AG News's four where a caller has nothing else), so that column i is
        label index i whatever order the model was exported with. ValueError names any of `labels` the model does
        not predict."""
        order = tuple(labels)
        missing = [name for name in order if name not in self.labels]
        if missing:
            raise ValueError(f"model {self.version} does not predict {', '.join(missing)} "
                             f"(it predicts {', '.join(self.labels)})")
        columns = [self.labels.index(name) for name in order]
        return self.predict_proba(texts, batch_size)[:, columns]

    def predict(self, texts: Sequence[str], batch_size: int = 32) -> list[Prediction]:
        encoded = self.encode(texts) if texts else []
        # Each text's form is read once: for its temperature, and for whoever watches traffic by form.
        forms = [guess_form(text).value for text in texts]
        probs = self.calibrated(self._served(texts, encoded, batch_size), forms)
        out = []
        for ids, row, form in zip(encoded, probs, forms, strict=True):
            out.append(
                Prediction(
                    label=self.labels[int(row.argmax())],
                    probabilities={label: float(p) for label, p in zip(self.labels, row, strict=True)},
                    truncated=len(ids) > self.max_length,
                    model_version=self.version,
                    form=form,
                )
            )
        return out


def load_version(model: ModelVersion, threads: int = 0, spinning: bool = True) -> OnnxClassifier:
    return OnnxClassifier(model.path, threads=threads, version=model.version, spinning=spinning)


class ChampionService:
    """Serves whatever the registry names as champion and swaps to a new one without a restart.

    Each call takes a reference to the current model first, so a request in flight finishes on the
    model it started with while a newer one is loaded in the background.
    """

    def __init__(
        self,
        registry: ModelRegistry | ChampionSource,  # the file registry, or @champion on a tracking server
        *,
        # The defaults are the settings' (NEWSLOOP_ONNX_THREADS, _RELOAD_INTERVAL_S, _MAX_BATCH, _BATCH_WAIT_MS).
        threads: int = ServingSection.field_default("onnx_threads"),
        # Off in the server: spinning ONNX Runtime workers keep a core busy after each call, and on 2 cores the
        # HTTP layer needs it (docs/results/performance.md, "In process": ONNX Runtime settings).
        spinning: bool = False,
        check_interval_s: float = ServingSection.field_default("reload_interval_s"),
        max_batch: int = ServingSection.field_default("max_batch"),
        batch_wait_ms: float = ServingSection.field_default("batch_wait_ms"),
    ) -> None:
        self.registry = registry
        # Concurrent single-text requests share one forward pass when a wait is configured.
        self._batcher = (
            MicroBatcher(self._predict_now, max_batch=max_batch, max_wait_s=batch_wait_ms / 1000.0)
            if batch_wait_ms > 0
            else None
        )
        self.threads = threads
        self.spinning = spinning
        self.check_interval_s = check_interval_s
        self._model: OnnxClassifier | None = None
        self._marker: object = None  # the registry's opaque fingerprint (ChampionSource.marker), only compared
        self._swap_lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self.last_error: str | None = None

    @property
    def model(self) -> OnnxClassifier:
        model = self._model
        if model is None:
            self.refresh()
            model = self._model
        if model is None:
            raise NoChampionError("no champion model yet: run `python -m retrain bootstrap`")
        return model

    @property
    def version(self) -> str | None:
        return self._model.version if self._model else None

    def refresh(self) -> bool:
        """Load the registry's champion if it changed; returns whether a swap happened."""
        with self._swap_lock:
            marker = self.registry.marker()
            if marker == self._marker and self._model is not None:
                return False
            try:
                champion = self.registry.champion()
            except RegistryError as exc:
                self.last_error = str(exc)
                log.error("cannot read champion: %s", exc)
                return False
            self._marker = marker
            if champion is None or (self._model and self._model.version == champion.version):
                return False
            try:
                loaded = load_version(champion, self.threads, self.spinning)
            except Exception as exc:
                self.last_error = f"failed to load {champion.version}: {exc}"
                log.exception("failed to load champion %s; keeping %s", champion.version, self.version)
                return False
            previous = self.version
            self._model = loaded
            self.last_error = None
            log.info("serving model %s (was %s)", loaded.version, previous)
            return True

    def start_watching(self) -> None:
        """Poll the registry in a background thread (one stat call per interval)."""
        if self._watcher is not None:
            return

        def loop() -> None:
            while not self._stop.wait(self.check_interval_s):
                try:
                    self.refresh()
                except Exception:
                    log.exception("champion refresh failed")

        self._watcher = threading.Thread(target=loop, name="champion-watcher", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()

    def _predict_now(self, texts: Sequence[str]) -> list[Prediction]:
        return self.model.predict(texts)

    def proba_in_label_order(self, texts: Sequence[str], labels: Sequence[str] | None = None) -> np.ndarray:
        """The champion's probabilities, columns in `labels` order (batch scoring; default the champion's own
        topics, whatever they are: the caller reads them from `model.labels`)."""
        model = self.model  # one model for the labels and the probabilities, however the champion swaps meanwhile
        return model.proba_in_label_order(texts, labels=model.labels if labels is None else labels)

    def predict(self, texts: Sequence[str]) -> list[Prediction]:
        if self._batcher is not None and texts:
            self.model  # noqa: B018 - raises NoChampionError here, in the caller's thread
            return self._batcher.predict_many(texts)
        return self._predict_now(texts)
