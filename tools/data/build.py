#!/usr/bin/env python3
"""Merge the extracted sources, filter, deduplicate and split train/valid/test.

Usage: build.py RAW_DIR OUT_DIR [--test-size 1000] [--valid-size 1000] [--seed 1234]
                [--corpus 2|3] [--exclude FILE]...

* Sources: --corpus 2 (default) reads the sources the shipped model was trained on; --corpus 3
  adds game dialogue (Wesnoth campaigns, FreedroidRPG, Naev, Warzone 2100, Hedgewars, Tux
  Paint stamps) and the GIMP manual after them (SOURCES_3): the held-out sets are the same.

* Cleaning: NFC, whitespace and quote normalisation (common.clean), 1..60 words per side,
  length ratio <= 3 (words, when the longer side has more than 3 words) and <= 4 (characters).
* Deduplication of exact (de, en) pairs; the first source in SOURCES order wins.
* Lexical alignment filter (align.Lexicon, built from the Ding word entries): a pair from any
  source but Ding with at least 4 German words is dropped when fewer than --min-align (0.2) of
  its German content words have a dictionary translation (or an identical word) on the English
  side. Calibration (3000 random pairs per source of >= 4 words): real pairs score >= 0.2 in
  88-99% of cases, pairs with a shuffled English side in 2-8% (DATA.md has the table).
* test/valid: full Ding sentence pairs (both sides start upper-case and end with . ! ?; one
  synonym per side, no annotations), 4..30 German words, chosen by a seeded hash order, unique
  by loose key (lower-case, alphanumerics only). Training pairs whose German or English side
  equals (by loose key) a test/valid German or English side, or contains it as a substring,
  are removed, so held-out sentences never appear in training in any form.
* test_everyday / valid_everyday (game dialogue and descriptions, GNOME help) and
  test_technical / valid_technical (package descriptions, Debian handbook): sentence pairs (both
  sides sentences, 4..30 German words, alignment score >= 0.4) drawn per source by the same seeded
  hash order with fixed quotas (EVERYDAY, TECHNICAL), unique by loose key against every other
  held-out side, and kept out of training in the same way.
"""
import argparse
import bisect
import collections
import hashlib
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from align import Lexicon  # noqa: E402
from common import clean, is_sentence, key  # noqa: E402

SOURCES = [("ding", "ding.tsv"), ("lohelp", "lohelp.tsv"), ("gettext", "gettext.tsv"),
           ("descriptions", "descriptions.tsv"), ("cataclysm", "cataclysm.tsv"),
           ("widelands", "widelands.tsv"), ("wesnoth", "wesnoth.tsv"),
           ("gnome_help", "gnome_help.tsv"), ("handbook", "handbook.tsv"),
           ("manpages", "manpages.tsv")]
# Corpus 3 (not yet trained on): game dialogue and more documentation, appended after corpus 2's
# sources. Deduplication keeps the first source's pair and the held-out sets are drawn from
# corpus 2's sources only, so the held-out sets are the same and every corpus-2 pair is kept or
# dropped as before (save for --exclude); only the training set grows.
SOURCES_3 = SOURCES + [("wesnoth_campaigns", "wesnoth_campaigns.tsv"),
                       ("freedroidrpg", "freedroidrpg.tsv"), ("naev", "naev.tsv"),
                       ("warzone2100", "warzone2100.tsv"), ("hedgewars", "hedgewars.tsv"),
                       ("tuxpaint", "tuxpaint.tsv"), ("gimp_help", "gimp_help.tsv")]
# held-out quotas per source: (test, valid)
EVERYDAY = {"cataclysm": (400, 200), "widelands": (300, 150), "gnome_help": (300, 150)}
TECHNICAL = {"descriptions": (700, 350), "handbook": (300, 150)}


def read(path, source):
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 2:
                continue
            de, en = clean(cols[0]), clean(cols[1])
            heldout_ok = source == "ding" and len(cols) >= 4 and cols[2] == "sent" and cols[3] == "1"
            yield de, en, source, heldout_ok


