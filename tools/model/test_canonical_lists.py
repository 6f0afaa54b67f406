#!/usr/bin/python3
"""The PyTorch references against the runtime's canonical lists (issue 14): one list of config
fields (runtime/model/config_fields.h) and one description of the tensors (DescribeModel), both
printed by the canonical_lists test tool (tests/converter/canonical_lists.cc).

  - The field list names schema/tern.fbs's Config fields, in order.
  - tern_torch.Config has exactly the runtime's config.json keys, with matching types; a field
    Config.to_dict() leaves out at its default has the default the runtime gives an absent key.
  - For several configs (post- and pre-LN, shared / separate / tied embeddings, an output bias,
    every position kind, the embedding LayerNorm, RMSNorm + SwiGLU, grouped- and multi-query attention, the Universal
    Transformer with and without ACT): TernModel's / UniversalModel's state_dict (and
    tern_torch.canonical_names) has exactly the runtime's tensors, with the same shapes.

Run: /usr/bin/python3 tools/model/test_canonical_lists.py build/x86_64/tests/canonical_lists
"""

import dataclasses
import json
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tern_torch as tt  # noqa: E402
import universal_torch as ut  # noqa: E402

TOOL = sys.argv[1] if len(sys.argv) > 1 else "build/x86_64/tests/canonical_lists"
# A cross build's tool runs through its emulator (CMAKE_CROSSCOMPILING_EMULATOR), if any.
EMULATOR = sys.argv[2:]

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "schema", "tern.fbs")
PY_TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "enum"}


def run_tool(*args, stdin=None):
    out = subprocess.run(EMULATOR + [TOOL, *args], input=stdin, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout)


def annotation(f):
    a = f.type if isinstance(f.type, str) else f.type.__name__
    if a.startswith("Optional[") and a.endswith("]"):
        a = a[len("Optional["):-1]
    return PY_TYPES.get(a, a)


def same_value(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-6)
    return a == b


def schema_fields():
    """The field names of schema/tern.fbs's `table Config`, in order."""
    text = open(SCHEMA, encoding="utf-8").read()
    body = re.search(r"^table Config \{(.*?)^\}", text, re.S | re.M).group(1)
    return re.findall(r"^\s*(\w+)\s*:", re.sub(r"//[^\n]*", "", body), re.M)


def check_fields():
    """Returns a list of mismatches between the runtime's field list and schema/tern.fbs (a
    schema field the list lacks would be silently dropped by the writer) and tern_torch.Config."""
    errors = []
    fields = run_tool("fields")
    names = [f["name"] for f in fields]
    if names != schema_fields():
        errors.append(f"runtime/model/config_fields.h lists {names}; {SCHEMA}'s table Config has "
                      f"{schema_fields()} (same names, same order)")
    runtime = {f["key"]: f for f in fields}
    py = {f.name: f for f in dataclasses.fields(tt.Config) if f.name != "extra"}
    for key in runtime.keys() - py.keys():
        errors.append(f"runtime field {key!r} is missing from tern_torch.Config")
    for key in py.keys() - runtime.keys():
        errors.append(f"tern_torch.Config.{key} is not a runtime config field "
                      f"(runtime/model/config_fields.h)")
    for key in sorted(runtime.keys() & py.keys()):
        r, f = runtime[key], py[key]
        if annotation(f) != r["type"]:
            errors.append(f"{key}: tern_torch type {f.type!r}, runtime {r['type']}")
        default = f.default
        if r["type"] == "enum" and default not in r["choices"]:
            errors.append(f"{key}: tern_torch default {default!r} is not one of {r['choices']}")
        if key in tt.Config._OPTIONAL:
            # to_dict() leaves it out at its default: the runtime must read the same value.
            if r["required"]:
                errors.append(f"{key}: tern_torch omits it at its default; the runtime requires it")
            elif not same_value(default, r["absent"]):
                errors.append(f"{key}: tern_torch omits it at default {default!r}; an absent key "
                              f"is {r['absent']!r} to the runtime")
    return errors


