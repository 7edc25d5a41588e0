"""The pure rules of core.taxonomy: names checked, keys stable, what an old label means across merges and splits,
former names, refusals."""

from __future__ import annotations

import pytest

from core.labels import LABELS
from core.taxonomy import (
    MAX_TOPICS,
    Taxonomy,
    TaxonomyError,
    UnknownTopicError,
    check_name,
    from_rows,
    name_skeleton,
    starting,
)


@pytest.fixture
def ag() -> Taxonomy:
    return starting(LABELS)


def test_version_one_is_the_champion_s_labels(ag: Taxonomy) -> None:
    assert (ag.version, ag.keys, ag.names) == (1, LABELS, LABELS)
    assert ag.current.change.kind == "start" and ag.learning(LABELS) == ()


@pytest.mark.parametrize(("raw", "name"), [("  Health ", "Health"), ("Climate   change", "Climate change"),
                                           ("x" * 40, "x" * 40), ("Élections", "Élections")])
def test_names_are_trimmed(raw: str, name: str) -> None:
    assert check_name(raw) == name


@pytest.mark.parametrize(("raw", "why"), [("", "empty"), ("   ", "empty"), ("x" * 41, "at most 40"),
                                          ("7", "number"), ("-2", "number"), ("3.5", "number"),
                                          ("bad\x00name", "printable"), (7, "must be text"),
                                          ("A|B", r"'\|'"), (" right ", "confirms the model's answer")])
def test_bad_names_are_refused(raw: object, why: str) -> None:
    with pytest.raises(TaxonomyError, match=why):
        check_name(raw)


@pytest.mark.parametrize(("raw", "why"), [
    ("W\u043erld", "cannot mix Latin and Cyrillic"),  # a Cyrillic o
    ("\uff37\uff4f\uff52\uff4c\uff44", "already a topic named 'World'"),  # full-width, NFKC: "World"
    ("Wo\u0301rld", "reads as the topic 'World'"),  # a combining accent
    ("\uff32\uff29\uff27\uff28\uff34", "reads as the page's \"Right\" button"),  # full-width RIGHT
    ("\u0412\u041e\u0422", "reads as the topic 'BOT'"),  # all Cyrillic: В, О, Т
])
def test_look_alike_names_are_refused_with_a_reason(raw: str, why: str) -> None:
    taxonomy = starting([*LABELS, "BOT"])
    with pytest.raises(TaxonomyError, match=why):
        taxonomy.add(raw)
    with pytest.raises(TaxonomyError, match=why):
        taxonomy.rename("Sports", raw)


def test_names_are_stored_normalised_and_other_scripts_are_welcome(ag: Taxonomy) -> None:
    assert ag.add("\uff28\uff45\uff41\uff4c\uff54\uff48").topics[-1].name == "Health"  # NFKC
    assert [ag.add(name).topics[-1].name for name in ("Caf\u00e9", "\u041c\u043e\u0441\u043a\u0432\u0430", "\u65e5\u672c")] == [
        "Caf\u00e9", "\u041c\u043e\u0441\u043a\u0432\u0430", "\u65e5\u672c"]
    assert name_skeleton("  W\u00d3rld ") == name_skeleton("world") == "world"
    assert starting(["Cafe\u0301", "B"]).keys == ("Cafe\u0301", "B")  # a model's labels keep their spelling: its keys


def test_starting_refuses_duplicates_and_too_few_or_many(ag: Taxonomy) -> None:
    with pytest.raises(TaxonomyError, match="unique ignoring case"):
        starting(["News", "news"])
    with pytest.raises(TaxonomyError, match="2 to 50"):
        starting(["Only"])
    with pytest.raises(TaxonomyError, match="2 to 50"):
        starting([f"Topic {i}" for i in range(MAX_TOPICS + 1)])


def test_key_of_reads_names_keys_aliases_and_positions(ag: Taxonomy) -> None:
    assert [ag.key_of(v) for v in ("sports", " Sci-Tech ", 0, "3", "BUSINESS")] == [
        "Sports", "Sci/Tech", "World", "Sci/Tech", "Business"]
    for bad in ("Weather", 4, "-1", True, None):
        with pytest.raises(UnknownTopicError):
            ag.key_of(bad)