def keep(de, en):
    wd, we = len(de.split()), len(en.split())
    if not (1 <= wd <= 60 and 1 <= we <= 60):
        return False
    if max(wd, we) > 3 and max(wd, we) > 3 * min(wd, we):
        return False
    cd, ce = len(de), len(en)
    return max(cd, ce) <= 4 * min(cd, ce) + 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("out")
    ap.add_argument("--test-size", type=int, default=1000)
    ap.add_argument("--valid-size", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--min-align", type=float, default=0.2)
    ap.add_argument("--corpus", type=int, choices=(2, 3), default=2,
                    help="2: the shipped model's sources; 3: with the game dialogue and GIMP help")
    ap.add_argument("--exclude", action="append", default=[],
                    help="a file of sentences (one per line, either language) kept out of "
                         "training like a held-out side, e.g. a judged test set")
    args = ap.parse_args()

    lex = Lexicon.from_ding(os.path.join(args.raw, "ding.tsv"))
    scores = {}  # pair index -> alignment score (non-Ding pairs of >= 4 German words)
    sources = SOURCES if args.corpus == 2 else SOURCES_3
    counts = collections.OrderedDict()
    seen = set()
    pairs = []  # (de, en, source, heldout_ok)
    for name, fn in sources:
        path = os.path.join(args.raw, fn)
        if not os.path.exists(path):
            continue
        raw = kept = unaligned = 0
        for de, en, src, ok in read(path, name):
            raw += 1
            if not keep(de, en) or de == en and name != "ding":
                continue
            if (de, en) in seen:
                continue
            seen.add((de, en))
            sc = None
            if name != "ding" and len(de.split()) >= 4:
                sc = lex.score(de, en)
                if sc is not None and sc < args.min_align:
                    unaligned += 1
                    continue
            if sc is not None:
                scores[len(pairs)] = sc
            pairs.append((de, en, src, ok))
            kept += 1
        counts[name] = {"extracted": raw, "below_min_align": unaligned, "after_filter_dedup": kept}

    # held-out candidates
    def h(s):
        return hashlib.sha256(f"{args.seed}\t{s}".encode()).hexdigest()

    cands = [p for p in pairs if p[3] and 4 <= len(p[0].split()) <= 30]
    cands.sort(key=lambda p: h(p[0] + "\t" + p[1]))
    used = set()
    test, valid = [], []
    for de, en, _, _ in cands:
        kd, ke = key(de), key(en)
        if kd in used or ke in used or len(kd) < 8 or len(ke) < 8:
            continue
        target = test if len(test) < args.test_size else valid
        target.append((de, en))
        used.update((kd, ke))
        if len(valid) >= args.valid_size:
            break

    # everyday / technical held-out sets, per source with quotas
    extra = {}
    for setname, quotas in (("everyday", EVERYDAY), ("technical", TECHNICAL)):
        tst, val = [], []
        for srcname, (nt, nv) in quotas.items():
            cs = [(i, p) for i, p in enumerate(pairs) if p[2] == srcname
                  and scores.get(i, 0) >= 0.4 and 4 <= len(p[0].split()) <= 30
                  and is_sentence(p[0]) and is_sentence(p[1])]
            cs.sort(key=lambda ip: h(ip[1][0] + "\t" + ip[1][1]))
            got_t, got_v = [], []
            for _, (de, en, _, _) in cs:
                kd, ke = key(de), key(en)
                if kd in used or ke in used or len(kd) < 8 or len(ke) < 8:
                    continue
                (got_t if len(got_t) < nt else got_v).append((de, en))
                used.update((kd, ke))
                if len(got_v) >= nv:
                    break
            tst += got_t
            val += got_v
        extra[setname] = (tst, val)

    # remove every training pair that contains a held-out side (exact key or substring); the
    # --exclude sentences count as held-out sides from here on (they do not take part in the
    # selection above, so the held-out sets do not depend on them)
    for path in args.exclude:
        with open(path, encoding="utf-8") as f:
            used.update(k for k in (key(clean(line)) for line in f) if k)
    sep = "\x01"
    train_idx = [i for i, p in enumerate(pairs)]
    drop = set()
    for i in train_idx:
        de, en = pairs[i][0], pairs[i][1]
        if key(de) in used or key(en) in used:
            drop.add(i)
    for side in (0, 1):
        offs, buf, pos = [], [], 0
        for i in train_idx:
            k = key(pairs[i][side])
            offs.append(pos)
            buf.append(k)
            pos += len(k) + 1
        big = sep.join(buf)
        for k in used:
            if len(k) < 15:
                continue
            start = big.find(k)
            while start >= 0:
                drop.add(train_idx[bisect.bisect_right(offs, start) - 1])
                start = big.find(k, start + 1)
    train = [(p[0], p[1], p[2]) for i, p in enumerate(pairs) if i not in drop]
    random.Random(args.seed).shuffle(train)

    os.makedirs(args.out, exist_ok=True)
    splits = [("train", train), ("valid", valid), ("test", test)]
    for setname, (tst, val) in extra.items():
        splits += [(f"test_{setname}", tst), (f"valid_{setname}", val)]
    for split, data in splits:
        with open(os.path.join(args.out, f"{split}.de"), "w", encoding="utf-8") as fd, \
                open(os.path.join(args.out, f"{split}.en"), "w", encoding="utf-8") as fe:
            for p in data:
                fd.write(p[0] + "\n")
                fe.write(p[1] + "\n")
    per_src = collections.Counter(p[2] for p in train)
    for name in counts:
        counts[name]["train"] = per_src.get(name, 0)
    counts["removed_overlapping_heldout"] = len(drop)
    counts["train"] = len(train)
    counts["valid"] = len(valid)
    counts["test"] = len(test)
    for setname, (tst, val) in extra.items():
        counts[f"test_{setname}"] = len(tst)
        counts[f"valid_{setname}"] = len(val)
    counts["train_sentences"] = sum(is_sentence(p[0]) and is_sentence(p[1]) for p in train)
    counts["train_words_de"] = sum(len(p[0].split()) for p in train)
    counts["train_words_en"] = sum(len(p[1].split()) for p in train)
    sent_src = collections.Counter(p[2] for p in train if is_sentence(p[0]) and is_sentence(p[1]))
    for name in counts:
        if isinstance(counts[name], dict):
            counts[name]["train_sentences"] = sent_src.get(name, 0)
    with open(os.path.join(args.out, "counts.json"), "w") as f:
        json.dump(counts, f, indent=1)
    print(json.dumps(counts, indent=1))


if __name__ == "__main__":
    main()
