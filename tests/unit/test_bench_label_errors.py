"""bench/label_errors.py: the flip test's mechanics on the seed set (--quick), and --fixes on a tiny home, in seconds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench.label_errors import main
from core.data import load_seed
from core.labels import LABELS
from core.registry.versions import ModelRegistry
from core.text import text_hash
from feedback.store import FeedbackStore
from feedback.trust.label_errors import Candidate, Source
from retrain.export.scoring import served_probs


def test_quick_run_prints_recall_and_precision_for_each_feature_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--data", "seed"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"203 training rows, 6 labels flipped", out)
    rows = re.findall(r"^\| (TF-IDF|embeddings|embeddings \+ TF-IDF) \| ([\d.]+) \| ([\d.]+) \| (\d+) \| (\d+) \|", out,
                      re.MULTILINE)
    assert [r[0] for r in rows] == ["TF-IDF", "embeddings", "embeddings + TF-IDF"]
    for _, recall, precision, candidates, caught in rows:
        assert 0.0 <= float(precision) <= 1.0 and 0.0 <= float(recall) <= 1.0 and int(caught) <= min(6, int(candidates))
    # words alone find some of the six flips even on 203 hand-written items
    assert float(rows[0][1]) > 0
    assert re.search(r"^\| flipped, top 2k fixed \| 0\.\d{4} \| 0\.\d{4} \|$", out, re.MULTILINE)


# Five fine-tunes (about 20 s on 2 cores): run with the whole flows (-m e2e), not in the default run.
@pytest.mark.e2e
def test_finetune_adds_three_fine_tunes_on_clean_flipped_and_fixed_labels(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--data", "seed", "--finetune", "--finetune-search"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\| fine-tuned, 2 folds \| [\d.]+ \| [\d.]+ \| \d+ \| \d+ \|", out, re.MULTILINE)
    rows = re.findall(r"^\| (clean labels|flipped|flipped, top 2k fixed) \| (0\.\d{4}|1\.0000) \| 0\.\d{4} \| \d+ \|$", out,
                      re.MULTILINE)
    assert [name for name, _ in rows] == ["clean labels", "flipped", "flipped, top 2k fixed"]


def test_fixes_mode_scores_validation_as_labelled_and_as_corrected(tiny_home_copy: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    corpus = load_seed()
    store = FeedbackStore(tiny_home_copy / "feedback.db")
    doubted = [corpus.validation[0], corpus.train[0]]
    champion = ModelRegistry(tiny_home_copy / "models").champion()
    assert champion is not None
    said = int(served_probs(champion, doubted[:1]).argmax())
    # relabelled to what the champion says (one more right answer), or away from it (one fewer)
    suggested = [said if said != doubted[0].label else (said + 1) % 4, (doubted[1].label + 1) % 4]
    store.label_errors.save_search("s1", [
        Candidate(Source.BASE, text_hash(e.text), "seed", e.text, LABELS[e.label], LABELS[s], 0.9)
        for e, s in zip(doubted, suggested, strict=True)])
    ids = [r["id"] for r in store.label_errors.open_candidates()[0]]
    store.label_errors.decide(ids[:1], "relabel", by="admin")
    store.label_errors.decide(ids[1:], "exclude", by="admin")
    store.close()
    assert main(["--data", "seed", "--fixes", str(tiny_home_copy), "--max-length", "64"]) == 0
    out = capsys.readouterr().out
    assert "2 live fixes, 1 on base training rows, 1 on validation rows" in out
    rows = re.findall(r"^\| as (labelled|corrected) \((\d+) rows\) \| (0\.\d{4}) ± 0\.\d{4} \| (0\.\d{4}) ± 0\.\d{4} \| "
                      r"(0\.\d{4}) ± 0\.\d{4} \|$", out, re.MULTILINE)
    assert [(r[0], int(r[1])) for r in rows] == [("labelled", len(corpus.validation)),
                                                 ("corrected", len(corpus.validation))]
    # one validation label changed: the champion's served accuracy moves by exactly one row's worth
    served = [float(r[2]) for r in rows]
    step = 1 / len(corpus.validation) * (1 if said != doubted[0].label else -1)
    assert served[1] - served[0] == pytest.approx(step, abs=1e-4)
