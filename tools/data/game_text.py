#!/usr/bin/env python3
"""Extract English->German pairs from game text that is not in gettext catalogs.

Usage: game_text.py hedgewars LOCALE/de.lua > pairs.tsv
       game_text.py tuxpaint STAMPS_DIR > pairs.tsv

* hedgewars (`hedgewars-data`, Data/Locale/de.lua): a Lua table of ``["English"] = "German",``
  entries (missions, training, game modes); untranslated entries are commented out with ``--``
  and skipped. Lua escapes are undone (an entry with an escape other than \n \t \" \' \\ is
  skipped); ``|`` is the game's soft line wrap, often in mid-sentence, so it becomes a space.
* tuxpaint (`tuxpaint-stamps-default`, stamps/**/*.txt): each stamp's description file starts
  with the English text, followed by ``LANG.utf8=text`` lines; ``de.utf8`` is the German.
  Short descriptive sentences ("A frog." / "Ein Frosch.").

Both go through gettext_mo.message_pairs, so they are cleaned and filtered like the corpus v3
catalogs (corpus v3's rules: gettext_mo --v3).
Output TSV: ``de<TAB>en<TAB>name`` (name: hedgewars, tuxpaint-stamps).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from gettext_mo import message_pairs  # noqa: E402

_LUA_STR = r'"((?:[^"\\]|\\.)*)"'
_LUA_ENTRY = re.compile(r"^\s*\[" + _LUA_STR + r"\]\s*=\s*" + _LUA_STR)
_LUA_ESC = re.compile(r"\\(.)")
_LUA_SIMPLE = {"n": "\n", "t": "\t", '"': '"', "'": "'", "\\": "\\"}


def _unlua(s):
    """The Lua string's text, or None when it uses an escape not undone here (\\ddd, \\x..)."""
    if any(m.group(1) not in _LUA_SIMPLE for m in _LUA_ESC.finditer(s)):
        return None
    return _LUA_ESC.sub(lambda m: _LUA_SIMPLE[m.group(1)], s).replace("|", " ")


def hedgewars(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _LUA_ENTRY.match(line)  # a commented-out (untranslated) entry starts with --
            if m:
                en, de = _unlua(m.group(1)), _unlua(m.group(2))
                if en is not None and de is not None:
                    yield from message_pairs(en, de, v3=True)


def tuxpaint_stamp(text):
    lines = text.splitlines()
    if not lines or "=" in lines[0]:
        return
    en = lines[0]
    for line in lines[1:]:
        if line.startswith("de.utf8="):
            yield from message_pairs(en, line[len("de.utf8="):].rstrip("|"), v3=True)
            return


def tuxpaint(root):
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".txt"):
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    yield from tuxpaint_stamp(f.read())


def main(kind, path):
    if kind == "hedgewars":
        pairs, name = hedgewars(path), "hedgewars"
    elif kind == "tuxpaint":
        pairs, name = tuxpaint(path), "tuxpaint-stamps"
    else:
        sys.exit(f"game_text.py: unknown kind {kind!r} (hedgewars, tuxpaint)")
    for de, en in pairs:
        sys.stdout.write(f"{de}\t{en}\t{name}\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
