"""The news sets of docs/results/own-data.md, written as `label,text` CSVs from the public files they come from
(never committed: their sources, sha256 and licences are on that page).

    python -m bench.news_sets reuters_r8 <dir with reut2-000.xml .. reut2-021.xml> ../bench-data/reuters-r8
    python -m bench.news_sets r8_long ../bench-data/reuters-r8/all.csv ../bench-data/r8-long
    python -m bench.news_sets huffpost <News_Category_Dataset_v3.json (JSON lines)> ../bench-data/huffpost
    python -m bench.news_sets agnews ../shared/data/ag_news/train.csv ../bench-data/agnews

The XML copy of Reuters-21578 is in `haseebr/irengine` (commit 9f0f5f5, folder reuters21578-xml/); the HuffPost
file at commit 65ae8ed of `Fred-Stock/Correlated-Topic-Modeling-In-Pytorch`. Each command writes <out dir>/all.csv
and prints statistics as JSON. Standard library only.
"""
import collections
import csv
import json
import os
import re
import statistics
import sys
import xml.etree.ElementTree as ET

WS = re.compile(r"\s+")


def squash(s):
    """Collapse runs of whitespace (hard line breaks, paragraph indents) into one space."""
    return WS.sub(" ", s or "").strip()


def join_title(title, body):
    """title + '. ' + body; no extra '.' when the title already ends a sentence."""
    title, body = squash(title), squash(body)
    if not title:
        return body
    if not body:
        return title
    sep = " " if title[-1] in ".?!:" else ". "
    return title + sep + body


def dedup(rows):
    """rows: list of (label, text, extra). Keep the first of identical texts; drop texts seen
    with more than one label. Returns kept rows and counts."""
    labels_by_text = collections.defaultdict(set)
    for lab, txt, *_ in rows:
        labels_by_text[txt].add(lab)
    seen, kept = set(), []
    n_dup = n_conflict = 0
    for row in rows:
        lab, txt = row[0], row[1]
        if len(labels_by_text[txt]) > 1:
            n_conflict += 1
            continue
        if txt in seen:
            n_dup += 1
            continue
        seen.add(txt)
        kept.append(row)
    return kept, {"dropped_exact_duplicates": n_dup, "dropped_label_conflicts": n_conflict}


def write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["label", "text"])
        for lab, txt, *_ in rows:
            w.writerow([lab, txt])


def stats(rows):
    words = [len(r[1].split()) for r in rows]
    return {
        "rows": len(rows),
        "per_label": dict(sorted(collections.Counter(r[0] for r in rows).items())),
        "median_words": statistics.median(words),
        "mean_words": round(statistics.fmean(words), 1),
        "min_words": min(words),
        "max_words": max(words),
    }


# ---------------------------------------------------------------- Reuters-21578 R8
R8 = ("acq", "crude", "earn", "grain", "interest", "money-fx", "ship", "trade")
TRAILER = re.compile(r"\s*\bReuter\s*$")  # the wire sign-off closing almost every body


def reuters_docs(src_dir):
    for i in range(22):
        path = os.path.join(src_dir, f"reut2-{i:03d}.xml")
        with open(path, "rb") as f:
            raw = f.read()
        # The collection is ASCII except for one corrupted byte (0xFC) in reut2-017; decode as
        # Latin-1 and drop any non-ASCII character so every text stays as on the wire.
        xml = raw.decode("latin-1")
        root = ET.fromstring(re.sub(r"[^\x00-\x7f]", "", xml).replace('<?xml version="1.0"?>', "", 1))
        for doc in root.iter("REUTERS"):
            topics = [d.text.strip() for d in doc.find("TOPICS").iter("D")]
            text_el = doc.find("TEXT")
            title = text_el.findtext("TITLE") or ""
            body_el = text_el.find("BODY")
            if body_el is not None:
                body = "".join(body_el.itertext())
            elif text_el.get("TYPE") == "UNPROC":
                body = text_el.text or ""  # unprocessed stories keep their text directly in TEXT
            else:
                body = ""
            yield {
                "newid": int(doc.get("NEWID")),
                "topics_attr": doc.get("TOPICS"),
                "lewissplit": doc.get("LEWISSPLIT"),
                "text_type": text_el.get("TYPE") or "NORM",
                "topics": topics,
                "title": title,
                "body": TRAILER.sub("", body),
            }


