from __future__ import annotations

import pytest

from core.labels import LABELS, UnknownLabelError, label_index
from core.text import clean_text, join_title, text_hash


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Microsoft #39;s new plan", "Microsoft's new plan"),
        ("He said  quot;no quot; again", 'He said "no" again'),
        ("Shares rose to \\$46.20 today", "Shares rose to $46.20 today"),
        ("Wall Street's dwindling\\band of cynics", "Wall Street's dwindling band of cynics"),
        ("AT&amp;T &lt;b&gt;wins&lt;/b&gt; bid", "AT&T wins bid"),
        ("tabs\tand\nnew\r\nlines\x00nul", "tabs and new lines nul"),
        ("   ", ""),
        ("Emoji 🚀 and العربية stay", "Emoji 🚀 and العربية stay"),
        # Format characters (category Cf) in otherwise printable text still go.
        ("zero\u200bwidth and soft\u00adhyphen", "zero width and soft hyphen"),
        ("no\u00a0break", "no break"),
    ],
)
def test_clean_text_undoes_corpus_artifacts(raw: str, expected: str) -> None:
    assert clean_text(raw) == expected


def test_clean_text_is_idempotent() -> None:
    raw = "Oil \\$50 a barrel  #39;s record &amp; more"
    assert clean_text(clean_text(raw)) == clean_text(raw)


def test_join_title_matches_hub_text_field() -> None:
    assert join_title(" Title ", "Body text. ") == "Title Body text."


def test_text_hash_ignores_artifacts_and_case() -> None:
    assert text_hash("Oil at \\$50") == text_hash("oil at $50")
    assert text_hash("a") != text_hash("b")


def test_label_index_accepts_names_and_numbers() -> None:
    assert label_index("sports") == 1
    assert label_index("Sci/Tech") == 3
    assert label_index(4, one_based=True) == 3
    assert label_index("2") == 2
    assert [label_index(name) for name in LABELS] == [0, 1, 2, 3]


@pytest.mark.parametrize("bad", ["Weather", 5, "0", True, ""])
def test_label_index_rejects_unknown_labels(bad: object) -> None:
    with pytest.raises(UnknownLabelError):
        label_index(bad, one_based=True)
