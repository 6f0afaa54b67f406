#!/usr/bin/env python3
"""A synthetic parallel corpus of token ids for a random model's vocabulary shortlist (speed
only: a random model's translations mean nothing). Each source id s has a fixed "translation"
(s * 7919 + 13) mod (vocab - 4) + 4 and a second sense; sentences draw Zipf-distributed source
ids, the target side holds their translations (one of two senses), shuffled, plus a few
function-word-like ids that appear everywhere.
Usage: synthetic_corpus.py --vocab 32000 --pairs 20000 --out DIR  (writes DIR/train.src.ids,
DIR/train.tgt.ids; `tern convert ... --shortlist-corpus DIR/train.src.ids DIR/train.tgt.ids`).
"""
import argparse
import os
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    span = a.vocab - 4
    ids = list(range(4, a.vocab))
    weights = [1.0 / (r + 1) ** 0.8 for r in range(span)]
    rng.shuffle(ids)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "train.src.ids"), "w") as src, \
            open(os.path.join(a.out, "train.tgt.ids"), "w") as tgt:
        for _ in range(a.pairs):
            n = rng.randint(8, 30)
            s = rng.choices(ids, weights, k=n)
            t = [((x * 7919 + 13) if rng.random() < 0.7 else (x * 104729 + 7)) % span + 4
                 for x in s]
            t += [4 + rng.randrange(20) for _ in range(n // 4)]
            rng.shuffle(t)
            src.write(" ".join(map(str, s)) + "\n")
            tgt.write(" ".join(map(str, t)) + "\n")


if __name__ == "__main__":
    main()
