"""Which input form a served text is, read from its shape alone: a headline, a description, or a whole article.

The model is validated per input form (core.data.InputForm) and reads them at different accuracies, so traffic is
estimated and watched per form. Served texts carry no form, so it is guessed, in this order:
1. a headline: at most HEADLINE_WORDS words and no sentence break (". " followed by more text);
2. a description: it opens with a dateline or a source ("LONDON (Reuters) - ", "AP - ", ": ");
3. a whole article (title + description, as AG News rows join them): a dateline or source marker (" - ",
   "(Reuters) -") after its first words, that is after a title; or, with no marker, a title-case opening (at
   least TITLE_CASE_SHARE of its first OPENING_WORDS words, small words aside, capitalised);
4. else a description.
Headlines are what traffic shifts to and are told apart well; a description and a whole article often are not
(an untitled description reads like an article). `python -m bench.estimate_shift` prints the rule's hits per true
form on validation rows.
"""

from __future__ import annotations

import re

from core.data import InputForm

# How a form is named where people and dashboards read it (the admin view, `status`, /metrics labels).
FORM_NAMES = {InputForm.TITLE.value: "headline", InputForm.BODY.value: "description", InputForm.FULL.value: "full"}
HEADLINE_WORDS = 14
OPENING_WORDS = 5
TITLE_CASE_SHARE = 0.75
_SMALL_WORDS = frozenset([
    "a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "of", "on", "or", "over", "the", "to",
    "up", "with", "vs", "via", "after", "amid",
])
_SENTENCE_BREAK = re.compile(r"[a-z]{2,}[.!?]\s+\S")  # "St. Bears" is no break
_DATELINE = re.compile(
    r"^(?:[A-Z][A-Z.'\-]+(?:[ ,]+[A-Z][A-Za-z.'\-]*){0,4}\s*(?:\([^)]*\))?\s*[-:]|\w[\w.]*(?: \w[\w.]*){0,2} - |:)"
)
_SOURCE_MARK = re.compile(r"\([A-Z][\w.\- ]{1,20}\)\s*[-:]|\s-\s|\s--\s")
_WORD = re.compile(r"\S+")


def guess_form(text: str) -> InputForm:
    """The input form `text` most likely is (the module's rule)."""
    text = text.strip()
    words = _WORD.findall(text)
    if len(words) <= HEADLINE_WORDS and not _SENTENCE_BREAK.search(text):
        return InputForm.TITLE
    if _DATELINE.match(text):
        return InputForm.BODY
    mark = _SOURCE_MARK.search(text)
    if mark and len(_WORD.findall(text[: mark.start()])) >= 3:
        return InputForm.FULL
    opening = [w for w in words[: OPENING_WORDS + 3] if w.lower() not in _SMALL_WORDS][:OPENING_WORDS]
    capitalised = sum(1 for w in opening if w[0].isupper() or w[0].isdigit())
    return InputForm.FULL if opening and capitalised / len(opening) >= TITLE_CASE_SHARE else InputForm.BODY
