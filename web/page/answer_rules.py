"""How the page reads an answer: the topics it may name, the ids of what was shown, texts fit to quote (to store: web.server.serving.storable)."""

from __future__ import annotations

import hmac
import secrets
from typing import Any

from core.taxonomy import CONFIRM_ANSWER, Taxonomy
from web.server.topics import key_for

RIGHT = CONFIRM_ANSWER  # the answer that confirms the prediction on screen (no topic may be named so)
# "None of these": no topic fits (`UnlistedAnswers.record`). Topic names never hold "|", so no topic is named
# so; on Classify the missing topic's name, if one was typed, follows the mark.
NONE = "|none|"
NONE_WORDS = "None of these"


def undone_words(undone: dict[str, Any], taxonomy: Taxonomy) -> str:
    """What an undone answer said, in words: its topic's name, or "None of these" (and the name given)."""
    if undone.get("unlisted"):
        return NONE_WORDS + (f" (missing: {undone['name']})" if undone.get("name") else "")
    return taxonomy.name_of(str(undone["user_label"]))


def snippet(text: str, words: int = 8) -> str:
    """The first words of an article, quoted, so a message names the article it is about."""
    parts = " ".join(text.split()).split(" ")
    return "“" + " ".join(parts[:words]) + ("…" if len(parts) > words else "") + "”"


def topic_of(label: object, taxonomy: Taxonomy) -> str | None:
    """The current key a button's or API caller's label names (a topic of `taxonomy`, by name or key), RIGHT, or
    None."""
    return RIGHT if label == RIGHT else key_for(label, taxonomy)


def new_shown_id() -> str:
    """A fresh id for something put on a tab's screen (a prediction, a queue item): random, never reused."""
    return secrets.token_urlsafe(12)


def names_shown(given: object, shown: object) -> bool:
    """Whether the id a client sent is the one the server issued for what is on screen (never an empty one)."""
    return isinstance(given, str) and isinstance(shown, str) and bool(shown) and hmac.compare_digest(given, shown)
