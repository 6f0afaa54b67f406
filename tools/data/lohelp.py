#!/usr/bin/env python3
"""Align the LibreOffice help (Debian: libreoffice-help-de / -en-us, compiled to HTML under
/usr/share/libreoffice/help/{de,en-US}/text/...) by file path and paragraph id.

Every element whose id looks like ``par_id...``/``hd_id...`` (the ids of the .xhp sources) is a
translation unit; its text (markup stripped) is paired with the element of the same id (and
occurrence number) in the same file of the other language. Code blocks, untranslated
(identical) and code-like paragraphs are skipped. Output TSV: ``de<TAB>en<TAB>file#id``.
"""
import os
import re
import sys
from html.parser import HTMLParser

sys.path.insert(0, os.path.dirname(__file__))
from common import clean  # noqa: E402

UNIT_ID = re.compile(r"^(par|hd|bm)_id\d+")
VOID = {"br", "img", "meta", "link", "input", "hr", "area", "base", "col", "embed", "source", "wbr"}
CODE_CLASSES = {"code", "pycode", "bascode", "codeblock", "input", "literal"}


class Units(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []  # [tag, unit_index or None, is_code]
        self.units = []  # [id, text parts, code]
        self.seen = {}

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            if tag == "br":
                self._text(" ")
            return
        a = dict(attrs)
        uid = a.get("id") or ""
        code = tag in ("pre", "code", "kbd", "script", "style") or bool(
            CODE_CLASSES & set((a.get("class") or "").split()))
        unit = None
        if UNIT_ID.match(uid) and not any(s[1] is not None for s in self.stack):
            n = self.seen.get(uid, 0)
            self.seen[uid] = n + 1
            unit = len(self.units)
            self.units.append([f"{uid}#{n}", [], False])
        skip = "MAC" in (a.get("class") or "").split() or uid.startswith("MAC")
        self.stack.append([tag, unit, code, skip])
        if code:
            for s in self.stack:
                if s[1] is not None:
                    self.units[s[1]][2] = True

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def _text(self, data):
        if any(s[3] for s in self.stack):
            return  # macOS variant of a switchinline: keep only the default text
        for s in self.stack:
            if s[1] is not None:
                self.units[s[1]][1].append(data)
                return

    def handle_data(self, data):
        self._text(data)


def units(path):
    p = Units()
    with open(path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    res = {}
    for uid, parts, code in p.units:
        if not code:
            res[uid] = clean("".join(parts))
    return res


def codelike(s: str) -> bool:
    if re.search(r"[=;{}<>\\|#@$]|::|\w\(\S*\)|\w\.\w+\(|https?:|\bsub\b|\bdim\b|^[A-Z_]+$", s, re.I):
        return True
    letters = sum(ch.isalpha() for ch in s)
    return letters < 3 or letters < 0.6 * len(s.replace(" ", ""))


def main(root: str) -> None:
    de_root, en_root = os.path.join(root, "de"), os.path.join(root, "en-US")
    out = sys.stdout
    for dirpath, _, files in sorted(os.walk(os.path.join(en_root, "text"))):
        for fn in sorted(files):
            if not fn.endswith(".html"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, fn), en_root)
            dpath = os.path.join(de_root, rel)
            if not os.path.exists(dpath):
                continue
            eu, du = units(os.path.join(en_root, rel)), units(dpath)
            for uid, en in eu.items():
                de = du.get(uid)
                if not de or not en or de == en or codelike(en) or codelike(de):
                    continue
                out.write(f"{de}\t{en}\t{rel}#{uid}\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/libreoffice/help")
