"""The recipe for a changed taxonomy (retrain.topics): a new topic's head row aimed at its answers, and a split's
old rows read by a linear model fit on the answers, their mix estimated by EM."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from core.data import Example
from core.reading import Reading
from retrain.classifier.model import resolve_base_model
from retrain.topics.imprint import imprint
from retrain.topics.split_rows import MIN_EXACT_ROWS, mixture_prior, resolve_split_rows
from testkit.models import tiny_model

TOPICS = ("World", "Sports", "Business", "Sci/Tech")
MONEY = ["shares stocks market profit bank investors quarter earnings {}", "bank lends money interest rates rise {}",
         "company profit falls as stocks slide on the market {}"]
SCIENCE = ["telescope galaxy astronomers planet orbit {}", "physicists measure the neutrino mass in a lab {}",
           "astronomers spot a comet near the planet {}"]
SPORT = ["football match goal striker league {}", "tennis final set champion serve {}"]


def _texts(templates: list[str], n: int, start: int = 0) -> list[str]:
    return [templates[i % len(templates)].format(f"n{start + i}") for i in range(n)]


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    return AutoTokenizer.from_pretrained(resolve_base_model(""))


def _margin(model: torch.nn.Module, tokenizer, texts: list[str], row: int) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """Each text's logit for `row` minus the best of the other rows."""
    enc = tokenizer(texts, padding=True, return_tensors="pt")
    model.eval()
    with torch.no_grad():
        logits = model(enc["input_ids"], enc["attention_mask"])
    others = torch.cat([logits[:, :row], logits[:, row + 1:]], dim=1)
    return logits[:, row] - others.max(dim=1).values


def test_an_imprinted_row_ties_on_its_answers_and_reads_them_above_other_texts(tokenizer) -> None:  # type: ignore[no-untyped-def]
    model = tiny_model(labels=TOPICS)
    science, rest = _texts(SCIENCE, 12), _texts(MONEY + SPORT, 30)
    before = _margin(model, tokenizer, science, 3).clone()
    used = imprint(model, tokenizer, {3: science}, rest, reading=Reading(32))
    assert used == {3: 12}
    own, other = _margin(model, tokenizer, science, 3), _margin(model, tokenizer, _texts(MONEY + SPORT, 30, 100), 3)
    # The bias makes the new row tie, on average over its own answers, with the row they were read as.
    assert abs(float(own.mean())) < 1e-3
    assert float(own.mean()) > float(other.mean()) + 0.1  # aimed at its answers, not at every text
    assert not torch.allclose(before, own)


def test_imprint_leaves_a_row_without_answers_as_it_was(tokenizer) -> None:  # type: ignore[no-untyped-def]
    model = tiny_model(labels=TOPICS)
    weight = model.head[-1].weight.detach().clone()
    assert imprint(model, tokenizer, {3: []}, _texts(MONEY, 5), reading=Reading(32)) == {}
    assert torch.equal(model.head[-1].weight, weight)


def test_em_recovers_the_mix_of_unlabelled_rows() -> None:
    rng = np.random.default_rng(0)
    for share in (0.8, 0.3):
        truth = rng.random(4000) < share  # class 0 with this share
        x = rng.normal(np.where(truth, -1.0, 1.0), 1.0)
        # Exact posteriors under a uniform prior for two unit Gaussians at -1 and +1.
        p0 = 1.0 / (1.0 + np.exp(2.0 * x))
        prior, posterior = mixture_prior(np.stack([p0, 1.0 - p0], axis=1))
        assert prior[0] == pytest.approx(share, abs=0.03)
        assert np.allclose(posterior.sum(axis=1), 1.0)
        assert ((posterior[:, 0] > 0.5) == truth).mean() > ((p0 > 0.5) == truth).mean() - 1e-9


def _split_rows(children: int) -> tuple[list[Example], list[bool]]:
    exact = ([Example(t, 2) for t in _texts(MONEY, 10)] + [Example(t, 4) for t in _texts(SCIENCE, children)]
             + [Example(t, 1) for t in _texts(SPORT, 6)])
    olds = _texts(MONEY, 12, 200) + _texts(SCIENCE, 12, 200)
    is_science = [False] * 12 + [True] * 12
    sets = [Example(t, 2, allowed=(2, 4)) for t in olds]
    return exact + sets, is_science


