"""Where the offline AG News CSVs lie for tests (NEWSLOOP_TEST_AG_NEWS, else ../shared/data/ag_news)."""

from __future__ import annotations

import os
from pathlib import Path

from core.settings.config import PROJECT_ROOT

SHARED_AG_NEWS = Path(os.environ.get("NEWSLOOP_TEST_AG_NEWS", PROJECT_ROOT.parent / "shared" / "data" / "ag_news"))

# The seed set's first three AG News topics by names of their own (its Sci/Tech rows left out): data of your own
# topics for tests (tests/e2e/test_own_topics.py, tests/unit/test_own_topics.py).
OWN_TOPICS = {"1": "Politics", "2": "Sport", "3": "Money"}


def own_topics_csv(path: Path) -> Path:
    """Write the seed rows of three topics to `path`, each labelled by a name instead of AG News's number."""
    import csv

    from core.settings.config import SEED_CSV

    with SEED_CSV.open(newline="", encoding="utf-8") as source, path.open("w", newline="", encoding="utf-8") as out:
        rows = csv.reader(source)
        writer = csv.writer(out)
        writer.writerow(next(rows))  # label,title,description
        writer.writerows([OWN_TOPICS[label], title, body] for label, title, body in rows if label in OWN_TOPICS)
    return path


# A newsroom's own three topics, none of them AG News's, with articles written from these parts (no AG News text):
# the data of the new user's walk (tests/e2e/test_browser_own_topics_walk.py) and its screenshots.
NEWSROOM_TOPICS = ("Weather", "Elections", "Football")
_PLACES = ("Northport", "the valley", "the coast", "Lakeside", "the capital", "Eastfield", "the islands", "Riverton")
_NEWSROOM = {
    "Weather": ("{place} braces for heavy rain as a storm front moves in from the west",
                "Forecasters warn of {n} centimetres of snow in {place} by the weekend",
                "Heatwave pushes temperatures past {n} degrees in {place} for a third day",
                "Flood warnings stay in place along the river near {place} after a wet night",
                "Fog delays morning ferries at {place}; sunshine expected by the afternoon"),
    "Elections": ("Turnout reaches {n} percent in {place} as polling stations close",
                  "Candidates in {place} hold a final debate before Sunday's vote",
                  "Early count puts the incumbent mayor of {place} narrowly ahead",
                  "Postal ballots in {place} will be counted by hand, the electoral office says",
                  "Recount ordered in {place} after a margin of {n} votes"),
    "Football": ("{place} United win {n}-1 with a late header in the cup replay",
                 "Striker signs a three-year deal with {place} Rovers before the window closes",
                 "Coach rests four players as {place} face the league leaders on Saturday",
                 "Penalty shoot-out sends {place} through to the regional final",
                 "Fans of {place} City welcome the new stadium plans at a packed meeting"),
}


def newsroom_csv(path: Path, per_topic: int = 40) -> Path:
    """Write a label,text CSV of `per_topic` articles for each of NEWSROOM_TOPICS (a headline and a sentence each,
    every one different) to `path`."""
    import csv

    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["label", "text"])
        for i in range(per_topic):
            for topic in NEWSROOM_TOPICS:
                templates = _NEWSROOM[topic]
                headline = templates[i % len(templates)].format(place=_PLACES[i % len(_PLACES)], n=3 + i)
                writer.writerow([topic, f"{headline}. Our reporter in {_PLACES[(i + 3) % len(_PLACES)]} "
                                        f"filed this story, number {i + 1} of the week."])
    return path
