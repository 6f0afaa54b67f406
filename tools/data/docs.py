#!/usr/bin/env python3
"""Pair translated documentation: GNOME help (Mallard) and the Debian Administrator's Handbook.

Usage:
  docs.py mallard HELP_DIR > pairs.tsv   # HELP_DIR/C/<doc>/*.page vs HELP_DIR/de/<doc>/*.page
  docs.py html EN_DIR DE_DIR > pairs.tsv          # same-named *.html files (debian-handbook)

Both translations are generated from the English source by tools that keep the document
structure (itstool for Mallard, publican/po4a for the handbook), so the text blocks of a file
pair are matched by their position in document order, after checking that the two files have
the same sequence of block tags (a file whose sequences differ is aligned with difflib on the
tag sequence, and only equal runs are used). Blocks: Mallard title, desc, p; HTML h1-h5, p, div.para,
dt, li/td without inner p, figcaption/caption. Inline markup is flattened to its text; a block
with an empty cross-reference (Mallard ``<link xref=.../>``, rendered from the target's title)
is dropped, as are code and screen blocks. Each block pair is then split into sentences and
aligned (align.align_paragraph: 1:1 or Gale-Church).
Output TSV: ``de<TAB>en<TAB>file``.
"""
import difflib
import html.parser
import os
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(__file__))
from align import align_paragraph  # noqa: E402
from common import clean  # noqa: E402

MALLARD_BLOCKS = {"title", "desc", "p", "subtitle"}
MALLARD_SKIP = {"code", "screen", "info", "media", "credit", "license", "revision"}


def _local(tag):
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def mallard_blocks(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        return []
    out = []

    def walk(el, skip):
        tag = _local(el.tag)
        skip = skip or tag in MALLARD_SKIP
        if tag in MALLARD_BLOCKS and not skip:
            bad = any(_local(x.tag) == "link" and not "".join(x.itertext()).strip()
                      for x in el.iter()) or any(_local(x.tag) in MALLARD_BLOCKS | {"code", "screen"}
                                                 for x in list(el.iter())[1:])
            out.append((tag, None if bad else clean("".join(el.itertext()))))
            return
        for ch in el:
            walk(ch, skip)
    walk(root, False)
    return out


HTML_BLOCKS = {"para", "h1", "h2", "h3", "h4", "h5", "p", "dt", "li", "td", "figcaption", "caption"}
HTML_SKIP = {"pre", "code", "script", "style", "head"}


class _HtmlBlocks(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.stack, self.skip, self.divs = [], [], 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "div":  # DocBook/publican paragraphs: <div class="para">
            para = "para" in (dict(attrs).get("class") or "").split()
            self.divs.append(para)
            if not para:
                return
            tag = "para"
        if tag in HTML_SKIP:
            self.skip += 1
        if tag in HTML_BLOCKS:
            if self.stack:  # a block inside a block (li > p): the outer one is not a unit
                self.stack[-1][2] = True
            self.stack.append([tag, [], False, self.skip > 0])

    def handle_endtag(self, tag):
        if tag == "div":
            if not self.divs or not self.divs.pop():
                return
            tag = "para"
        if tag in HTML_SKIP and self.skip:
            self.skip -= 1
        if tag in HTML_BLOCKS and self.stack and self.stack[-1][0] == tag:
            t, text, nested, skipped = self.stack.pop()
            if not nested:
                self.out.append((t, None if skipped else clean("".join(text))))
            if self.stack:
                self.stack[-1][1].append(" ")

    def handle_data(self, data):
        if self.stack and not self.skip:
            self.stack[-1][1].append(data)


def html_blocks(path):
    p = _HtmlBlocks()
    with open(path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    return p.out


def pair_blocks(de, en):
    """Yield (de_text, en_text) for blocks matched by position in equal tag runs."""
    if [t for t, _ in de] == [t for t, _ in en]:
        runs = [(0, 0, len(de))]
    else:
        sm = difflib.SequenceMatcher(None, [t for t, _ in en], [t for t, _ in de], autojunk=False)
        runs = [(b, a, n) for a, b, n in sm.get_matching_blocks() if n >= 3]
    for i0, j0, n in runs:
        for k in range(n):
            d, e = de[i0 + k][1], en[j0 + k][1]
            if d and e:
                yield d, e


_CODELIKE = re.compile(r"[{}<>=$\\|]|^\W|https?:|/\w+/")


def emit(out, blocks_de, blocks_en, name):
    for d, e in pair_blocks(blocks_de, blocks_en):
        for a, b in align_paragraph(d, e):
            if a != b and not _CODELIKE.search(a) and not _CODELIKE.search(b):
                out.write(f"{a}\t{b}\t{name}\n")


def main(argv):
    out = sys.stdout
    if argv[0] == "mallard":
        # HELP_DIR/C/<document>/*.page vs HELP_DIR/de/<document>/*.page
        for doc in sorted(os.listdir(os.path.join(argv[1], "C"))):
            c_dir, de_dir = os.path.join(argv[1], "C", doc), os.path.join(argv[1], "de", doc)
            if not os.path.isdir(de_dir):
                continue
            for name in sorted(os.listdir(c_dir)):
                if name.endswith(".page") and os.path.exists(os.path.join(de_dir, name)):
                    emit(out, mallard_blocks(os.path.join(de_dir, name)),
                         mallard_blocks(os.path.join(c_dir, name)), f"{doc}/{name}")
    elif argv[0] == "html":
        en_dir, de_dir = argv[1], argv[2]
        for name in sorted(os.listdir(en_dir)):
            if name.endswith(".html") and os.path.exists(os.path.join(de_dir, name)):
                emit(out, html_blocks(os.path.join(de_dir, name)),
                     html_blocks(os.path.join(en_dir, name)), name)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
