#!/usr/bin/env python3
"""Average the newest K weight snapshots of a run and write the shipped checkpoint.

Usage: export.py [--run /var/cache/tern/train/base] [--last 5] [--dtype f16]
                 [--out examples/translation]
Writes OUT/model.safetensors (canonical tensor names, F16 by default, ``__metadata__`` with
"config" = the config JSON string, plus "steps" and "train_hours") and OUT/config.json.
Falls back to RUN/last.pt when the run has no ckpt_*.pt snapshots yet.
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
import tern_torch  # noqa: E402


def snapshots(run):
    return sorted(os.path.join(run, f) for f in os.listdir(run)
                  if f.startswith("ckpt_") and f.endswith(".pt"))


def average(paths):
    avg, meta = None, None
    for p in paths:
        ck = torch.load(p, map_location="cpu")
        sd = ck["model"]
        meta = ck  # the newest snapshot's (its config, and the training time up to it)
        if avg is None:
            avg = {k: v.double().clone() for k, v in sd.items()}
        else:
            for k, v in sd.items():
                avg[k] += v.double()
    for k in avg:
        avg[k] /= len(paths)
    return {k: v.float() for k, v in avg.items()}, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="/var/cache/tern/train/base")
    ap.add_argument("--last", type=int, default=5)
    ap.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    ap.add_argument("--out", default=os.path.join(ROOT, "examples", "translation"))
    args = ap.parse_args()

    paths = snapshots(args.run)[-args.last:] or [os.path.join(args.run, "last.pt")]
    sd, meta = average(paths)
    cfg = tern_torch.Config.from_dict(meta["config"])
    names = tern_torch.canonical_names(cfg)
    assert sorted(names) == sorted(sd), set(names) ^ set(sd)
    dt = torch.float16 if args.dtype == "f16" else torch.float32
    tensors = {k: sd[k].to(dt).contiguous() for k in names}
    steps = [torch.load(p, map_location="cpu")["step"] for p in paths]
    metadata = {
        "config": cfg.to_json(None),
        "averaged_steps": ",".join(str(s) for s in steps),
        "train_hours": f"{meta.get('train_seconds', 0) / 3600:.2f}",
    }
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "model.safetensors")
    tern_torch.save_safetensors(out + ".tmp", tensors, metadata)
    os.replace(out + ".tmp", out)
    cfg.save(os.path.join(args.out, "config.json"))
    # round-trip check
    back, m = tern_torch.load_safetensors(out)
    assert set(back) == set(names) and json.loads(m["config"]) == json.loads(cfg.to_json(None))
    n = sum(t.numel() for t in tensors.values())
    print(f"averaged {len(paths)} checkpoint(s) (steps {metadata['averaged_steps']}) -> {out} "
          f"({n} params, {os.path.getsize(out) / 1e6:.1f} MB, {args.dtype})")


if __name__ == "__main__":
    main()
