#!/usr/bin/env python3
"""Corpus BLEU exactly as sacreBLEU's defaults compute it (no sacrebleu needed).

Defaults reproduced: tokenizer 13a, case-sensitive, max n-gram order 4, smoothing 'exp'
(only affects orders with zero matches: the k-th such order gets precision 100/(2^k * total)),
no effective order, brevity penalty exp(1 - ref_len/sys_len) when sys_len < ref_len, closest
reference length (ties -> shorter) with several references.

  python3 tools/data/bleu.py HYP_FILE REF_FILE [REF_FILE...]
"""
import math
import re
import sys
from collections import Counter
from typing import List, Sequence

_13A = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line: str) -> str:
    line = line.replace("<skipped>", "")
    line = line.replace("-\n", "")
    line = line.replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"')
        line = line.replace("&amp;", "&")
        line = line.replace("&lt;", "<")
        line = line.replace("&gt;", ">")
    line = f" {line} "
    for rx, repl in _13A:
        line = rx.sub(repl, line)
    return " ".join(line.split())


def ngrams(words: Sequence[str], max_order: int = 4) -> Counter:
    c = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(words) - n + 1):
            c[tuple(words[i:i + n])] += 1
    return c


class BLEUScore:
    def __init__(self, score, counts, totals, precisions, bp, sys_len, ref_len):
        self.score, self.counts, self.totals = score, counts, totals
        self.precisions, self.bp, self.sys_len, self.ref_len = precisions, bp, sys_len, ref_len

    def __str__(self):
        p = "/".join(f"{x:.1f}" for x in self.precisions)
        return (f"BLEU = {self.score:.2f} {p} (BP = {self.bp:.3f} ratio = "
                f"{self.sys_len / max(self.ref_len, 1):.3f} hyp_len = {self.sys_len} "
                f"ref_len = {self.ref_len})")


def compute_bleu(correct, total, sys_len, ref_len, max_order=4) -> BLEUScore:
    precisions = [0.0] * max_order
    smooth_mteval = 1.0
    for n in range(1, max_order + 1):
        if total[n - 1] == 0:
            break
        if correct[n - 1] == 0:
            smooth_mteval *= 2
            precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    else:
        bp = 1.0
    logs = [math.log(p) if p > 0 else -9999999999 for p in precisions]
    score = bp * math.exp(sum(logs) / max_order)
    return BLEUScore(score, list(correct), list(total), precisions, bp, sys_len, ref_len)


def corpus_bleu(hyps: Sequence[str], refs: Sequence[Sequence[str]], max_order: int = 4,
                lowercase: bool = False) -> BLEUScore:
    """hyps: list of system outputs; refs: list of reference streams (each as long as hyps)."""
    for r in refs:
        if len(r) != len(hyps):
            raise ValueError("reference stream length differs from hypotheses")
    correct = [0] * max_order
    total = [0] * max_order
    sys_len = ref_len = 0
    prep = lambda s: tokenize_13a((s.lower() if lowercase else s).rstrip()).split()
    for i, h in enumerate(hyps):
        hw = prep(h)
        rws = [prep(r[i]) for r in refs]
        # closest reference length, ties -> shorter
        best = None
        for rw in rws:
            d = abs(len(rw) - len(hw))
            if best is None or d < best[0] or (d == best[0] and len(rw) < best[1]):
                best = (d, len(rw))
        sys_len += len(hw)
        ref_len += best[1]
        ref_max = Counter()
        for rw in rws:
            for g, c in ngrams(rw, max_order).items():
                ref_max[g] = max(ref_max[g], c)
        for g, c in ngrams(hw, max_order).items():
            n = len(g)
            correct[n - 1] += min(c, ref_max.get(g, 0))
        for n in range(1, max_order + 1):
            total[n - 1] += max(0, len(hw) - n + 1)
    return compute_bleu(correct, total, sys_len, ref_len, max_order)


def main(argv: List[str]) -> None:
    hyps = open(argv[1], encoding="utf-8").read().split("\n")
    refs = [open(p, encoding="utf-8").read().split("\n") for p in argv[2:]]
    if hyps and hyps[-1] == "":
        hyps.pop()
        refs = [r[:-1] if r and r[-1] == "" else r for r in refs]
    print(corpus_bleu(hyps, refs))


if __name__ == "__main__":
    main(sys.argv)
