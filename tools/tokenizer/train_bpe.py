#!/usr/bin/env python3
"""A small byte-level BPE trainer: writes a Hugging Face tokenizer.json in the form GPT-2,
LLaMA 3, Qwen2 or SmolLM use, trained on a text file (pure Python, deterministic).

Usage: python3 tools/tokenizer/train_bpe.py STYLE TEXT OUTPUT [--vocab N] [--every K]
  STYLE   gpt2    ByteLevel pre-tokenizer (GPT-2's split), <|endoftext|> last, in the vocabulary
                  as GPT-2 has it, merges as "a b" strings
          llama3  Split (LLaMA 3's pattern) + ByteLevel(use_regex false), ignore_merges, special
                  tokens after the vocabulary, a TemplateProcessing post-processor adding
                  <|begin_of_text|>, merges as [a, b] pairs, and some whole words in the
                  vocabulary that no merge builds (so that ignore_merges matters)
          qwen2   the NFC normalizer, Split (Qwen2's pattern) + ByteLevel(use_regex false),
                  <|endoftext|>, <|im_start|>, <|im_end|> and the non-special <tool_call>,
                  </tool_call> (normalized) after the vocabulary; trained on NFC text
          bart    BART's (RoBERTa's): ByteLevel pre-tokenizer (GPT-2's split), <s> <pad> </s>
                  <unk> first (ids 0-3, in the vocabulary too), <mask> last (lstrip), a
                  RobertaProcessing post-processor adding <s> before and </s> after a text
          smollm  Digits(individual) + ByteLevel(use_regex true), special tokens first (ids 0..),
                  a <mask> that absorbs white space before it (lstrip) and a <sep> after it
                  (rstrip)
  TEXT    training text, one text per line; lines 0, K, 2K, ... are used (--every, default 2)
  --vocab the vocabulary size to reach, special tokens included (default 1200)
  --shuffle-merges SEED
          write the merges in a seeded random order instead of the order they were learnt: a
          valid tokenizer no trainer makes, where a merge may need tokens only later merges
          build, so the merge order of an implementation is tested beyond what trained files
          show

Training: the text is pre-tokenized with the style's pattern (the same matchers as tern's
runtime/tokenizer/split_patterns.cc, written again here for Python's unicodedata), each piece
mapped to GPT-2's byte-level alphabet, then the most frequent adjacent pair is merged until the
vocabulary is full (ties: the pair whose tokens sort first; pairs seen once are never merged).
"""
import argparse
import collections
import heapq
import json
import os
import random
import sys
import unicodedata

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_unicode_tables import WHITE_SPACE  # noqa: E402

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

SPACE = {cp for first, last in WHITE_SPACE for cp in range(first, last + 1)}


def cls(ch):
    if ord(ch) in SPACE:
        return "s"
    c = unicodedata.category(ch)[0]
    return c if c in "LN" else "o"


def run(text, i, kind, limit=None):
    n = 0
    while i < len(text) and cls(text[i]) == kind and (limit is None or n < limit):
        i += 1
        n += 1
    return i


def space_run(text, i):
    j = run(text, i, "s")
    if j == len(text) or j - i == 1:
        return j
    return j - 1


def split_gpt2(text):
    i, out = 0, []
    while i < len(text):
        j = None
        if text[i] == "'" and i + 1 < len(text):
            if text[i + 1] in "stmd":
                j = i + 2
            elif text[i + 1:i + 3] in ("re", "ve", "ll"):
                j = i + 3
        if j is None and text[i] == " " and i + 1 < len(text) and cls(text[i + 1]) != "s":
            j = run(text, i + 1, cls(text[i + 1]))
        if j is None:
            k = cls(text[i])
            j = run(text, i, k) if k != "s" else space_run(text, i)
        out.append(text[i:j])
        i = j
    return out


def fold(ch):
    f = ch.casefold()
    return f if len(f) == 1 else ""


