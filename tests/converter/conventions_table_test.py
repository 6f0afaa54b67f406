#!/usr/bin/python3
"""docs/CONVENTIONS.md's tensor tables against the runtime's canonical names (issue 14).

The runtime's description (DescribeModel, printed for a config by the canonical_lists tool,
tests/converter/canonical_lists.cc) is the one list of tensor names. The tables under
"Canonical tensor names" in CONVENTIONS.md are read as data:

  - a table is one whose header starts `| name | shape |`; those before the "Decoder-only"
    heading describe encoder-decoder (and Universal Transformer) models, the one after it
    decoder-only models;
  - a name cell holds backticked patterns: `{i}` is a layer index, `{a,b}` alternatives;
  - a shape cell holds one shape per rank, `/`-separated ("[d_ff, d] / [d_ff]" for a weight and
    its bias), in the symbols below.

For a set of configs of each kind, every tensor of the runtime must match a row of its kind's
tables, with that row's shape; every pattern of a row (each alternative) must name a tensor of
some config. A renamed, added or removed tensor, or a wrong shape, on either side fails.

Run: /usr/bin/python3 tests/converter/conventions_table_test.py TOOL docs/CONVENTIONS.md
"""

import itertools
import json
import re
import subprocess
import sys

TOOL, DOC = sys.argv[1], sys.argv[2]
EMULATOR = sys.argv[3:]

BASE = dict(d_model=24, heads=4, d_ff=40, max_positions=50)
ENCODER_DECODER = [
    dict(BASE, encoder_layers=2, decoder_layers=2, vocab_size=30, shared_embeddings=True,
         tied_output=True),
    dict(BASE, encoder_layers=1, decoder_layers=2, src_vocab_size=30, tgt_vocab_size=33,
         norm="pre", position="learned"),
    dict(BASE, encoder_layers=1, decoder_layers=1, vocab_size=30, position="learned",
         layernorm_embedding=True),
    dict(BASE, encoder_layers=2, decoder_layers=1, vocab_size=30, post_ln_final_norm=True,
         position="relative", relative_attention="shaw", relative_max_distance=3),
    dict(BASE, encoder_layers=1, decoder_layers=1, vocab_size=30, norm="pre",
         position="relative", relative_attention="t5_bias", relative_buckets=8,
         relative_max_distance=6),
    dict(BASE, encoder_layers=1, decoder_layers=1, src_vocab_size=30, tgt_vocab_size=33,
         norm="pre", norm_kind="rms_norm", activation="swiglu", position="rotary", kv_heads=2),
    dict(BASE, encoder_layers=1, decoder_layers=1, vocab_size=30, norm="pre", head_dim=10,
         kv_heads=2, activation="geglu"),
    dict(BASE, architecture="universal", encoder_layers=1, decoder_layers=1, vocab_size=30,
         universal_steps=3, act_threshold=0.9, norm="pre", kv_heads=1),
]
DECODER_ONLY = [
    dict(BASE, architecture="decoder_only", decoder_layers=2, src_vocab_size=0,
         tgt_vocab_size=33, norm="pre", activation="gelu_tanh", position="learned",
         tied_output=True),
    dict(BASE, architecture="decoder_only", decoder_layers=2, src_vocab_size=0,
         tgt_vocab_size=33, norm="pre", norm_kind="rms_norm", activation="swiglu",
         position="rotary", kv_heads=2),
    dict(BASE, architecture="decoder_only", decoder_layers=1, src_vocab_size=0,
         tgt_vocab_size=33, position="sinusoidal"),
    dict(BASE, architecture="decoder_only", decoder_layers=2, src_vocab_size=0,
         tgt_vocab_size=33, norm="pre", norm_kind="rms_norm", activation="geglu",
         position="rotary", kv_heads=1, head_dim=8, tied_output=True),
]


