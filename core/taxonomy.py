"""The topic set as data: versioned topics, the changes between versions, and what an old label means today.

A topic has a stable `key` (what answers, data rows and models store) and a display `name` (what people see). A
rename changes only the name, so old answers follow it. A merge and a split change which keys exist, so a label
stored under an older version is read through the changes since: a merged topic's label becomes its target's,
and a split parent's label becomes the set "parent or child" (an allowed set, not a guess).

Pure: no I/O. The feedback store keeps the versions; everything else reads them through `Taxonomy`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

MIN_TOPICS = 2
MAX_TOPICS = 50
MAX_NAME_CHARS = 40
MAX_DESCRIPTION_CHARS = 200
# How the pages and the command line mark a topic the serving model does not predict yet (`Taxonomy.learning`).
LEARNING = "new: the model is still learning it"
CONFIRM_ANSWER = "Right"  # the page's answer that confirms the prediction on screen; no topic may take its name

ChangeKind = Literal["start", "add", "rename", "merge", "split", "describe"]

# Spellings people use for the AG News topic whose key has a slash; only used while that key exists.
_KEY_ALIASES = {"sci-tech": "Sci/Tech", "scitech": "Sci/Tech", "sci_tech": "Sci/Tech",
                "science/technology": "Sci/Tech"}


class TaxonomyError(ValueError):
    """A change or a name the taxonomy refuses; the message says why in plain words."""


class UnknownTopicError(TaxonomyError):
    """A label that names no topic of the taxonomy."""


class TaxonomyConflict(TaxonomyError):
    """The taxonomy changed since the version a change was planned on (another maintainer was first)."""


@dataclass(frozen=True)
class Topic:
    key: str  # stable: stored in answers, data rows and models; the name it was created with
    name: str  # shown to people; a rename changes only this
    description: str = ""


@dataclass(frozen=True)
class Change:
    """One step from a taxonomy version to the next."""

    kind: ChangeKind
    topic: str = ""  # the key acted on: renamed, merged away, split, described
    into: str = ""  # merge: the key that absorbs `topic`
    key: str = ""  # add, split: the new topic's key
    name: str = ""  # add, split: the new topic's name; rename: the new name
    description: str = ""

    def to_dict(self) -> dict[str, str]:
        return {k: v for k, v in asdict(self).items() if v}


@dataclass(frozen=True)
class TaxonomyVersion:
    version: int
    topics: tuple[Topic, ...]
    change: Change
    by: str = ""
    at: str = ""  # ISO 8601, UTC
    why: str = ""

    def to_row(self) -> dict[str, object]:
        return {"version": self.version, "topics": json.dumps([asdict(t) for t in self.topics]),
                "change": json.dumps(self.change.to_dict()), "created_by": self.by, "created_at": self.at,
                "why": self.why}

    @classmethod
    def from_row(cls, row: dict) -> TaxonomyVersion:
        topics = tuple(Topic(**t) for t in json.loads(row["topics"]))
        return cls(int(row["version"]), topics, Change(**json.loads(row["change"])),
                   row.get("created_by") or "", row.get("created_at") or "", row.get("why") or "")


# Letters of other scripts drawn like Latin ones (from Unicode's confusables, UTS #39): Cyrillic and Greek, the two
# scripts whose letters pass for Latin ones in a topic list. Both cases are listed: casefolding first would lose the
# look of a capital (Greek "Ν" is an N, its small "ν" a v). Other scripts' look-alikes are caught by the mixed-script
# rule below (a name may not mix Latin, Cyrillic and Greek letters) or are far from any name a maintainer reads.
_LOOK_ALIKES = str.maketrans({
    **dict(zip("АВЕЅІЈКМНОРСТХУԚԜ", "ABESIJKMHOPCTXYQW", strict=True)),
    **dict(zip("аеѕіјԁһӏорсухԛԝ", "aesijdhlopcyxqw", strict=True)),
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHIKMNOPTYX", strict=True)),
    **dict(zip("αικνορυχ", "aikvopux", strict=True)),
})
_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")  # the scripts whose letters look alike


def name_skeleton(name: str) -> str:
    """What a name looks like, for telling whether two names would pass for each other: compatibility forms
    unfolded (NFKD: full-width and styled letters become plain ones), accents and other combining marks dropped,
    Cyrillic and Greek look-alikes read as the Latin letters they resemble, case folded, spacing collapsed.
    "Wоrld" (a Cyrillic o), "Ｗｏｒｌｄ" and "Wórld" all read "world"."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    return " ".join(plain.translate(_LOOK_ALIKES).casefold().split())


def _scripts(name: str) -> list[str]:
    """The look-alike scripts (_SCRIPTS) whose letters `name` uses."""
    found = {unicodedata.name(c, "").split(" ", 1)[0] for c in name if c.isalpha()}
    return [script.title() for script in _SCRIPTS if script in found]


