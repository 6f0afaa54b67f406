#!/usr/bin/env python3
"""Merge the extracted sources, filter, deduplicate and split train/valid/test.

Usage: build.py RAW_DIR OUT_DIR [--test-size 1000] [--valid-size 1000] [--seed 1234]

* Cleaning: NFC, whitespace and quote normalisation (common.clean), 1..60 words per side,
  length ratio <= 3 (words, when the longer side has more than 3 words) and <= 4 (characters).
* Deduplication of exact (de, en) pairs; the first source in the order ding, lohelp, gettext wins.
* test/valid: full Ding sentence pairs (both sides start upper-case and end with . ! ?; one
  synonym per side, no annotations), 4..30 German words, chosen by a seeded hash order, unique
  by loose key (lower-case, alphanumerics only). Training pairs whose German or English side
  equals (by loose key) a test/valid German or English side, or contains it as a substring,
  are removed, so held-out sentences never appear in training in any form.
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
from common import clean, key  # noqa: E402


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
    args = ap.parse_args()

    sources = [("ding", "ding.tsv"), ("lohelp", "lohelp.tsv"), ("gettext", "gettext.tsv")]
    counts = collections.OrderedDict()
    seen = set()
    pairs = []  # (de, en, source, heldout_ok)
    for name, fn in sources:
        path = os.path.join(args.raw, fn)
        if not os.path.exists(path):
            continue
        raw = kept = 0
        for de, en, src, ok in read(path, name):
            raw += 1
            if not keep(de, en) or de == en and name != "ding":
                continue
            if (de, en) in seen:
                continue
            seen.add((de, en))
            pairs.append((de, en, src, ok))
            kept += 1
        counts[name] = {"extracted": raw, "after_filter_dedup": kept}

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

    # remove every training pair that contains a held-out side (exact key or substring)
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
    for split, data in (("train", train), ("valid", valid), ("test", test)):
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
    with open(os.path.join(args.out, "counts.json"), "w") as f:
        json.dump(counts, f, indent=1)
    print(json.dumps(counts, indent=1))


if __name__ == "__main__":
    main()