def configs():
    """(label, config, model class, output_bias): the variants tern_torch implements."""
    base = dict(d_model=24, heads=4, encoder_layers=2, decoder_layers=2, d_ff=40,
                src_vocab_size=30, tgt_vocab_size=30)
    two = dict(base, shared_embeddings=False, tied_output=False, tgt_vocab_size=33)
    c = tt.Config
    u = ut.UniversalConfig
    ubase = dict(d_model=16, heads=2, d_ff=24, src_vocab_size=20, tgt_vocab_size=20)
    return [
        ("post-LN, shared + tied embeddings", c(**base), tt.TernModel, False),
        ("pre-LN, separate vocabularies, untied, output bias",
         c(**two, norm="pre", activation="gelu"), tt.TernModel, True),
        ("post-LN, shared but untied, output bias",
         c(**base, tied_output=False), tt.TernModel, True),
        ("learned positions", c(**base, position="learned", max_positions=40), tt.TernModel, False),
        ("learned positions, embedding LayerNorms (BART), pre-LN, separate vocabularies",
         c(**two, norm="pre", position="learned", max_positions=40, layernorm_embedding=True),
         tt.TernModel, True),
        ("Shaw relative positions",
         c(**two, norm="pre", position="relative", relative_attention="shaw",
           relative_max_distance=3), tt.TernModel, False),
        ("T5 relative bias",
         c(**base, norm="pre", position="relative", relative_attention="t5_bias",
           relative_buckets=8, relative_max_distance=6), tt.TernModel, False),
        ("rotary (part of d_head), RMSNorm, SwiGLU",
         c(**two, norm="pre", norm_kind="rms_norm", activation="swiglu", position="rotary",
           rotary_dim=4), tt.TernModel, False),
        ("grouped-query attention (kv_heads 2 of 4), rotary",
         c(**base, kv_heads=2, position="rotary"), tt.TernModel, False),
        ("multi-query attention (kv_heads 1), pre-LN",
         c(**two, norm="pre", kv_heads=1), tt.TernModel, True),
        ("no positions, SwiGLU", c(**base, activation="swiglu", position="none"), tt.TernModel,
         False),
        ("universal transformer", u(**ubase, universal_steps=3), ut.UniversalModel, False),
        ("universal transformer with ACT, pre-LN, untied",
         u(**ubase, universal_steps=4, act_threshold=0.9, norm="pre", tied_output=False,
           shared_embeddings=False), ut.UniversalModel, True),
    ]


def compare(label, py, runtime):
    """py: {name: shape}; runtime: the tool's tensor list. Every tensor of the reference is one
    the runtime reads, with its shape, and every tensor the runtime requires is there (optional
    ones, e.g. output_projection.bias or an RMSNorm's bias, may be absent). Returns mismatches."""
    errors = []
    rt = {t["name"]: t for t in runtime}
    for name in sorted(py.keys() - rt.keys()):
        errors.append(f"{label}: tern_torch has {name}, the runtime has no such tensor")
    for name in sorted(rt.keys() - py.keys()):
        if rt[name]["required"]:
            errors.append(f"{label}: the runtime requires {name}, tern_torch lacks it")
    for name in sorted(py.keys() & rt.keys()):
        if list(py[name]) != rt[name]["shape"]:
            errors.append(f"{label}: {name} is {list(py[name])} in tern_torch, "
                          f"{rt[name]['shape']} in the runtime")
    return errors


def check_names():
    errors = []
    cases = configs()
    layouts = run_tool("layout", stdin=json.dumps([cfg.to_dict() for _, cfg, _, _ in cases]))
    for (label, cfg, model_class, output_bias), layout in zip(cases, layouts):
        if "error" in layout:
            errors.append(f"{label}: the runtime refuses the config: {layout['error']}")
            continue
        model = model_class(cfg, output_bias=output_bias)
        state = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        errors += compare(label, state, layout["tensors"])
        if model_class is tt.TernModel:
            names = tt.canonical_names(cfg, output_bias)
            if sorted(names) != sorted(state):
                errors.append(f"{label}: tern_torch.canonical_names differs from the state_dict: "
                              f"{sorted(set(names) ^ set(state))}")
    return errors, len(cases)


def main():
    field_errors = check_fields()
    for e in field_errors:
        print("FAILED:", e, flush=True)
    name_errors, n = check_names()
    for e in name_errors:
        print("FAILED:", e)
    if field_errors or name_errors:
        sys.exit(1)
    print(f"config fields equal; tensor names and shapes equal for {n} configs")


if __name__ == "__main__":
    main()
