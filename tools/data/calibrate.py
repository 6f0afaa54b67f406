#!/usr/bin/env python3
"""Calibrate the lexical alignment filter per source: how many real pairs and how many pairs
with a shuffled English side reach each score threshold.

Usage: calibrate.py RAW_DIR SOURCE [SOURCE...] [--n 3000] [--seed 1234]
(SOURCE: a raw TSV's name without .tsv, e.g. naev; RAW_DIR must hold ding.tsv for the lexicon.)

For each source, up to N random pairs of at least 4 German words (cleaned as build.py does) are
scored with align.Lexicon (build.py's --min-align filter); then the same pairs with their English
sides shuffled among them (shares are of the pairs that get a score: a German side with no
content word gets none). A good threshold keeps most real pairs and few shuffled ones: that is
the table DATA.md shows for each source. Prints a Markdown table.
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(__file__))
from align import Lexicon  # noqa: E402
from build import keep, read  # noqa: E402

THRESHOLDS = (0.1, 0.2, 0.25, 0.3, 0.4)
SHUFFLED = (0.1, 0.2, 0.25, 0.3)


def shares(lex, pairs, thresholds):
    scores = [lex.score(de, en) for de, en in pairs]
    scores = [s for s in scores if s is not None]
    return [sum(s >= t for s in scores) / max(1, len(scores)) for t in thresholds]


def calibrate(lex, pairs, n, seed):
    rng = random.Random(seed)
    pairs = [p for p in pairs if len(p[0].split()) >= 4]
    if len(pairs) > n:
        pairs = rng.sample(pairs, n)
    en = [p[1] for p in pairs]
    rng.shuffle(en)
    return len(pairs), shares(lex, pairs, THRESHOLDS), shares(lex, list(zip((p[0] for p in pairs), en)),
                                                              SHUFFLED)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("raw")
    ap.add_argument("sources", nargs="+")
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    lex = Lexicon.from_ding(os.path.join(args.raw, "ding.tsv"))
    head = " | ".join(f"t={t}" for t in THRESHOLDS) + " | " + " | ".join(f"shuffled: {t}" for t in SHUFFLED)
    print(f"| source | pairs sampled | {head} |")
    print("|---|---:|" + "---|" * (len(THRESHOLDS) + len(SHUFFLED)))
    for name in args.sources:
        pairs = [(de, en) for de, en, _, _ in read(os.path.join(args.raw, name + ".tsv"), name)
                 if keep(de, en) and de != en]
        n, real, shuf = calibrate(lex, pairs, args.n, args.seed)
        cells = " | ".join(f"{x:.2f}" for x in real + shuf)
        print(f"| {name} | {n} | {cells} |")


if __name__ == "__main__":
    main()
