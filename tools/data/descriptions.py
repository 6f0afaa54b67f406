#!/usr/bin/env python3
"""Pair Debian package descriptions: apt's Translation-de with Translation-en, by Description-md5.

Usage: descriptions.py LISTS_DIR > pairs.tsv
LISTS_DIR is a private apt lists directory filled by ``apt-get update`` with
``Acquire::Languages { "de"; "en"; }`` (tools/data/prepare.sh sets that up; the image's own apt
configuration fetches no translations). Index files may be compressed (read through
``apt-helper cat-file``).

Each description = synopsis + long description; the long description is cut into paragraphs
(`` .`` lines) and list items (lines starting with ``*``, ``-``, ``+``, ``o``); verbatim lines
(two leading spaces) are dropped. The synopses are a pair; paragraphs are paired by position
when both sides have the same number of paragraphs (else the description's long part is
skipped), then sentences inside each paragraph pair are paired 1:1 or by Gale-Church
(align.align_paragraph). Each distinct md5 is used once.
Output TSV: ``de<TAB>en<TAB>package``.
"""
import glob
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from align import align_paragraph  # noqa: E402
from common import clean  # noqa: E402

_ITEM = re.compile(r"^\s*([*+\-o]|\d+[.)])\s+")


def read_index(path):
    txt = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", path], capture_output=True,
                         check=True).stdout.decode("utf-8", "replace")
    for rec in txt.split("\n\n"):
        pkg = md5 = None
        desc = []
        for line in rec.split("\n"):
            if line.startswith("Package: "):
                pkg = line[9:].strip()
            elif line.startswith("Description-md5: "):
                md5 = line[17:].strip()
            elif line.startswith("Description-"):
                desc = [line.split(":", 1)[1].strip()]
            elif line.startswith(" ") and desc:
                desc.append(line)
        if pkg and md5 and desc:
            yield pkg, md5, desc


def units(desc):
    """synopsis, [paragraph or list item, ...]"""
    out, cur = [], []

    def flush():
        if cur:
            out.append(clean(" ".join(cur)))
            cur.clear()
    for line in desc[1:]:
        body = line[1:]
        if body.strip() == ".":
            flush()
        elif body.startswith(" ") and not _ITEM.match(body):
            if _ITEM.match(body.lstrip()) is None and cur and out is not None and body.startswith("   "):
                cur.append(body.strip())  # continuation of an indented list item
            else:
                flush()  # verbatim (pre-formatted) line: dropped
        elif _ITEM.match(body):
            flush()
            cur.append(_ITEM.sub("", body).strip())
        else:
            cur.append(body.strip())
    flush()
    return clean(desc[0]), [u for u in out if u]


def main(lists):
    def files(lang):
        return sorted(glob.glob(os.path.join(lists, f"*_i18n_Translation-{lang}*")))
    en = {}
    for f in files("en"):
        for pkg, md5, desc in read_index(f):
            en.setdefault(md5, desc)
    seen = set()
    out = sys.stdout
    for f in files("de"):
        for pkg, md5, desc in read_index(f):
            if md5 in seen or md5 not in en:
                continue
            seen.add(md5)
            sd, pd = units(desc)
            se, pe = units(en[md5])
            pairs = [(sd, se)]
            if len(pd) == len(pe):
                for a, b in zip(pd, pe):
                    pairs.extend(align_paragraph(a, b))
            for a, b in pairs:
                if a and b and a != b:
                    out.write(f"{a}\t{b}\t{pkg}\n")


if __name__ == "__main__":
    main(sys.argv[1])