def test_add_appends_a_topic_the_model_is_still_learning(ag: Taxonomy) -> None:
    added = ag.add(" Health ", "medicine", by="maya", why="desk")
    assert added.version == 2 and added.names[-1] == "Health" and added.topics[-1].description == "medicine"
    assert added.learning(LABELS) == ("Health",) and ag.names == LABELS  # the old taxonomy is unchanged
    assert (added.current.by, added.current.why) == ("maya", "desk")
    with pytest.raises(TaxonomyError, match="already a topic named 'World'"):
        ag.add("world")


def test_a_rename_keeps_the_key_and_the_former_name_still_reads(ag: Taxonomy) -> None:
    renamed = ag.rename("World", "International")
    assert renamed.keys == LABELS and renamed.name_of("World") == "International"
    assert renamed.key_of("World") == renamed.key_of("international") == "World"
    assert renamed.allowed("World", 1) == {"World"}
    with pytest.raises(TaxonomyError, match="already the topic's name"):
        renamed.rename("International", "International")
    with pytest.raises(TaxonomyError, match="already a topic named 'Sports'"):
        renamed.rename("International", "sports")
    # The old name is free again: a new topic may take it, with a key of its own.
    again = renamed.add("World")
    assert again.keys[-1] == "World (2)" and again.key_of("World") == "World (2)"


def test_a_merge_maps_old_labels_to_the_target(ag: Taxonomy) -> None:
    merged = ag.merge("Business", "World")
    assert merged.keys == ("World", "Sports", "Sci/Tech")
    assert merged.allowed("Business", 1) == {"World"} and merged.exact("Business", 1) == "World"
    assert merged.key_of("Business") == "World"  # the merged name means its target now
    assert merged.indices("Business", 1) == (0,)
    with pytest.raises(TaxonomyError, match="into itself"):
        ag.merge("World", "world")


def test_a_split_makes_earlier_labels_a_set_and_later_ones_exact(ag: Taxonomy) -> None:
    split = ag.split("Sci/Tech", "Science", "research")
    assert split.keys == ("World", "Sports", "Business", "Sci/Tech", "Science")  # the child right after its parent
    assert split.allowed("Sci/Tech", 1) == {"Sci/Tech", "Science"} and split.exact("Sci/Tech", 1) is None
    assert split.indices("Sci/Tech", 1) == (3, 4)
    assert split.allowed("Sci/Tech", 2) == {"Sci/Tech"} and split.allowed("Science", 2) == {"Science"}


def test_chains_of_merges_and_splits(ag: Taxonomy) -> None:
    chain = (ag.split("Sci/Tech", "Science")  # v2
             .merge("Business", "World")  # v3
             .merge("Science", "Sports")  # v4: the child goes elsewhere
             .split("World", "Health"))  # v5
    assert chain.keys == ("World", "Health", "Sports", "Sci/Tech")
    assert chain.allowed("Sci/Tech", 1) == {"Sci/Tech", "Sports"}  # before the split: parent or (merged) child
    assert chain.allowed("Sci/Tech", 2) == {"Sci/Tech"}
    assert chain.allowed("Business", 1) == {"World", "Health"}  # merged into World, which split later
    assert chain.allowed("World", 4) == {"World", "Health"}  # World before its split
    assert chain.allowed("World", 5) == {"World"} and chain.allowed("Health", 5) == {"Health"}
    assert chain.allowed("Weather", 1) == frozenset()  # never a topic: means nothing


def test_a_split_topic_s_old_name_asks_which(ag: Taxonomy) -> None:
    chain = ag.rename("Sci/Tech", "Tech").split("Tech", "Science").rename("Tech", "Technology")
    assert chain.key_of("Tech") == "Sci/Tech"  # the parent's former name still means the parent


def test_refusals_say_why(ag: Taxonomy) -> None:
    two = starting(["A", "B"])
    with pytest.raises(TaxonomyError, match="at least 2"):
        two.merge("A", "B")
    with pytest.raises(UnknownTopicError, match="expected one of A, B"):
        two.rename("C", "D")
    with pytest.raises(UnknownTopicError):
        ag.split("Weather", "Storms")
    full = starting([f"T{i}" for i in range(MAX_TOPICS)])
    with pytest.raises(TaxonomyError, match=f"at most {MAX_TOPICS}"):
        full.add("One more")


def test_versions_round_trip_through_rows(ag: Taxonomy) -> None:
    chain = ag.add("Health", "medicine", by="maya", at="2026-01-01T00:00:00+00:00", why="desk").merge("Business", "World")
    again = from_rows(v.to_row() for v in reversed(chain.versions))
    assert again == chain and again.allowed("Business", 1) == {"World"}
