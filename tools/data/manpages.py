#!/usr/bin/env python3
"""Pair German man pages (manpages-de) with the English pages installed on the machine.

Usage: manpages.py DE_MAN_DIR [EN_MAN_DIR] > pairs.tsv
  DE_MAN_DIR: the unpacked manpages-de tree's usr/share/man/de; EN_MAN_DIR: /usr/share/man.
Each page pair (same section and file name) is rendered by groff (-man -Tutf8, line length
3000 ens, no hyphenation, no adjustment effects: -P-cbou), so that every paragraph is one line.
A line's shape is (indent, the option token it starts with, if any); the two pages' shape
sequences are aligned with difflib (runs of >= 2 equal shapes; option names are the same in
both languages and anchor the alignment), lines are paired inside the runs, a leading option
token both sides share is removed, and the pairs are split into sentences (align_paragraph:
1:1 or Gale-Church). Section headings (indent 0), synopsis-like lines and lines that are
mostly the English text (untranslated paragraphs: more than 60% of >= 4 German words also occur
on the English side) are dropped. The English pages present depend on the installed packages
(as the gettext part does). Output TSV: ``de<TAB>en<TAB>section/page``.
"""
import difflib
import gzip
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from align import align_paragraph  # noqa: E402
from common import clean  # noqa: E402

_OPT = re.compile(r"^(-{1,2}[\w][\w\-\[\]=|,]*)(,\s*-{1,2}[\w][\w\-\[\]=|]*)*")
_WORD = re.compile(r"[^\W_]+")
_CODELIKE = re.compile(r"[{}<>=$\\|#;]|https?:|/\w+/|\w\(\d\)|^\W")


def render(path):
    data = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
    if data.lstrip().startswith(b".so "):
        return []  # a link to another page
    r = subprocess.run(["groff", "-k", "-man", "-Tutf8", "-rLL=3000n", "-rHY=0", "-P-cbou"],
                       input=data, capture_output=True, timeout=60)
    lines = []
    for raw in r.stdout.decode("utf-8", "replace").split("\n"):
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        text = raw.strip().replace("\u2010", "-")
        m = _OPT.match(text)
        opt = m.group(0) if m else ""
        lines.append(((min(indent, 30), opt), text))
    return lines[1:-1]  # groff's header and footer lines


def untranslated(de, en):
    d = _WORD.findall(de.lower())
    e = set(_WORD.findall(en.lower()))
    return len(d) >= 4 and sum(w in e for w in d) > 0.6 * len(d)


def pairs(de_lines, en_lines):
    sm = difflib.SequenceMatcher(None, [s for s, _ in en_lines], [s for s, _ in de_lines],
                                 autojunk=False)
    for a, b, n in sm.get_matching_blocks():
        if n < 2:
            continue
        for k in range(n):
            (indent, opt), e = en_lines[a + k]
            _, d = de_lines[b + k]
            if indent == 0:
                continue  # section headings
            if opt:
                e, d = e[len(opt):].strip(), d[len(opt):].strip()
            e, d = clean(e), clean(d)
            if len(e.split()) < 2 or len(d.split()) < 2:
                continue
            for x, y in align_paragraph(d, e):
                if x != y and not untranslated(x, y) and not _CODELIKE.search(x) \
                        and not _CODELIKE.search(y):
                    yield x, y


def main(de_dir, en_dir="/usr/share/man"):
    out = sys.stdout
    for sec in sorted(os.listdir(de_dir)):
        if not sec.startswith("man"):
            continue
        for name in sorted(os.listdir(os.path.join(de_dir, sec))):
            en = os.path.join(en_dir, sec, name)
            if not os.path.exists(en):
                continue
            try:
                dl, el = render(os.path.join(de_dir, sec, name)), render(en)
            except (OSError, subprocess.TimeoutExpired, EOFError):
                continue
            for d, e in pairs(dl, el):
                out.write(f"{d}\t{e}\t{sec}/{name}\n")


if __name__ == "__main__":
    main(*sys.argv[1:3])
