#!/usr/bin/env python3
"""Extract English->German message pairs from compiled gettext catalogs (.mo).

Usage: gettext_mo.py DIR PKGMAP_OUT [PACKAGE] [--v3] > pairs.tsv
(PACKAGE: the Debian package the catalogs come from, for catalogs unpacked from a .deb that is
not installed; default: asked of dpkg -S for each file.)
Parses the GNU .mo binary directly (no gettext module). msgid = English, msgstr = German.
Context (msgctxt) is dropped, plural forms use the singular, accelerators (_ and &) are removed,
multi-line messages are paired line by line when both sides have as many lines (else
skipped), and messages with format specifiers, markup, escapes or code-like text are skipped.
Output TSV: ``de<TAB>en<TAB>catalog``. PKGMAP_OUT receives ``catalog<TAB>debian-package``.
"""
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from common import clean  # noqa: E402

FORMAT = re.compile(r"%[-+ #0'I]*(\d+\$)?[\d*]*(\.[\d*]+)?(hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspnm%]"
                    r"|%\(\w+\)[sd]|\{[\w.:!\-]*\}|\$\{?\w+|<[^>]*>|&\w+;|\\[nt]|\b[a-z]+_[a-z_]+\b|--?\w")
# Corpus v3's rules (--v3; its new sources only): an option name must start a word: "--help" and " -v" are
# options, the dash inside "re-use" or "Raum-Zeit" is not. The first rule rejects every
# hyphenated message (Naev would give 1,782 pairs more, Cataclysm 2,290); corpus v2's sources
# keep it, so that the shipped model's corpus and the held-out sets drawn from it stay as they are.
FORMAT_HYPHENATED = re.compile(FORMAT.pattern[:-len("--?\\w")] + "(?<![\\w-])--?\\w")
ACCEL = re.compile(r"(?<=\w)_(?=\w)|(?<![\w&])[_&](?=\w)|\(_\w\)|\(&\w\)")


def read_mo(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic == 0x950412DE else ">"
    _, n, oo, to = struct.unpack(end + "4I", data[4:20])
    for i in range(n):
        ol, oo_ = struct.unpack(end + "2I", data[oo + 8 * i: oo + 8 * i + 8])
        tl, to_ = struct.unpack(end + "2I", data[to + 8 * i: to + 8 * i + 8])
        msgid = data[oo_: oo_ + ol]
        msgstr = data[to_: to_ + tl]
        yield msgid, msgstr


def strip_accel(s: str) -> str:
    s = re.sub(r"\s*\((_|&)\w\)", "", s)  # "Datei (_F)" style
    s = re.sub(r"(?<![\w&])[_&](?=\w)", "", s)  # leading accelerator
    s = re.sub(r"(?<=[^\W\d_])_(?=[^\W\d_])", "", s) if " " in s or not re.search(r"[a-z]_[a-z]", s) else s
    return s


def ok(s: str, v3: bool = False) -> bool:
    if (FORMAT_HYPHENATED if v3 else FORMAT).search(s) or re.search(r"[\\|=#@~^`]|::|/\w|\w\.\w+\(|\.(c|h|so|py)\b|https?:", s):
        return False
    letters = sum(ch.isalpha() for ch in s)
    return letters >= 2 and letters >= 0.6 * len(s.replace(" ", ""))


# Naev colours text with BEL + one character ("\ao", "\a0"); clean() would drop the BEL and
# leave the letter glued to the next word. Corpus v3's rules remove both.
_BEL_CODE = re.compile("\x07.?", re.S)


def message_pairs(en: str, de: str, v3: bool = False):
    """(German, English) pairs of one translated message, cleaned and filtered.

    Multi-line texts (game dialogue, help) are paired line by line when both sides have the
    same number of non-empty lines, else the message gives nothing (a different line count
    means the translator rearranged it, and a position pairing would be wrong). v3: corpus v3's
    rules for its new sources (words with inner hyphens kept, BEL colour codes removed)."""
    if v3:
        en, de = _BEL_CODE.sub("", en), _BEL_CODE.sub("", de)
    el = [x for x in en.split("\n") if x.strip()]
    dl = [x for x in de.split("\n") if x.strip()]
    if len(el) != len(dl):
        return
    for en1, de1 in zip(el, dl):
        en1, de1 = clean(strip_accel(en1)), clean(strip_accel(de1))
        if not en1 or not de1 or en1 == de1 or not ok(en1, v3) or not ok(de1, v3):
            continue
        yield de1, en1


def main(d: str, pkgmap: str, package: str = "", v3: bool = False) -> None:
    out = sys.stdout
    pm = open(pkgmap, "w")
    for name in sorted(os.listdir(d)):
        if not name.endswith(".mo"):
            continue
        path = os.path.join(d, name)
        try:
            if package:
                raise OSError
            pkg = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True).stdout.split(":")[0]
        except OSError:
            pkg = package or "?"
        pm.write(f"{name[:-3]}\t{pkg or '?'}\n")
        for mid, mstr in read_mo(path):
            if not mid or not mstr:
                continue  # header entry / untranslated
            try:
                en = mid.decode("utf-8").split("\x04")[-1].split("\x00")[0]
                de = mstr.decode("utf-8").split("\x00")[0]
            except UnicodeDecodeError:
                continue
            for de1, en1 in message_pairs(en, de, v3):
                out.write(f"{de1}\t{en1}\t{name[:-3]}\n")


if __name__ == "__main__":
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    if set(flags) - {"--v3"}:
        sys.exit(f"gettext_mo.py: unknown option {sorted(set(flags) - {'--v3'})[0]}")
    main(*[a for a in sys.argv[1:] if not a.startswith("--")][:3], v3=bool(flags))
