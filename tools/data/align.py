"""Sentence splitting, Gale-Church sentence alignment and a lexical alignment score.

* split_sentences(text): rule-based, for German and English prose (abbreviations, numbers and
  single letters before a period do not end a sentence).
* gale_church(src, tgt): length-based alignment (Gale & Church 1993) of two lists of
  sentences; beads 1-1, 1-0, 0-1, 2-1, 1-2, 2-2 with the paper's priors and variance
  s^2 = 6.8; the expected length ratio c is the ratio of the two texts' lengths. Returns the
  beads that pair text on both sides (sentences of a 2-1 / 1-2 / 2-2 bead joined by a space).
* Lexicon / score(de, en): the share of the German words (stop words left out) that have a
  Ding dictionary translation among the English words, or appear unchanged on the English side
  (names, numbers, technical terms). Words are compared lower-case after a crude suffix strip.
"""
import math
import re

_ABBR = {
    "z", "b", "d", "h", "u", "a", "bzw", "usw", "ca", "vgl", "ggf", "evtl", "inkl", "ggü", "sog",
    "dr", "nr", "st", "str", "abb", "bd", "bspw", "etc", "e.g", "i.e", "eg", "ie", "vs", "mr",
    "mrs", "ms", "no", "fig", "cf", "approx", "incl", "resp", "jh", "jhd", "s", "v", "o", "zb",
    "dh", "ua", "mio", "mrd", "min", "max", "sek", "std", "tel", "zzgl", "bsp",
}
_SPLIT = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-ZÄÖÜ0-9])")


def split_sentences(text):
    out, start = [], 0
    for m in _SPLIT.finditer(text):
        end = m.start()
        before = text[start:end]
        last = before.rstrip(".!?").rsplit(None, 1)[-1] if before.strip(".!? ") else ""
        word = last.lower().rstrip(".")
        if before.endswith(".") and (word in _ABBR or len(word) <= 1 or word.isdigit()
                                     or re.fullmatch(r"(\w\.)+\w?", word)):
            continue
        out.append(text[start:m.end(1)].strip())
        start = m.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


# Gale & Church (1993): priors of the bead types, variance of the length difference
_BEADS = [((1, 1), 0.89), ((1, 0), 0.0099 / 2), ((0, 1), 0.0099 / 2), ((2, 1), 0.089 / 2),
          ((1, 2), 0.089 / 2), ((2, 2), 0.011)]
_S2 = 6.8


def _norm_cdf(z):
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _cost(l1, l2, c, prior):
    if l1 == 0 and l2 == 0:
        return 0.0
    mean = (l1 + l2 / c) / 2.0
    delta = (l1 * c - l2) / math.sqrt(_S2 * mean)
    p = 2.0 * (1.0 - _norm_cdf(abs(delta)))
    return -math.log(max(p, 1e-300)) - math.log(prior)


def gale_church(src, tgt):
    """Align two lists of sentences; returns [(src_text, tgt_text, (n_src, n_tgt))]."""
    n, m = len(src), len(tgt)
    if n == 0 or m == 0:
        return []
    ls = [len(s) for s in src]
    lt = [len(t) for t in tgt]
    c = max(sum(lt), 1) / max(sum(ls), 1)
    inf = float("inf")
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    back = [[None] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = 0.0
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                continue
            best, arg = inf, None
            for (di, dj), prior in _BEADS:
                if i - di < 0 or j - dj < 0 or cost[i - di][j - dj] == inf:
                    continue
                v = cost[i - di][j - dj] + _cost(sum(ls[i - di:i]), sum(lt[j - dj:j]), c, prior)
                if v < best:
                    best, arg = v, (di, dj)
            cost[i][j], back[i][j] = best, arg
    beads = []
    i, j = n, m
    while i > 0 or j > 0:
        di, dj = back[i][j]
        if di and dj:
            beads.append((" ".join(src[i - di:i]), " ".join(tgt[j - dj:j]), (di, dj)))
        i, j = i - di, j - dj
    beads.reverse()
    return beads


def align_paragraph(de, en):
    """Sentence pairs of one paragraph pair: 1:1 when the sentence counts agree, else
    Gale-Church. Returns [(de, en)]."""
    sd, se = split_sentences(de), split_sentences(en)
    if len(sd) == len(se):
        return list(zip(sd, se))
    return [(a, b) for a, b, _ in gale_church(sd, se)]


_DE_STOP = set("""der die das den dem des ein eine einen einem einer eines und oder aber auch
ist sind war wird werden wurde wurden sein hat haben hatte zu im in am an auf aus bei mit nach
von vom zum zur für über unter um so wie als es er sie wir ihr ich du man sich nicht nur noch
dass daß wenn ob kann können soll sollte muss müssen mehr sehr dies diese dieser dieses diesem
diesen dieser jede jeder jedes alle allen bis durch gegen ohne was wer wo hier dort da denn
doch schon ihre ihren ihrem ihrer ihres sein seine seinen seinem seiner seines mein meine ihn
uns euch mich dich mir dir ihm ihnen einen""".split())
_EN_STOP = set("""a an the of to in on at by for with from and or but is are was were be been being
it its this that these those as into onto up out off so not no do does did has have had can
could will would shall should may might must sb sth one's oneself someone something he she they
we you i me him her them us his their our your my""".split())
_EN_SUFFIX = re.compile(r"(ies|es|s|ed|ing|ly)$")
_DE_SUFFIX = ("ern", "en", "er", "es", "em", "e", "n", "s")
_WORD = re.compile(r"[^\W_]+")


def _en_stem(w):
    return _EN_SUFFIX.sub("", w) if len(w) > 4 else w


class Lexicon:
    """German word -> English word stems, from Ding word/phrase pairs (de<TAB>en<TAB>kind...)."""

    def __init__(self):
        self.map = {}

    @classmethod
    def from_ding(cls, path, max_en_words=3):
        """Entries whose German side is one word and whose English side has at most
        max_en_words words (English stop words are not translations)."""
        lex = cls()
        with open(path, encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) < 3 or cols[2] == "sent":
                    continue
                dw = _WORD.findall(cols[0].lower())
                ew = _WORD.findall(cols[1].lower())
                if len(dw) != 1 or not ew or len(ew) > max_en_words:
                    continue
                ew = {_en_stem(w) for w in ew if w not in _EN_STOP}
                if ew and dw[0] not in _DE_STOP:
                    lex.map.setdefault(dw[0], set()).update(ew)
        return lex

    def lookup(self, w):
        t = self.map.get(w)
        if t is None:
            for suf in _DE_SUFFIX:
                if w.endswith(suf) and len(w) - len(suf) >= 3:
                    t = self.map.get(w[:-len(suf)])
                    if t is not None:
                        break
        return t

    def score(self, de, en):
        """Share (0..1) of German content words with a translation on the English side; None
        when the German side has no content word."""
        dw = [w for w in _WORD.findall(de.lower()) if w not in _DE_STOP and not w.isdigit()]
        if not dw:
            return None
        ew_raw = set(_WORD.findall(en.lower())) - _EN_STOP
        ew = {_en_stem(w) for w in ew_raw}
        hit = 0
        for w in dw:
            if w in ew_raw:
                hit += 1
                continue
            t = self.lookup(w)
            if t and not t.isdisjoint(ew):
                hit += 1
        return hit / len(dw)