def test_a_splits_old_rows_get_the_topic_the_answers_read_them_as(tokenizer) -> None:  # type: ignore[no-untyped-def]
    model = tiny_model(labels=("World", "Sports", "Business", "Sci/Tech", "Science"))
    examples, is_science = _split_rows(children=8)
    resolved = resolve_split_rows(model, tokenizer, examples, reading=Reading(32), seed=0)
    assert resolved is not None
    assert resolved.rows == [i for i, e in enumerate(examples) if e.allowed]
    assert np.allclose(resolved.targets.sum(axis=1), 1.0)
    assert not resolved.targets[:, [0, 1, 3]].any()  # only the set's own topics
    read_science = resolved.targets[:, 4] > 0.5
    assert (read_science == np.array(is_science)).mean() >= 0.9
    assert set(resolved.prior) == {2, 4} and resolved.prior[4] == pytest.approx(0.5, abs=0.2)


def test_too_few_exact_answers_of_the_child_leave_the_set_loss(tokenizer) -> None:  # type: ignore[no-untyped-def]
    model = tiny_model(labels=("World", "Sports", "Business", "Sci/Tech", "Science"))
    examples, _ = _split_rows(children=MIN_EXACT_ROWS - 1)
    assert resolve_split_rows(model, tokenizer, examples, reading=Reading(32), seed=0) is None


def test_the_topics_only_answers_teach_are_those_no_base_row_can_be() -> None:
    from retrain.topics.taught import answer_taught

    assert answer_taught([Example("a", 0), Example("b", 1), Example("c", 2)], 4) == [3]  # an added topic
    # After a split of 2 into 2 and 3, the base rows of 2 allow the set (2, 3): they carry both topics' share.
    assert answer_taught([Example("a", 0), Example("b", 1), Example("c", 2, allowed=(2, 3))], 4) == []
    assert answer_taught([Example("a", 0), Example("c", 2, allowed=(2, 3))], 5) == [1, 4]


def test_an_answer_taught_topic_weighs_in_training_what_it_weighs_in_the_answers() -> None:
    from retrain.topics.taught import balanced
    from retrain.training.targets import TrainingRows

    # 1,000 base rows of 4 topics; 300 answers over 5, a fifth of them the added topic 4 that no base row can be.
    base = [Example(f"base {i}", i % 4) for i in range(1000)]
    answers = [Example(f"answer {i}", i % 5) for i in range(300)]
    rows = TrainingRows(base, answers, [], [], feedback_repeats=3)
    plain, weighted = rows.weights(2.0), balanced(rows, 5, 2.0, cap=10.0).weights(2.0)
    labels = np.array(rows.labels)

    def share(weights: list[float]) -> float:
        w = np.array(weights)
        return float(w[labels == 4].sum() / w.sum())

    assert share(plain) == pytest.approx(360 / 2800)  # diluted by the base rows: 0.13 against 0.2 of the answers
    assert share(weighted) == pytest.approx(0.2)
    # Only the added topic's answers change; a topic base rows carry keeps its weight.
    assert [w for w, y in zip(weighted, labels, strict=True) if y != 4] == [w for w, y in zip(plain, labels, strict=True) if y != 4]
    # Without base rows there is nothing diluting it; a cap bounds the factor; a topic with no answers gets none.
    assert balanced(TrainingRows([], answers, [], []), 5, 2.0, cap=10.0).boost == {}
    assert balanced(rows, 5, 2.0, cap=1.5).boost == {4: 1.5}
    assert balanced(rows, 6, 2.0, cap=10.0).boost.keys() == {4}
    # After a split the parent's base rows allow both children: neither is answer-taught.
    split = [Example(f"base {i}", 2, allowed=(2, 4)) if i % 4 == 2 else Example(f"base {i}", i % 4) for i in range(1000)]
    assert balanced(TrainingRows(split, answers, [], []), 5, 2.0, cap=10.0).boost == {}
