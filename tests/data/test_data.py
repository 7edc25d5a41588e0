from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from core.data import (
    DataSourceError,
    Example,
    InputForm,
    as_form,
    dedupe,
    in_form,
    is_validation,
    load_corpus,
    load_corpus_or_seed,
    load_seed,
    read_csv,
    read_labelled,
    source_labels,
    split_by_hash,
)
from core.host.net import free_port
from core.labels import LABELS
from core.text import text_hash
from testkit.data import SHARED_AG_NEWS


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_read_csv_with_header_and_title_description(tmp_path: Path) -> None:
    f = write(tmp_path / "a.csv", 'label,title,description\n3,Stocks up,"Markets rose \\$5, a lot"\n2,Win,Team won\n')
    assert read_csv(f) == [Example("Stocks up Markets rose $5, a lot", 2), Example("Win Team won", 1)]


def test_read_csv_without_header_like_the_original_files(tmp_path: Path) -> None:
    f = write(tmp_path / "a.csv", '"1","Talks","Leaders met"\n"4","Chip","New chip"\n')
    assert [e.label for e in read_csv(f)] == [0, 3]


def test_read_csv_label_text_form(tmp_path: Path) -> None:
    f = write(tmp_path / "a.csv", "label,text\n4,Rocket launch delayed\n")
    assert read_csv(f) == [Example("Rocket launch delayed", 3)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("label,title,description\n5,a,b\n", r"a.csv:2: .*out of range"),
        ("label,title,description\n1,a\n", r"a.csv:2: expected 3 fields"),
        ("label,title,description\n1, , \n", r"a.csv:2: empty text"),
        ("name,body\nx,y\n", "expected columns"),
        ("", "is empty"),
    ],
)
def test_malformed_csv_names_file_line_and_problem(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message):
        read_csv(write(tmp_path / "a.csv", content))


def test_invalid_utf8_csv_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"label,text\n1,\xff\xfe bad\n")
    with pytest.raises(DataSourceError, match="UTF-8"):
        read_csv(path)


def test_split_is_deterministic_and_disjoint() -> None:
    examples = [Example(f"article number {i}", i % 4) for i in range(2000)]
    train_a, val_a = split_by_hash(examples, 0.1)
    train_b, val_b = split_by_hash(list(reversed(examples)), 0.1)
    assert {e.text for e in val_a} == {e.text for e in val_b}
    assert not {e.text for e in train_a} & {e.text for e in val_a}
    assert 140 < len(val_a) < 260  # about 10%


def test_salted_split_is_independent_of_the_validation_split() -> None:
    # The feedback holdout is drawn from texts that mostly passed the validation split already (training
    # rows): unsalted, a 25% split of them would be skewed (it overlaps the 10% they were chosen to avoid).
    examples = [Example(f"article number {i}", i % 4) for i in range(4000)]
    train, _ = split_by_hash(examples, 0.1)
    _, unsalted = split_by_hash(train, 0.25)
    kept, salted = split_by_hash(train, 0.25, salt="feedback-holdout")
    assert len(unsalted) < 0.2 * len(train)  # the bias being fixed: about 15/90 instead of 25%
    assert 0.22 * len(train) < len(salted) < 0.28 * len(train)
    assert not {e.text for e in kept} & {e.text for e in salted}
    assert split_by_hash(list(reversed(train)), 0.25, salt="feedback-holdout")[1] == salted[::-1]


def test_dedupe_drops_repeats_and_held_out_texts() -> None:
    rows = [Example("A b", 0), Example("a B", 0), Example("c", 1)]
    assert dedupe(rows, exclude=[Example("c", 1)]) == [Example("A b", 0)]


def test_missing_source_gives_clear_message(tmp_path: Path) -> None:
    with pytest.raises(DataSourceError, match="does not exist"):
        load_corpus(str(tmp_path / "nope.csv"))
    with pytest.raises(DataSourceError, match="no train.csv"):
        load_corpus(str(tmp_path))


