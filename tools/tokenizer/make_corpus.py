#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/corpus.txt: the text on which tern's byte-level BPE tokenizer
is checked against Hugging Face's JavaScript tokenizers (tests/runtime/tokenizer/agreement/),
and on which tools/tokenizer/train_bpe.py trains the fixture tokenizers.

One text per line, UTF-8, several thousand lines:
  - English and German messages of the gettext catalogs installed on this Debian host
    (/usr/share/locale/{de,...}/LC_MESSAGES/*.mo: msgid and the German msgstr), and messages in
    Japanese, Chinese, Korean, Russian, Ukrainian, Greek, Arabic, Hebrew, Hindi, Thai and
    Vietnamese from the same catalogs;
  - lines of this repository's code and documentation (C++, Python, shell, CMake, Markdown) at
    a fixed commit (SOURCE_COMMIT);
  - written-out edge cases: contractions in every case, white space runs (tabs, no-break and
    ideographic spaces, U+2028), digits of several scripts, emoji sequences (ZWJ, flags, skin
    tones, keycaps), combining marks (NFD text, Indic, Thai, Arabic, Hebrew), special tokens
    of the fixtures, and random mixes of all of these;
  - text that NFC changes: decomposed (NFD) messages, and marks out of canonical order.

Left out everywhere: invalid UTF-8 (none can occur: the text is Python str), control
characters other than tab, unassigned and private-use code points of this Python's Unicode
version, and U+FEFF / U+0085, the two code points where JavaScript's \\s and Unicode's
White_Space differ (the JavaScript ByteLevel split uses \\s; tern and the Rust tokenizers use
White_Space), so that a difference found is a difference of tokenization.

Deterministic for a given host (the catalogs are whatever its packages installed; rerunning on
the host that made it gives the same bytes): the committed file is the reference, this script
documents how it was made.
Usage: python3 tools/tokenizer/make_corpus.py [OUTPUT]
"""
import fnmatch
import glob
import os
import random
import subprocess
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "data"))
from gettext_mo import read_mo  # noqa: E402

EXCLUDED = {"\ufeff", "\x85"}
OTHER_LANGUAGES = ["ja", "zh_CN", "ko", "ru", "uk", "el", "ar", "he", "hi", "th", "vi"]


def allowed(line):
    if not line or len(line) > 300:
        return False
    for ch in line:
        cat = unicodedata.category(ch)
        if ch in EXCLUDED or cat in ("Cn", "Co", "Cs") or (cat == "Cc" and ch != "\t"):
            return False
    return True


def catalog_messages(language):
    """(msgid, msgstr) lines of every catalog of a language, in file and message order."""
    out = []
    for path in sorted(glob.glob("/usr/share/locale/%s/LC_MESSAGES/*.mo" % language)):
        try:
            entries = list(read_mo(path))
        except Exception:  # a damaged catalog: skip it
            continue
        for msgid, msgstr in entries:
            if not msgid or not msgstr:
                continue
            try:
                en = msgid.decode("utf-8").split("\x04")[-1].split("\x00")[0]
                tr = msgstr.decode("utf-8").split("\x00")[0]
            except UnicodeDecodeError:
                continue
            out.append((en, tr))
    return out


def sample(items, count, rng):
    items = sorted(set(items))
    rng.shuffle(items)
    return items[:count]


def message_lines(rng):
    lines = []
    de = catalog_messages("de")
    english = [l for en, _ in de for l in en.split("\n")]
    german = [l for _, tr in de for l in tr.split("\n")]
    lines += sample([l for l in english if allowed(l)], 750, rng)
    lines += sample([l for l in german if allowed(l)], 750, rng)
    for language in OTHER_LANGUAGES:
        text = [l for _, tr in catalog_messages(language) for l in tr.split("\n")]
        lines += sample([l for l in text if allowed(l)], 60, rng)
    return lines


# The repository text is read at a fixed commit (the one this branch started from), so that
# rerunning the script gives the same corpus whatever the working tree holds now.
SOURCE_COMMIT = "9d5c74b"


def repository_lines(rng):
    def git(*args):
        return subprocess.run(["git", "-C", ROOT] + list(args), check=True,
                              capture_output=True).stdout.decode("utf-8")

    files = git("ls-tree", "-r", "--name-only", SOURCE_COMMIT).split("\n")
    code_patterns = ["runtime/*.cc", "runtime/*.h", "converter/*.cc", "tools/*.py", "tools/*.sh",
                     "tests/*.sh", "*CMakeLists.txt", "Makefile"]
    code, docs = [], []
    for path in files:
        if any(fnmatch.fnmatch(path, p) for p in code_patterns):
            code += git("show", SOURCE_COMMIT + ":" + path).split("\n")
        elif fnmatch.fnmatch(path, "docs/*.md") or path == "README.md":
            docs += git("show", SOURCE_COMMIT + ":" + path).split("\n")
    return (sample([l for l in code if allowed(l) and l.strip()], 800, rng) +
            sample([l for l in docs if allowed(l) and l.strip()], 450, rng))


EDGE_CASES = r"""I'm sure they'll say it's fine, don't you think? We've seen it. She'd know. You're right.
I'M SURE THEY'LL SAY IT'S FINE, DON'T YOU THINK? WE'VE SEEN IT. SHE'D KNOW. YOU'RE RIGHT.
Mixed 'Re 'rE 'Ve 'vE 'Ll 'lL 'LL 'S 'T 'M 'D and 're 've 'll 's 't 'm 'd
Long s: it'ſ the ſame 'ſ 'ſt 'ſs
'tis 'twas 'em 'cause 'round 'n' rock'n'roll
Paul's book, the dogs' bowls, James's car, it''s, '', ', 's
curly apostrophes: it’s don’t they’ll ‘quoted’ “double”
l'homme c'est aujourd'hui qu'il n'y a d'accord
'90s '80s '2024 'x 'y '1
  two leading spaces
    four leading spaces and trailing ones    
	a tab	between	words	
		two tabs, then text
 	 mixed space tab space
word  two  spaces  between  words
word   three   spaces
a     b          c
trailing tab	
 
   
	
12345678901234567890
3.14159 2.71828 1,000,000 1.000.000,50 -42 +7 1e-10 0x1F 0b1010 0o777
2024-05-20 12:34:56.789 UTC+02:00
v1.2.3 x86_64 aarch64 armv7 i386 utf-8 sha256 md5
phone: +49 (0)30 1234567, ISBN 978-3-16-148410-0
Arabic-Indic digits: ٠١٢٣٤٥٦٧٨٩ and extended: ۰۱۲۳۴۵۶۷۸۹
Devanagari digits: ०१२३४५६७८९ Bengali: ০১২৩৪৫৬৭৮৯ Thai: ๐๑๒๓๔๕๖๗๘๙
Fullwidth: １２３４５６７８９０ and ＡＢＣ ａｂｃ
superscripts x² y³ z¹ and subscripts H₂O CO₂
fractions ½ ¼ ¾ ⅓ ⅔ ⅛
Roman numerals Ⅰ Ⅱ Ⅲ Ⅳ Ⅻ ⅰ ⅱ ⅲ ↉
circled ① ② ③ ⑳ and parenthesized ⑴ ⑵ and dingbats ❶ ❷
a1b2c3 1a2b3c 123abc abc123 1 2 3  4  5
 123 and  456 and   789
👍 👍🏽 👍🏿 👨‍👩‍👧‍👦 👩‍💻 🧑🏽‍🚀 🏳️‍🌈 🏴‍☠️
flags: 🇩🇪 🇯🇵 🇺🇸 🇧🇷 🇪🇺🇩🇪
keycaps: 1️⃣ 2️⃣ #️⃣ *️⃣ and hearts ❤️ ♥ ❣️ 💔
Hello 🌍 world! 🙂🙂🙂 ok👌ok 🚀🚀
emoji+text: 🎉party🎉 🍕pizza 🤖robot
©®™ ℃ ℉ № ℗ ♠♣♥♦ ★☆ ✓✔✗✘ ☐☑☒
arrows → ← ↑ ↓ ⇒ ⇔ ⟶ math ∀x∈ℝ: x² ≥ 0, ∑ ∫ √ ∞ ≠ ≈ ≤ ≥ ± × ÷
Ελληνικά: Γειά σου Κόσμε! αβγδε ΑΒΓΔΕ
Русский: Привет, мир! Съешь же ещё этих мягких французских булок.
Українська: Гей, хлопці! Їжак ґанок Єва
עברית: שָׁלוֹם עוֹלָם
العربية: مَرْحَبًا بِالْعَالَم
हिन्दी: नमस्ते दुनिया, क्षत्रिय ज्ञान श्री
ภาษาไทย: สวัสดีชาวโลก น้ำ ผู้ใหญ่
Tiếng Việt: Xin chào thế giới, người Việt Nam
한국어: 안녕하세요 세계, 한글 키보드
日本語: こんにちは世界。漢字、ひらがな、カタカナ、ｶﾀｶﾅ。
中文：你好，世界！这是一个测试。繁體中文：這是一個測試。
mixed 日本語English混合テキスト123です
“Anführungszeichen” „deutsche“ »Guillemets« ‹einfach› ‚halb‘
Straße, Größe, Übergröße, ÄÖÜäöüß, ẞ
em dash — en dash – hyphen ‐ minus − ellipsis … bullet • middot ·
!!! ??? ... ,,, ;;; ::: --- ___ *** ### @@@ $$$ %%% ^^^ &&& |||
(hello) [world] {braces} <angle> «french» 「japanese」 【lenticular】
e.g. i.e. U.S.A. Dr. Mr. etc. vs. approx.
https://example.com/path/to/page?query=1&other=two#anchor
user.name+tag@example.org, ftp://ftp.debian.org/debian/
/usr/share/doc/tern/README.md C:\Windows\System32\drivers
snake_case_name camelCaseName PascalCaseName SCREAMING_CASE kebab-case-name
int main(int argc, char** argv) { return argc > 1 ? 0 : 1; }
std::vector<std::pair<int, float>> v{{1, 2.5f}, {3, -4.0f}};
def f(x: int) -> int:  return x ** 2 if x else -1  # comment
    for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];
{"key": [1, 2.5e-3, null, true, "str\u00e9"], "nested": {"a": {}}}
SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;
$ ls -la | grep '^d' | awk '{print $9}' > dirs.txt 2>&1
#include <stdio.h>
// comment /* block */ -- sql ; lisp # shell
x+=1;y-=2;z*=3;w/=4;a%=5;b<<=1;c>>=2;d&=e;f|=g;h^=i;
<|endoftext|>
<|endoftext|>Hello<|endoftext|>
Hello <|endoftext|> world
<|endoftext|><|endoftext|><|endoftext|>
<|endoftext| not quite <|endoftext|x|> <| endoftext |>
<|im_start|>system
<|im_start|>user Hello, who are you?<|im_end|>
<|im_start|>assistant I am a model.<|im_end|><|endoftext|>
<|begin_of_text|>Once upon a time<|end_of_text|>
<|begin_of_text|><|start_header_id|>user<|end_header_id|> Hi!<|eot_id|>
<|start_header_id|>assistant<|end_header_id|>  Hello  <|eot_id|>
<|reserved_special_token_0|><|reserved_special_token_1|>
The <mask> sat on the mat. The   <mask>   sat. <mask><mask>
<tool_call>{"name": "f", "arguments": {}}</tool_call>
<pad><s></s><unk> <|fim_prefix|>def<|fim_suffix|>
NFD: Café déjà vu, Ångström, Ñoño, Zoë, naïve, façade, résumé"""


def edge_lines():
    lines = EDGE_CASES.split("\n")
    # White space other than ASCII (written as escapes: an editor would not show them).
    lines += ["no-break space: 100\u00a0km/h, 10\u00a0%, \u00ab\u00a0bonjour\u00a0\u00bb",
              "thin space: 10\u2009000 and narrow no-break: 10\u202f000",
              "ideographic space: \u65e5\u672c\u8a9e\u3000\u30c6\u30ad\u30b9\u30c8\u3000",
              "em space: a\u2003b\u2002c\u2003\u2003d, figure\u2007space, hair\u200aspace",
              "line separator: a\u2028b paragraph separator: c\u2029d",
              "ogham space mark: a\u1680b, medium math space: c\u205fd",
              "zero width: a\u200bb\u200cc\u200dd (not white space) and soft\u00adhyphen",
              " \u00a0 \u3000\t\u2003 mixed runs \u00a0\u00a0 ",
              "tabs and spaces\t \t  \t\t   end"]
    # Decomposed (NFD) text: base letters followed by combining marks.
    for text in ["Café déjà vu à la française", "Ångström Ñoño Zoë naïve façade résumé",
                 "Tiếng Việt có nhiều dấu thanh", "한국어 문장입니다", "Größe Übergröße",
                 "e\u0301 a\u0308\u0304 o\u0302\u0303 i\u0327\u0301 u\u031b\u0309"]:
        lines.append("NFD: " + unicodedata.normalize("NFD", text))
        lines.append("NFKC: " + unicodedata.normalize("NFKC", text + " ﬁ ﬀ ①"))
    lines += ["combining alone: \u0301 \u0308\u0308 x\u20dd \u0363a", "Zalgo: Z\u0351\u0342a\u0310l\u0346g\u0308o\u0334"]
    return lines


def unnormalized_lines(messages, rng):
    """Text that NFC changes (for the tokenizers with the NFC normalizer): decomposed messages,
    and marks in an order that is not canonical."""
    out = []
    for line in messages:
        nfd = unicodedata.normalize("NFD", line)
        if nfd != line:
            out.append(nfd)
    out = sample(out, 150, rng)
    marks = ["\u0301", "\u0323", "\u0308", "\u0327", "\u0302", "\u031b", "\u0345"]
    for _ in range(40):
        word = "".join(rng.choice("aeiouAEIOUnsyw\u03b1\u03c9") + "".join(
            rng.sample(marks, rng.randint(1, 3))) for _ in range(rng.randint(2, 6)))
        out.append("marks out of order: " + word)
    return out


def random_lines(rng, count):
    pools = [
        ["the", "Haus", "naïve", "über", "日本", "данные", "λόγος", "x", "I", "A", "ok", "nicht"],
        [" ", "  ", "   ", "\t", " \t", "\u00a0", "\u3000"],
        ["'s", "'t", "'re", "'ll", "'D", "'M", "'VE", "'", "’"],
        ["0", "7", "42", "123", "2024", "3.5", "١٢", "²", "½", "１"],
        [".", ",", "!", "?", "...", "--", "(", ")", "[", "]", "\"", "#", "@", "/", "\\", "_", "-"],
        ["🙂", "👍🏽", "🇩🇪", "❤️", "👨‍👩‍👧", "1️⃣"],
        ["\u0301", "\u0308", "\u20dd"],
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<mask>", "<tool_call>"],
    ]
    weights = [30, 25, 6, 10, 12, 4, 2, 2]
    out = []
    for _ in range(count):
        pieces = [rng.choice(rng.choices(pools, weights)[0]) for _ in range(rng.randint(1, 24))]
        out.append("".join(pieces))
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "tests", "fixtures", "tokenizer", "corpus.txt")
    rng = random.Random(15)
    messages = message_lines(rng)
    lines = (messages + repository_lines(rng) + edge_lines() + random_lines(rng, 300) +
             unnormalized_lines(messages, rng))
    seen, out = set(), []
    for line in lines:
        if line not in seen and allowed(line) or line in ("", " ", "   ", "\t"):
            seen.add(line)
            out.append(line)
    random.Random(16).shuffle(out)  # mix the kinds, so both halves of the corpus have each
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(out) + "\n")
    print("%s: %d lines, %d bytes (Unicode %s)" % (path, len(out), os.path.getsize(path),
                                                    unicodedata.unidata_version))


if __name__ == "__main__":
    main()