def check_name(value: object) -> str:
    """A topic name, trimmed and normalised (NFKC): 1-40 printable characters of one script, not a number, no '|',
    nothing that reads as a reserved answer."""
    if not isinstance(value, str):
        raise TaxonomyError(f"a topic name must be text, not {type(value).__name__}")
    name = " ".join(unicodedata.normalize("NFKC", value).split())
    if not name:
        raise TaxonomyError("a topic name cannot be empty")
    if len(name) > MAX_NAME_CHARS:
        raise TaxonomyError(f"a topic name has at most {MAX_NAME_CHARS} characters; {name[:20]!r}... has {len(name)}")
    if not name.isprintable():
        raise TaxonomyError(f"a topic name must be printable characters only: {name!r}")
    if re.fullmatch(r"[+-]?\d+([.,]\d+)?", name):
        raise TaxonomyError(f"a topic name cannot be a number ({name!r}): numbers pick topics by position")
    if "|" in name:  # a model's ONNX metadata lists its topics joined by "|"
        raise TaxonomyError(f"a topic name cannot contain '|': {name!r}")
    if len(scripts := _scripts(name)) > 1:
        raise TaxonomyError(f"a topic name cannot mix {' and '.join(scripts)} letters ({name!r}): they look alike, "
                            "so the name could pass for another")
    if name_skeleton(name) == name_skeleton(CONFIRM_ANSWER):
        raise TaxonomyError(f"{name!r} cannot be a topic: it reads as the page's \"{CONFIRM_ANSWER}\" button, which "
                            "confirms the model's answer")
    return name


