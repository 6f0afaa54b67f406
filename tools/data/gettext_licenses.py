#!/usr/bin/env python3
"""Markdown table: gettext pairs per Debian package and the package's main license.

Usage: gettext_licenses.py RAW_DIR   (reads gettext.tsv and gettext_pkgs.tsv from tools/data)
The license is the `License:` of the `Files: *` stanza of /usr/share/doc/PKG/copyright
(machine-readable DEP-5 files); otherwise "see copyright". Translations in .mo catalogs are
distributed under the package's license.
"""
import collections
import os
import re
import sys


def main_license(pkg):
    path = f"/usr/share/doc/{pkg}/copyright"
    if not os.path.exists(path):
        return "see copyright"
    txt = open(path, errors="replace").read()
    for stanza in re.split(r"\n\s*\n", txt):
        if re.search(r"^Files:\s*\*\s*$", stanza, re.M):
            m = re.search(r"^License:\s*(.+)$", stanza, re.M)
            if m:
                return m.group(1).strip()
    return "see copyright"


def main(raw):
    pk = dict(l.rstrip("\n").split("\t") for l in open(os.path.join(raw, "gettext_pkgs.tsv")))
    by = collections.defaultdict(lambda: [0, set()])
    for l in open(os.path.join(raw, "gettext.tsv"), encoding="utf-8"):
        cat = l.rstrip("\n").split("\t")[2]
        p = pk.get(cat, "?")
        by[p][0] += 1
        by[p][1].add(cat)
    print("| Debian package | pairs extracted | catalogs | license (Files: *) |")
    print("|---|---:|---|---|")
    for p, (n, cats) in sorted(by.items(), key=lambda x: (-x[1][0], x[0])):
        c = ", ".join(sorted(cats))
        if len(c) > 60:
            c = c[:57] + "..."
        print(f"| {p} | {n} | {c} | {main_license(p)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/var/cache/tern/data/raw")
