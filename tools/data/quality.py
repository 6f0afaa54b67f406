"""Output quality measures besides BLEU (tools/data/bleu.py): chrF and repeated-word loops.

* corpus_chrf(hyps, refs): chrF as sacreBLEU 2.x computes it by default (character n-grams
  1..6, no word n-grams, beta 2, whitespace removed, no eps smoothing: statistics summed over
  the corpus; precision and recall averaged over the n-gram orders that occur on both sides,
  then F-beta of the two averages).
* repeat_loops(text): 1 when the text holds a word n-gram (n = 1..4; lower-case words,
  punctuation ignored) repeated at least 4 times in a row, the signature of a greedy decoding
  loop ("the the the the", "of the house of the house of the house of the house"), else 0.
"""
import collections
import re

_WORD = re.compile(r"\w+")


def _char_ngrams(text, n):
    s = "".join(text.split())
    return collections.Counter(s[i:i + n] for i in range(len(s) - n + 1))


def corpus_chrf(hyps, refs, order=6, beta=2.0):
    assert len(hyps) == len(refs)
    stats = [[0, 0, 0] for _ in range(order)]  # hyp, ref, match per order
    for h, r in zip(hyps, refs):
        for n in range(1, order + 1):
            hc, rc = _char_ngrams(h, n), _char_ngrams(r, n)
            st = stats[n - 1]
            st[0] += sum(hc.values())
            st[1] += sum(rc.values())
            st[2] += sum((hc & rc).values())
    factor = beta ** 2
    avg_prec = avg_rec = 0.0
    effective = 0
    for n_hyp, n_ref, n_match in stats:
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective += 1
    if not effective:
        return 0.0
    avg_prec /= effective
    avg_rec /= effective
    if avg_prec + avg_rec == 0:
        return 0.0
    return 100.0 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec)


def repeat_loops(text, min_repeats=4, max_n=4):
    w = _WORD.findall(text.lower())
    for n in range(1, max_n + 1):
        for i in range(len(w) - n * min_repeats + 1):
            g = w[i:i + n]
            if all(w[i + k * n:i + (k + 1) * n] == g for k in range(1, min_repeats)):
                return 1
    return 0