def symbols(c, tensors):
    d, heads = c["d_model"], c["heads"]
    kv = c.get("kv_heads") or heads
    dh = c.get("head_dim") or d // heads
    vocab = c.get("tgt_vocab_size", c.get("vocab_size"))
    return {"d": d, "d_model": d, "d_ff": c["d_ff"], "heads": heads, "kv_heads": kv,
            "d_head": dh, "d_q": heads * dh, "d_kv": kv * dh, "max_positions": c["max_positions"],
            "src_vocab": c.get("src_vocab_size", c.get("vocab_size")), "tgt_vocab": vocab,
            "vocab": vocab, "k": c.get("relative_max_distance", 16),
            "relative_buckets": c.get("relative_buckets", 32)}


def expand(pattern):
    """`a.{x,y}.b` -> ["a.x.b", "a.y.b"]; `{i}` stays (a layer index)."""
    parts = re.split(r"(\{[^}]*\})", pattern)
    choices = [[p] if not (p.startswith("{") and p != "{i}") else p[1:-1].split(",")
               for p in parts]
    return ["".join(x).strip() for x in itertools.product(*choices)]


def regex(pattern):
    return re.compile("^" + re.escape(pattern).replace(re.escape("{i}"), r"\d+") + "$")


def read_tables(path):
    """[(kind, line number, [expanded patterns], [shape strings])] of the tensor tables."""
    rows, kind, in_names, in_table = [], None, False, False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("## "):
            in_names = line.startswith("## Canonical tensor names")
            kind = "encoder_decoder" if in_names else None
        elif line.startswith("### ") and in_names:
            kind = "decoder_only" if "Decoder-only" in line else kind
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") \
            else None
        if cells is None:
            in_table = False
            continue
        if cells[:2] == ["name", "shape"]:
            in_table = kind is not None
            continue
        if not in_table or set(cells[0]) <= set("-: "):
            continue
        patterns = [p for b in re.findall(r"`([^`]*)`", cells[0]) for p in expand(b)]
        shapes = [s.strip() for s in cells[1].split("/") if s.strip()]
        rows.append((kind, number, patterns, shapes))
    return rows


def evaluate(shape, env):
    dims = shape.strip().strip("[]").split(",")
    # "2k+1" -> 2*k+1; "kv_heads * d_head" as it is.
    return [eval(re.sub(r"(\d)([a-z])", r"\1*\2", x), {"__builtins__": {}}, env) for x in dims]


def main():
    rows = read_tables(DOC)
    errors = []
    if not any(k == "encoder_decoder" for k, *_ in rows) or not any(
            k == "decoder_only" for k, *_ in rows):
        errors.append(f"{DOC}: no tensor tables found for both kinds (the layout moved?)")
    used = set()
    for kind, configs in (("encoder_decoder", ENCODER_DECODER), ("decoder_only", DECODER_ONLY)):
        out = subprocess.run(EMULATOR + [TOOL, "layout"], input=json.dumps(configs),
                             capture_output=True, text=True, check=True)
        mine = [(n, p, s) for k, n, ps, s in rows if k == kind for p in ps]
        compiled = [(n, p, regex(p), s) for n, p, s in mine]
        for config, layout in zip(configs, json.loads(out.stdout)):
            if "error" in layout:
                errors.append(f"config {config} refused: {layout['error']}")
                continue
            env = symbols(config, layout["tensors"])
            for t in layout["tensors"]:
                hits = [(n, p, s) for n, p, r, s in compiled if r.match(t["name"])]
                if not hits:
                    errors.append(f"{t['name']} ({kind}) is in no row of {DOC}'s tables")
                for n, p, shapes in hits:
                    used.add((n, p))
                    want = [s for s in shapes if s.count(",") + 1 == len(t["shape"])]
                    got = [evaluate(s, env) for s in want]
                    if t["shape"] not in got:
                        errors.append(f"{t['name']} is {t['shape']} in the runtime; {DOC}:{n} "
                                      f"says {' / '.join(shapes) or 'nothing'} (= {got})")
        for n, p, _ in mine:
            if (n, p) not in used:
                errors.append(f"{DOC}:{n}: `{p}` names no tensor of any {kind} test config")
    # One line per mismatch, not per layer.
    for e in dict.fromkeys(re.sub(r"\.layers\.\d+\.", ".layers.{i}.", e) for e in errors):
        print("FAILED:", e)
    if errors:
        sys.exit(1)
    print(f"{len(rows)} table rows equal the runtime's names and shapes")


if __name__ == "__main__":
    main()