def split_llama3(text, digits):
    i, out = 0, []
    while i < len(text):
        j = None
        if text[i] == "'" and i + 1 < len(text):
            a = fold(text[i + 1])
            b = fold(text[i + 2]) if i + 2 < len(text) else ""
            if a in ("s", "t", "m", "d") and a:
                j = i + 2
            elif (a, b) in (("r", "e"), ("v", "e"), ("l", "l")):
                j = i + 3
        k = cls(text[i])
        if j is None and k == "L":
            j = run(text, i, "L")
        if (j is None and text[i] not in "\r\n" and k != "N" and i + 1 < len(text) and
                cls(text[i + 1]) == "L"):
            j = run(text, i + 1, "L")
        if j is None and k == "N":
            j = run(text, i, "N", digits)
        if j is None:
            o = i + 1 if text[i] == " " and i + 1 < len(text) and cls(text[i + 1]) == "o" else i
            if cls(text[o]) == "o":
                j = run(text, o, "o")
                while j < len(text) and text[j] in "\r\n":
                    j += 1
        if j is None:
            end, crlf = run(text, i, "s"), None
            for p in range(i, end):
                if text[p] in "\r\n":
                    crlf = p + 1
            j = crlf if crlf is not None else space_run(text, i)
        out.append(text[i:j])
        i = j
    return out


def split_digits(text):
    out, start = [], 0
    for i, ch in enumerate(text):
        if cls(ch) == "N":
            if i > start:
                out.append(text[start:i])
            out.append(ch)
            start = i + 1
    if start < len(text):
        out.append(text[start:])
    return out


def byte_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs))), bs


STYLES = {
    "gpt2": dict(split=split_gpt2, merges_as="strings", specials_first=False),
    "llama3": dict(split=lambda t: split_llama3(t, 3), merges_as="pairs", specials_first=False),
    "qwen2": dict(split=lambda t: split_llama3(t, 1), merges_as="strings", specials_first=False),
    "bart": dict(split=split_gpt2, merges_as="strings", specials_first=True),
    "smollm": dict(split=lambda t: [p for d in split_digits(t) for p in split_gpt2(d)],
                   merges_as="strings", specials_first=True),
}