def build_reuters(src_dir, out_dir):
    counts = collections.Counter()
    rows = []
    for d in reuters_docs(src_dir):
        counts["documents"] += 1
        if d["topics_attr"] != "YES" or d["lewissplit"] not in ("TRAIN", "TEST"):
            continue  # ModApte: TOPICS="YES" and LEWISSPLIT TRAIN/TEST
        counts["modapte"] += 1
        if len(d["topics"]) != 1:
            continue
        counts["modapte_single_topic"] += 1
        if d["topics"][0] not in R8:
            continue
        split = "train" if d["lewissplit"] == "TRAIN" else "test"
        counts["r8_" + split] += 1
        counts[f"r8_{split}_{d['topics'][0]}"] += 1
        text = join_title(d["title"], d["body"])
        if not text:
            counts["r8_empty_text"] += 1
            continue
        rows.append((d["topics"][0], text, split, d["newid"]))
    kept, dd = dedup(rows)
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "all.csv"), kept)
    for split in ("train", "test"):
        write_csv(os.path.join(out_dir, f"modapte_{split}.csv"), [r for r in kept if r[2] == split])
    res = {"filter_counts": dict(counts), "dedup": dd, "all": stats(kept)}
    for split in ("train", "test"):
        res[split] = stats([r for r in kept if r[2] == split])
    return res


# ---------------------------------------------------------------- HuffPost News Category
# Categories that were renamed/merged in the dataset's history (Kaggle v2 -> v3 notes).
HISTORIC_MERGES = {
    "WORLDPOST": "WORLD NEWS", "THE WORLDPOST": "WORLD NEWS",
    "ARTS": "CULTURE & ARTS", "ARTS & CULTURE": "CULTURE & ARTS",
    "STYLE": "STYLE & BEAUTY", "TASTE": "FOOD & DRINK", "GREEN": "ENVIRONMENT",
    "PARENTS": "PARENTING", "HEALTHY LIVING": "WELLNESS", "COLLEGE": "EDUCATION",
}
# Our own newsroom grouping (not in the source): two thin sections folded into a neighbour.
NEWSROOM_MERGES = {"MONEY": "BUSINESS", "TECH": "SCIENCE & TECH", "SCIENCE": "SCIENCE & TECH"}
HUFFPOST_KEEP = ("POLITICS", "ENTERTAINMENT", "WORLD NEWS", "SPORTS", "CRIME", "STYLE & BEAUTY",
                 "ENVIRONMENT", "FOOD & DRINK", "BUSINESS", "SCIENCE & TECH")


def build_huffpost(src_json, out_dir):
    counts = collections.Counter()
    src_cats = collections.Counter()
    rows = []
    dates = []
    with open(src_json, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            counts["source_rows"] += 1
            src_cats[r["category"]] += 1
            cat = HISTORIC_MERGES.get(r["category"], r["category"])
            cat = NEWSROOM_MERGES.get(cat, cat)
            if cat not in HUFFPOST_KEEP:
                counts["dropped_other_category"] += 1
                continue
            text = join_title(r.get("headline"), r.get("short_description"))
            if not text:
                counts["dropped_empty_text"] += 1
                continue
            if not squash(r.get("short_description")):
                counts["kept_headline_only"] += 1
            rows.append((cat, text))
            dates.append(r.get("date", ""))
    kept, dd = dedup(rows)
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "all.csv"), kept)
    return {"filter_counts": dict(counts), "source_categories": dict(src_cats.most_common()),
            "date_range": [min(dates), max(dates)], "dedup": dd, "all": stats(kept)}


LONG_WORDS = 150  # r8-long: the stories a 192-token head cuts short


def build_r8_long(src_csv, out_dir):
    """The rows of an R8 all.csv with at least LONG_WORDS whitespace words, in their order."""
    with open(src_csv, newline="", encoding="utf-8") as handle:
        rows = [(r["label"], r["text"]) for r in csv.DictReader(handle) if len(r["text"].split()) >= LONG_WORDS]
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "all.csv"), rows)
    return {"min_words": LONG_WORDS, "all": stats(rows)}


AG_NEWS = {"1": "World", "2": "Sports", "3": "Business", "4": "Sci/Tech"}


def build_agnews(src_csv, out_dir):
    """AG News's train.csv (label 1-4, title, description) as topic names and title + " " + description, each
    stripped."""
    with open(src_csv, newline="", encoding="utf-8") as handle:
        rows = [(AG_NEWS[r["label"]], f"{r['title'].strip()} {r['description'].strip()}")
                for r in csv.DictReader(handle)]
    os.makedirs(out_dir, exist_ok=True)
    write_csv(os.path.join(out_dir, "all.csv"), rows)
    return {"all": stats(rows)}


if __name__ == "__main__":
    cmd, src, out = sys.argv[1:4]
    fn = {"reuters_r8": build_reuters, "r8_long": build_r8_long, "huffpost": build_huffpost,
          "agnews": build_agnews}[cmd]
    print(json.dumps(fn(src, out), indent=1))
