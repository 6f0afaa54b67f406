#!/usr/bin/env python3
"""Extract German-English pairs from the Ding dictionary (Debian package trans-de-en).

Line format: ``German :: English``; both sides hold ``|``-separated sub-entries aligned by
position (headword, inflections, example phrases, example sentences); inside a sub-entry ``;``
separates synonyms. Annotations ({m}, [coll.], <variant>, (explanations)) are removed.

Output (stdout): TSV ``de<TAB>en<TAB>kind<TAB>clean`` where kind is sent|phrase|word and clean
is 1 when the original sub-entry had a single synonym on each side, no annotations and no
``/`` alternatives (such pairs are candidates for the held-out test set).
"""
import itertools
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from common import clean, is_sentence  # noqa: E402

ANNOT = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>")
PAREN = re.compile(r"\([^()]*\)")
SLASH = re.compile(r"(\S+?)(\s*/\s*[^\s/]+)+")  # "a / b / c" -> "a"; "sb./sth." -> "sb."


def strip(text: str) -> str:
    text = ANNOT.sub(" ", text)
    for _ in range(2):
        text = PAREN.sub(" ", text)
    text = SLASH.sub(r"\1", text)
    text = re.sub(r"\s+([,.!?;:])", r"\1", text)
    return clean(text)


def synonyms(part: str):
    return [s for s in (x.strip() for x in part.split("; ")) if s]


def kind_of(de: str, en: str) -> str:
    if is_sentence(de) and is_sentence(en):
        return "sent"
    if len(de.split()) == 1 and len(en.split()) <= 2:
        return "word"
    return "phrase"


def pairs_for(de_part: str, en_part: str):
    ds, es = synonyms(de_part), synonyms(en_part)
    if not ds or not es:
        return
    simple = (len(ds) == 1 and len(es) == 1 and not re.search(r"[{}\[\]<>()/]", de_part + en_part))
    if len(ds) * len(es) <= 4:
        combos = itertools.product(ds, es)
    else:  # every synonym appears once, cyclically
        n = max(len(ds), len(es))
        combos = ((ds[i % len(ds)], es[i % len(es)]) for i in range(n))
    for d, e in combos:
        if " / " in d or " / " in e:  # multi-word alternatives cannot be resolved reliably
            continue
        d, e = strip(d), strip(e)
        if not d or not e or not re.search(r"\w", d) or not re.search(r"\w", e):
            continue
        yield d, e, kind_of(d, e), int(simple)


def main(path: str) -> None:
    out = sys.stdout
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or " :: " not in line:
                continue
            de, en = line.rstrip("\n").split(" :: ", 1)
            dps, eps = de.split(" | "), en.split(" | ")
            if len(dps) != len(eps):
                # misaligned entry: only the headword pair is trustworthy
                dps, eps = dps[:1], eps[:1]
            for dp, ep in zip(dps, eps):
                for d, e, k, s in pairs_for(dp, ep):
                    out.write(f"{d}\t{e}\t{k}\t{s}\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/trans/de-en")