def test_unreachable_hub_dataset_names_the_problem_and_falls_back_to_seed() -> None:
    # conftest sets HF_DATASETS_OFFLINE=1, so the hub is unreachable as on this machine.
    with pytest.raises(DataSourceError, match="NEWSLOOP_DATA"):
        load_corpus("no-such-user/no-such-dataset")
    corpus = load_corpus_or_seed("no-such-user/no-such-dataset")
    # What it read says whose place it took: previews and searches show the description.
    assert corpus.description.startswith("seed") and "in place of no-such-user/no-such-dataset" in corpus.description


def test_an_unreachable_hub_is_said_at_once_in_one_line_without_the_hub_library(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The hub library retries five times (about 25 s) before it gives up; a closed port is said at once instead,
    and the datasets library is never asked when no copy is cached."""
    import builtins

    from core import data

    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    real_import = builtins.__import__

    def no_datasets(name: str, *args: object, **kwargs: object) -> object:
        assert name != "datasets", "the hub library was asked although the hub cannot be reached"
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with caplog.at_level("WARNING", logger="core.data"):
        corpus = data.load_corpus_or_seed("ag_news")
    assert corpus.labels == LABELS and "in place of ag_news" in corpus.description
    [line] = [r.getMessage() for r in caplog.records]
    assert "hub cannot be reached (127.0.0.1:" in line and "seed set (260 rows)" in line and "\n" not in line


def test_the_hub_probe_gives_up_after_its_timeout_even_on_a_silent_host(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import threading

    from core.host.net import unreachable

    released = threading.Event()

    def silent(*args: object, **kwargs: object) -> None:  # a name lookup or a SYN nobody answers
        released.wait(10)
        raise OSError("too late")

    monkeypatch.setattr(socket, "create_connection", silent)
    try:
        assert unreachable("https://huggingface.co", 0.05) == "huggingface.co:443 did not answer within 0.05 s"
    finally:
        released.set()


def test_folder_source_adds_extras_to_train_only(tmp_path: Path) -> None:
    rows = "".join(f'{i % 4 + 1},Title {i},Body of article {i}\n' for i in range(400))
    write(tmp_path / "train.csv", "label,title,description\n" + rows)
    write(tmp_path / "train_extra.csv", "label,text\n" + "".join(f"{i % 4 + 1},extra text {i}\n" for i in range(50)))
    corpus = load_corpus(str(tmp_path), 0.1, use_extra=True)
    assert sum("extra text" in e.text for e in corpus.train) == 50
    assert not any("extra text" in e.text for e in corpus.validation)
    assert len(load_corpus(str(tmp_path), 0.1, use_extra=False).train) == len(corpus.train) - 50
    # The description reaches the page: it names the data set, never the server's path to it.
    assert corpus.description.startswith(f"{tmp_path.name}: train.csv")
    assert str(tmp_path.parent) not in corpus.description


def test_seed_set_has_every_topic_and_no_duplicates() -> None:
    corpus = load_seed()
    rows = corpus.train + corpus.validation
    counts = Counter(e.label for e in rows)
    assert len(rows) >= 200
    assert all(counts[i] >= 50 for i in range(len(LABELS)))
    assert len({text_hash(e.text) for e in rows}) == len(rows)


@pytest.mark.skipif(not (SHARED_AG_NEWS / "train.csv").is_file(), reason="shared AG News data not present")
def test_shared_ag_news_data_is_sound() -> None:
    corpus = load_corpus(str(SHARED_AG_NEWS), 0.1, use_extra=True)
    assert {e.label for e in corpus.validation} == set(range(len(LABELS)))
    assert all(e.text.strip() for e in corpus.train + corpus.validation)
    train_hashes = {text_hash(e.text) for e in corpus.train}
    assert not train_hashes & {text_hash(e.text) for e in corpus.validation}
    assert 1200 < len(corpus.validation) < 2000
    assert len(corpus.train) > 20_000


def test_title_and_body_are_kept_apart_and_read_as_input_forms(tmp_path: Path) -> None:
    f = write(tmp_path / "a.csv", 'label,title,description\n3,It #39;s up,"Markets rose \\$5"\n4,Chip,New chip\n')
    rows = read_csv(f)
    assert [as_form(e, InputForm.TITLE) for e in rows] == [Example("It's up", 2), Example("Chip", 3)]
    assert in_form(rows, InputForm.BODY) == [Example("Markets rose $5", 2), Example("New chip", 3)]
    assert in_form(rows, InputForm.FULL) == rows
    # Rows read as label,text have no title of their own: they have the full form only.
    text_only = read_csv(write(tmp_path / "b.csv", "label,text\n4,Rocket launch delayed\n"))
    assert in_form(text_only, InputForm.TITLE) == [] and in_form(text_only, InputForm.FULL) == text_only


# --- named topics: a CSV of your own ------------------------------------------------------------------------------

def named_rows(names: list[str], per_topic: int = 30) -> str:
    return "".join(f"{name},Article {i} about {name.strip().lower()} number {i}\n"
                   for i in range(per_topic) for name in names)


def test_a_file_of_names_has_its_own_topics_in_order_of_first_appearance(tmp_path: Path) -> None:
    f = write(tmp_path / "own.csv", "label,text\n Politics ,Vote count begins\nSport,Cup final tonight\n"
                                    "sport,Striker signs\nMoney,Shares fall\n")
    [rows], labels = read_labelled([f])
    assert labels == ("Politics", "Sport", "Money")  # trimmed; "sport" is "Sport": names are one topic ignoring case
    assert [e.label for e in rows] == [0, 1, 1, 2]
    assert read_csv(f) == rows


def test_a_file_of_names_with_title_and_description(tmp_path: Path) -> None:
    f = write(tmp_path / "own.csv", "label,title,description\nHealth,Flu season,Clinics fill up\nClimate,Heat,Records\n")
    [rows], labels = read_labelled([f])
    assert labels == ("Health", "Climate")
    assert rows[0] == Example("Flu season Clinics fill up", 0) and rows[0].title == "Flu season"


def test_the_four_ag_news_names_read_as_ag_news_in_its_order(tmp_path: Path) -> None:
    f = write(tmp_path / "ag.csv", "label,text\nsports,Goal\nSci/Tech,Chip\nWorld,Talks\nbusiness,Shares\n")
    [rows], labels = read_labelled([f])
    assert labels == LABELS
    assert [e.label for e in rows] == [1, 3, 0, 2]


def test_a_numbered_file_keeps_the_ag_news_topics(tmp_path: Path) -> None:
    [rows], labels = read_labelled([write(tmp_path / "a.csv", "label,text\n2,Goal\n4,Chip\n")])
    assert labels == LABELS and [e.label for e in rows] == [1, 3]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("label,text\nSport,a\nSport,b\n", r"own.csv names 1 topic \(Sport\); a source needs at least 2"),
        ("label,text\nSport,a\n ,b\n", r"own.csv:3: empty label"),
        ("label,text\nSport,a\n2,b\n", r"own.csv:3: label '2' in a source whose labels are topic names"),
        ("label,text\n2,a\nSport,b\n", r"own.csv:3: label 'Sport' in a source whose labels are numbers"),
        ("label,text\nSport,a\n1.5,b\n", r"own.csv:3: a topic name cannot be a number"),
        ("label,text\nSport,a\n" + "x" * 41 + ",b\n", r"own.csv:3: a topic name has at most 40 characters"),
        ("Sport,a\nMoney,b\n", r"expected columns .* starts with that header line"),
    ],
)
def test_bad_named_labels_are_refused_naming_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message):
        read_labelled([write(tmp_path / "own.csv", content)])


def test_more_than_fifty_topics_are_refused_at_the_fifty_first(tmp_path: Path) -> None:
    rows = "".join(f"Topic {i},text {i}\n" for i in range(51))
    with pytest.raises(DataSourceError, match=r"own.csv:52: 'Topic 50' would be topic 51; a source has at most 50"):
        read_labelled([write(tmp_path / "own.csv", "label,text\n" + rows)])
    fifty = "".join(f"Topic {i},text {i}\n" for i in range(50))
    assert len(read_labelled([write(tmp_path / "own.csv", "label,text\n" + fifty)])[1]) == 50


def test_a_csv_file_of_names_is_a_corpus_split_by_hash(tmp_path: Path) -> None:
    f = write(tmp_path / "own.csv", "label,text\n" + named_rows(["Politics", "Sport", "Money"], 100))
    corpus = load_corpus(str(f), 0.1)
    assert corpus.labels == ("Politics", "Sport", "Money")
    everything = corpus.train + corpus.validation
    assert len(everything) == 300 and {e.label for e in everything} == {0, 1, 2}
    expected = {e.text for e in read_csv(f) if is_validation(e.text, 0.1)}
    assert {e.text for e in corpus.validation} == expected and 10 < len(expected) < 60
    assert source_labels(str(f)) == corpus.labels


def test_a_folder_of_names_shares_one_topic_list_across_its_files(tmp_path: Path) -> None:
    write(tmp_path / "train.csv", "label,text\n" + named_rows(["Politics", "Sport"], 100))
    write(tmp_path / "train_more.csv", "label,text\nMoney,Extra money row\nsport,Extra sport row\n")
    write(tmp_path / "test.csv", "label,text\nmoney,Held out money row\n")
    corpus = load_corpus(str(tmp_path), 0.1, use_extra=True)
    assert corpus.labels == ("Politics", "Sport", "Money")
    assert Example("Extra sport row", 1) in corpus.train and corpus.test == [Example("Held out money row", 2)]
    assert source_labels(str(tmp_path)) == corpus.labels
    # One file of the folder read on its own (to name rows, say) may hold a single topic.
    write(tmp_path / "train_more.csv", "label,text\nMoney,Extra money row\n")
    assert read_csv(tmp_path / "train_more.csv") == [Example("Extra money row", 0)]
    assert load_corpus(str(tmp_path), 0.1, use_extra=True).labels == ("Politics", "Sport", "Money")
    # A file that mixes numbers with the names of another file of the same source is refused.
    write(tmp_path / "test.csv", "label,text\n3,Held out money row\n")
    with pytest.raises(DataSourceError, match=r"test.csv:2: label '3' in a source whose labels are topic names"):
        load_corpus(str(tmp_path), 0.1, use_extra=True)


def test_source_labels_without_files_are_the_ag_news_four(tmp_path: Path) -> None:
    assert source_labels("seed") == LABELS
    assert source_labels("ag_news") == LABELS  # a hub id: nothing is downloaded to say so
    assert load_seed().labels == LABELS
    # A path that is not there may name any topics: it is refused, never read as AG News.
    with pytest.raises(DataSourceError, match="missing.csv does not exist"):
        source_labels(str(tmp_path / "missing.csv"))


def test_a_file_that_is_there_but_refused_is_not_replaced_by_the_seed_set(tmp_path: Path) -> None:
    broken = write(tmp_path / "broken.csv", "label,text\nSport,a\n")
    with pytest.raises(DataSourceError, match="names 1 topic"):
        load_corpus_or_seed(str(broken))
    with pytest.raises(DataSourceError, match="names 1 topic"):
        source_labels(str(broken))
    with pytest.raises(DataSourceError, match="does not exist"):  # nor is a file that is not there
        load_corpus_or_seed(str(tmp_path / "missing.csv"))