def check_description(value: object) -> str:
    text = " ".join(str(value or "").split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise TaxonomyError(f"a topic description has at most {MAX_DESCRIPTION_CHARS} characters, not {len(text)}")
    return text


@dataclass(frozen=True)
class Taxonomy:
    """Every version so far, oldest first; the last one is current."""

    versions: tuple[TaxonomyVersion, ...]
    _by_key: dict[str, Topic] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.versions:
            raise TaxonomyError("a taxonomy has at least one version")
        object.__setattr__(self, "_by_key", {t.key: t for t in self.current.topics})

    # --- reading -------------------------------------------------------------------------------------------------
    @property
    def current(self) -> TaxonomyVersion:
        return self.versions[-1]

    @property
    def version(self) -> int:
        return self.current.version

    @property
    def topics(self) -> tuple[Topic, ...]:
        return self.current.topics

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.topics)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.topics)

    def name_of(self, key: str) -> str:
        """The name to show for a key: its current name, or its last name if it was merged away."""
        if key in self._by_key:
            return self._by_key[key].name
        for v in reversed(self.versions):
            for t in v.topics:
                if t.key == key:
                    return t.name
        return key

    def learning(self, model_labels: Iterable[str]) -> tuple[str, ...]:
        """The current topics the given model does not predict (shown as LEARNING)."""
        known = set(model_labels)
        return tuple(k for k in self.keys if k not in known)

    def key_of(self, value: object) -> str:
        """The current key a label names: a current name or key (any case), a former name of a renamed topic,
        or a 0-based position. A merged-away topic's name means the topic it was merged into; a split parent's
        former name, if the parent was renamed, still means the parent."""
        if isinstance(value, bool):
            raise UnknownTopicError(f"unknown topic {value!r}; expected one of {', '.join(self.names)}")
        if isinstance(value, int):
            return self._at(value, value)
        text = " ".join(str(value).split())
        if len(text) <= 4 and text.isascii() and text.lstrip("-").isdecimal():
            return self._at(int(text), value)
        folded = text.casefold()
        for t in self.topics:  # names before keys: a key is hidden, a name is what people type
            if folded == t.name.casefold():
                return t.key
        for t in self.topics:
            if folded == t.key.casefold():
                return t.key
        alias = _KEY_ALIASES.get(folded)
        if alias in self._by_key:
            return alias
        for v in reversed(self.versions[:-1]):  # a former name or key
            for t in v.topics:
                if folded in (t.key.casefold(), t.name.casefold()):
                    now = self.allowed(t.key, v.version)
                    if len(now) == 1:
                        return next(iter(now))
                    names = " or ".join(self.name_of(k) for k in sorted(now, key=self.keys.index))
                    raise UnknownTopicError(f"{text!r} was split into {names}; answer one of them")
        raise UnknownTopicError(f"unknown topic {value!r}; expected one of {', '.join(self.names)}")

    def _at(self, index: int, value: object) -> str:
        if not 0 <= index < len(self.topics):
            raise UnknownTopicError(f"topic {value!r} is out of range; expected 0-{len(self.topics) - 1} or a topic name")
        return self.topics[index].key

    def allowed(self, key: str, version: int | None = None) -> frozenset[str]:
        """The current keys a label `key`, given under taxonomy `version` (None: the first), may mean now.

        A key no version knew (an answer stored before taxonomies, naming a model's own label) is read as itself
        if it is current, else as no topic at all (the empty set: the row trains nothing)."""
        start = version or 1
        labels = {key}
        for v in self.versions:
            if v.version <= start:
                continue
            c = v.change
            if c.kind == "merge" and c.topic in labels:
                labels = (labels - {c.topic}) | {c.into}
            elif c.kind == "split" and c.topic in labels:
                labels = labels | {c.key}
        return frozenset(k for k in labels if k in self._by_key)

    def indices(self, key: str, version: int | None = None) -> tuple[int, ...]:
        """`allowed`, as positions in the current topic order (what training's targets index)."""
        return tuple(sorted(self.keys.index(k) for k in self.allowed(key, version)))

    def exact(self, key: str, version: int | None = None) -> str | None:
        """The one current key a label means, or None if it is now a set (or nothing)."""
        now = self.allowed(key, version)
        return next(iter(now)) if len(now) == 1 else None

    # --- changing (each returns a new Taxonomy with one more version) ---------------------------------------------
    def add(self, name: object, description: object = "", **who: str) -> Taxonomy:
        topic = self._new_topic(name, description)
        return self._next((*self.topics, topic),
                          Change("add", key=topic.key, name=topic.name, description=topic.description), who)

    def rename(self, topic: object, name: object, **who: str) -> Taxonomy:
        key = self.key_of(topic)
        new = check_name(name)
        if new == self._by_key[key].name:
            raise TaxonomyError(f"{new!r} is already the topic's name")
        self._check_free(new, besides=key)
        topics = tuple(replace(t, name=new) if t.key == key else t for t in self.topics)
        return self._next(topics, Change("rename", topic=key, name=new), who)

    def describe(self, topic: object, description: object, **who: str) -> Taxonomy:
        key = self.key_of(topic)
        text = check_description(description)
        topics = tuple(replace(t, description=text) if t.key == key else t for t in self.topics)
        return self._next(topics, Change("describe", topic=key, description=text), who)

    def merge(self, topic: object, into: object, **who: str) -> Taxonomy:
        source, target = self.key_of(topic), self.key_of(into)
        if source == target:
            raise TaxonomyError("a topic cannot be merged into itself")
        if len(self.topics) - 1 < MIN_TOPICS:
            raise TaxonomyError(f"a merge would leave {len(self.topics) - 1} topic; a taxonomy needs at least {MIN_TOPICS}")
        topics = tuple(t for t in self.topics if t.key != source)
        return self._next(topics, Change("merge", topic=source, into=target), who)

    def split(self, topic: object, name: object, description: object = "", **who: str) -> Taxonomy:
        """Carve a new topic `name` out of `topic`; the new topic comes right after its parent."""
        parent = self.key_of(topic)
        child = self._new_topic(name, description)
        at = self.keys.index(parent) + 1
        topics = (*self.topics[:at], child, *self.topics[at:])
        return self._next(topics, Change("split", topic=parent, key=child.key, name=child.name,
                                         description=child.description), who)

    def _new_topic(self, name: object, description: object) -> Topic:
        new = check_name(name)
        self._check_free(new)
        if len(self.topics) >= MAX_TOPICS:
            raise TaxonomyError(f"a taxonomy has at most {MAX_TOPICS} topics")
        return Topic(self._fresh_key(new), new, check_description(description))

    def _check_free(self, name: str, besides: str = "") -> None:
        """Refuse a name that reads as a current topic's (`name_skeleton`: case, accents and look-alike letters
        aside), so labellers never see two topics they cannot tell apart."""
        skeleton = name_skeleton(name)
        for t in self.topics:
            if t.key != besides and skeleton == name_skeleton(t.name):
                same = name.casefold() == t.name.casefold()
                raise TaxonomyError(f"there is already a topic named {t.name!r}" if same else
                                    f"{name!r} reads as the topic {t.name!r} (letters that look alike count as one)")

    def _fresh_key(self, name: str) -> str:
        """The new topic's key: its name, unless some version ever used that key for another topic."""
        used = {t.key.casefold() for v in self.versions for t in v.topics}
        key, n = name, 2
        while key.casefold() in used:
            key, n = f"{name} ({n})", n + 1
        return key

    def _next(self, topics: tuple[Topic, ...], change: Change, who: dict[str, str]) -> Taxonomy:
        step = TaxonomyVersion(self.version + 1, topics, change, who.get("by", ""), who.get("at", ""), who.get("why", ""))
        return Taxonomy((*self.versions, step))


def starting(labels: Sequence[str], *, by: str = "", at: str = "", why: str = "") -> Taxonomy:
    """Version 1: the given labels (a champion's), each its own key and name, spelled as the model spells them
    (only checked: a label normalised here would no longer be the model's key)."""
    names = [" ".join(label.split()) for label in labels if check_name(label)]
    if len({n.casefold() for n in names}) != len(names):
        raise TaxonomyError(f"topic names must be unique ignoring case: {', '.join(names)}")
    if not MIN_TOPICS <= len(names) <= MAX_TOPICS:
        raise TaxonomyError(f"a taxonomy has {MIN_TOPICS} to {MAX_TOPICS} topics, not {len(names)}")
    return Taxonomy((TaxonomyVersion(1, tuple(Topic(n, n) for n in names), Change("start"), by, at,
                                     why or "the champion's topics"),))


def from_rows(rows: Iterable[dict]) -> Taxonomy:
    return Taxonomy(tuple(sorted((TaxonomyVersion.from_row(r) for r in rows), key=lambda v: v.version)))