def added(id_, content, special=True, normalized=False, lstrip=False, rstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": normalized, "special": special}


def train(pieces, alphabet, merges_wanted):
    """Returns the merges (pairs of symbols) in rank order."""
    words = [list(w) for w in pieces]
    counts = list(pieces.values())
    pair_count = collections.Counter()
    where = collections.defaultdict(set)
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[a, b] += counts[i]
            where[a, b].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < merges_wanted:
        c, pair = heapq.heappop(heap)
        if -c != pair_count.get(pair, 0):
            continue  # stale
        if -c < 2:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        for i in sorted(where.pop(pair, ())):
            w = words[i]
            for a, b in zip(w, w[1:]):
                pair_count[a, b] -= counts[i]
            out, k = [], 0
            while k < len(w):
                if k + 1 < len(w) and (w[k], w[k + 1]) == pair:
                    out.append(merged)
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            words[i] = out
            for a, b in zip(out, out[1:]):
                pair_count[a, b] += counts[i]
                where[a, b].add(i)
                heapq.heappush(heap, (-pair_count[a, b], (a, b)))
        pair_count.pop(pair, None)
    return merges


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("style", choices=sorted(STYLES))
    ap.add_argument("text")
    ap.add_argument("output")
    ap.add_argument("--vocab", type=int, default=1200)
    ap.add_argument("--every", type=int, default=2)
    ap.add_argument("--shuffle-merges", type=int, default=None)
    args = ap.parse_args()
    style = STYLES[args.style]
    b2u, order = byte_to_unicode()

    with open(args.text, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    pieces = collections.Counter()
    for line in lines[::args.every]:
        if args.style == "qwen2":
            line = unicodedata.normalize("NFC", line)
        for piece in style["split"](line + "\n"):
            pieces["".join(b2u[b] for b in piece.encode("utf-8"))] += 1

    if args.style == "gpt2":
        specials = [("<|endoftext|>", dict(normalized=True))]
    elif args.style == "llama3":
        specials = [(t, {}) for t in ["<|begin_of_text|>", "<|end_of_text|>",
                                      "<|reserved_special_token_0|>",
                                      "<|reserved_special_token_1|>", "<|start_header_id|>",
                                      "<|end_header_id|>", "<|eot_id|>"]]
    elif args.style == "qwen2":
        specials = [("<|endoftext|>", {}), ("<|im_start|>", {}), ("<|im_end|>", {}),
                    ("<tool_call>", dict(special=False)),
                    ("</tool_call>", dict(special=False, normalized=True))]
    elif args.style == "bart":
        specials = [(t, {}) for t in ["<s>", "<pad>", "</s>", "<unk>"]]
    else:
        specials = [("<|endoftext|>", {}), ("<|im_start|>", {}), ("<|im_end|>", {}),
                    ("<mask>", dict(lstrip=True)), ("<sep>", dict(rstrip=True))]
    # BART's <mask> comes after the vocabulary (and is one more token to make room for).
    mask_last = args.style == "bart"
    extra_words = 40 if args.style == "llama3" else 0
    merges = train(pieces, order, args.vocab - 256 - len(specials) - extra_words - mask_last)
    learnt = list(merges)
    if args.shuffle_merges is not None:
        random.Random(args.shuffle_merges).shuffle(merges)

    vocab = {}
    first = len(specials) if style["specials_first"] else 0
    for b in order:
        vocab[b2u[b]] = first + len(vocab)
    for a, b in learnt:  # ids in the order learnt, whatever order the merges are written in
        if a + b not in vocab:
            vocab[a + b] = first + len(vocab)
    # Whole words no merge builds: with ignore_merges a piece that is one of them is that token.
    for word, _ in sorted(pieces.items(), key=lambda kv: (-kv[1], kv[0])):
        if extra_words == 0:
            break
        if word not in vocab and len(word) >= 3:
            vocab[word] = first + len(vocab)
            extra_words -= 1

    added_tokens = []
    for i, (content, flags) in enumerate(specials):
        id_ = i if style["specials_first"] else first + len(vocab) + i
        if args.style == "gpt2":  # GPT-2 has <|endoftext|> in its vocabulary too
            vocab[content] = id_
        if style["specials_first"]:
            vocab[content] = id_
        added_tokens.append(added(id_, content, **flags))
    if mask_last:
        vocab["<mask>"] = len(vocab)
        added_tokens.append(added(vocab["<mask>"], "<mask>", lstrip=True))
    vocab = dict(sorted(vocab.items(), key=lambda kv: kv[1]))

    if args.style in ("gpt2", "bart"):
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": True}
    elif args.style == "smollm":
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}]}
    else:
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": LLAMA3 if args.style == "llama3" else QWEN2},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
             "use_regex": False}]}
    byte_level_post = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                       "use_regex": True}
    if args.style == "llama3":
        bos = added_tokens[0]
        post = {"type": "Sequence", "processors": [byte_level_post, {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos["content"], "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos["content"], "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos["content"], "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos["content"]: {"id": bos["content"], "ids": [bos["id"]],
                                                "tokens": [bos["content"]]}}}]}
    elif args.style == "bart":
        post = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0],
                "trim_offsets": True, "add_prefix_space": False}
    else:
        post = byte_level_post
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added_tokens,
        "normalizer": {"type": "NFC"} if args.style == "qwen2" else None,
        "pre_tokenizer": pre,
        "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None if args.style != "gpt2" else "",
            "end_of_word_suffix": None if args.style != "gpt2" else "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": args.style == "llama3",
            "vocab": vocab,
            "merges": ([list(m) for m in merges] if style["merges_as"] == "pairs" else
                       [a + " " + b for a, b in merges]),
        },
    }
    with open(args.output, "w", encoding="utf-8", newline="\n") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("%s: %s, %d tokens (%d added), %d merges, %d bytes" %
          (args.output, args.style, len(vocab) + (0 if args.style == "gpt2" or
                                                 style["specials_first"] else len(specials)),
           len(specials), len(merges), os.path.getsize(args.output)))


if __name__ == "__main__":
    main()
