"""How a long text is read (core.reading): its head and its tail, the same tokens in training and in serving."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from transformers import AutoTokenizer

from core.reading import Reading
from core.serving.classifier import OnnxClassifier
from core.storage.paths import FP32_FILE
from retrain.classifier.model import resolve_base_model
from retrain.classifier.tokens import predict_logits, token_ids
from retrain.export.onnx_file import PARITY_TOLERANCE, export_onnx, parity_check
from testkit.models import tiny_model

CLS, SEP = 101, 102
LONG = ("The council met on Monday to discuss the budget. " * 40) + "The match ended in a late penalty shootout win."


def test_a_short_text_is_read_whole() -> None:
    assert Reading(8, tail=3).ids([CLS, 1, 2, 3, SEP]) == [CLS, 1, 2, 3, SEP]


def test_a_long_text_keeps_its_head_and_its_tail_between_the_special_tokens() -> None:
    ids = [CLS, *range(1, 21), SEP]
    assert Reading(10, tail=3).ids(ids) == [CLS, 1, 2, 3, 4, 5, 18, 19, 20, SEP]
    assert Reading(10).ids(ids) == [CLS, 1, 2, 3, 4, 5, 6, 7, 8, SEP]  # no tail: the head alone, as truncation


@pytest.mark.parametrize(("length", "tail"), [(2, 0), (10, 8), (10, -1)])
def test_a_reading_that_keeps_no_head_is_refused(length: int, tail: int) -> None:
    with pytest.raises(ValueError, match="must"):
        Reading(length, tail)


def test_the_reading_survives_the_exported_files_metadata() -> None:
    assert Reading.from_meta(Reading(256, 96).to_meta(), 192) == Reading(256, 96)
    assert Reading.from_meta({}, 192) == Reading(192)  # a file exported before tails were read


def test_serving_reads_the_tail_that_training_read(tmp_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(resolve_base_model(""))
    reading = Reading(48, tail=16)
    read = token_ids(tokenizer, [LONG], reading)[0]
    assert len(read) == 48 and tokenizer.decode(read[-17:-1]).endswith("penalty shootout win.")
    model = tiny_model(seed=3)
    export_onnx(model, tokenizer, tmp_path, reading)
    assert parity_check(model, tokenizer, tmp_path, [LONG, "Short"], reading) <= PARITY_TOLERANCE
    served = OnnxClassifier(tmp_path, onnx_file=FP32_FILE)
    assert served.reading == reading
    [prediction] = served.predict([LONG])
    assert prediction.truncated and not served.predict(["Short"])[0].truncated
    # Reading the head alone gives other logits: the tail is really read.
    assert not np.allclose(predict_logits(model, tokenizer, [LONG], Reading(48)), served.logits([LONG]), atol=1e-3)
