#!/usr/bin/env python3
"""Make the benchmark's models: checkpoints (canonical-name safetensors + config.json) and
their .tern conversions, under build/bench/models/ (not in git: they are regenerated).

  base   the paper's base Transformer (d_model 512, 8 heads, 6 + 6 layers, d_ff 2048, shared
         vocabulary of 32000, shared embeddings + tied output, post-LN, ReLU) with random
         weights, fairseq-style init (xavier-uniform matrices, N(0, d^-1/2) embeddings) plus
         small random biases and LayerNorm parameters so that no path is trivially zero.
  demo   examples/translation/model.safetensors (the trained demo model) when it exists, with
         its SentencePiece model; otherwise random weights in the demo's shape
         (tools/train/train.py DEFAULT_MODEL, vocab 8000) and the name "demo-random".

Speed does not depend on the weight values: every engine is made to generate exactly the same
number of tokens (EOS masked), so random weights measure what trained ones would.

Usage: make_base.py --tern build/x86_64/tools/tern [--out build/bench/models]
                    [--models base,demo] [--dtypes fp32,fp16,int8,int4,int4row] [--force]
                   (a dtype with the suffix sl, e.g. int8sl, adds a vocabulary shortlist)
Prints one JSON line: {"<model>": {"checkpoint", "config", "tern": {"fp32": path, ...}}}.
Existing files are kept unless --force (the checkpoint is seeded, so it is reproducible).
"""
import argparse
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
import tern_torch  # noqa: E402

BASE = dict(
    architecture="encoder_decoder", d_model=512, heads=8, encoder_layers=6, decoder_layers=6,
    d_ff=2048, activation="relu", norm="post", layer_norm_eps=1e-5, position="sinusoidal",
    shared_embeddings=True, tied_output=True, src_vocab_size=32000, tgt_vocab_size=32000,
    pad_id=0, bos_id=1, eos_id=2, unk_id=3, decoder_start_id=1, max_positions=256,
)
DEMO = dict(BASE, d_model=256, heads=4, encoder_layers=3, decoder_layers=3, d_ff=1024,
            src_vocab_size=8000, tgt_vocab_size=8000)


def random_checkpoint(cfg_dict, seed):
    cfg = tern_torch.Config(**cfg_dict)
    torch.manual_seed(seed)
    model = tern_torch.TernModel(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("embed_tokens.weight"):
                nn.init.normal_(p, mean=0.0, std=cfg.d_model ** -0.5)
                p[cfg.pad_id].zero_()
            elif p.dim() == 2:
                nn.init.xavier_uniform_(p)
            elif "layer_norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.05 * torch.randn_like(p))
            else:  # biases (linear and LayerNorm)
                p.copy_(0.02 * torch.randn_like(p))
    return cfg, {k: v.detach().contiguous() for k, v in model.state_dict().items()}


def shortlist_flags(d, label, vocab):
    """The model's vocabulary shortlist: the shipped demo's own table; for random weights one built
    from a synthetic id corpus (bench/models/synthetic_corpus.py: speed only)."""
    if label == "demo":
        return ["--shortlist", os.path.join(ROOT, "examples", "translation", "shortlist.txt")]
    corpus = os.path.join(d, "shortlist-corpus")
    if not os.path.exists(os.path.join(corpus, "train.tgt.ids")):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "models", "synthetic_corpus.py"),
                        "--vocab", str(vocab), "--pairs", "20000", "--out", corpus], check=True)
    return ["--shortlist-corpus", os.path.join(corpus, "train.src.ids"),
            os.path.join(corpus, "train.tgt.ids")]


def convert(tern, checkpoint, config, out, dtype, tokenizer=None, shortlist=()):
    """dtype: fp32, fp16, int8, int4 (blocks of 32: --group-size 32, XNNPACK's qb4w kernels), or
    int4row (int4 per row, the converter's default: --group-size 0, qc4w; tern bench --linear);
    shortlist: flags that add a vocabulary shortlist (the dtype's "sl" suffix, e.g. int8sl)."""
    flags = {"int4": ["--dtype", "int4", "--group-size", "32"],
             "int4row": ["--dtype", "int4", "--group-size", "0"]}.get(dtype, ["--dtype", dtype])
    flags = flags + list(shortlist)
    cmd = [tern, "convert", checkpoint, "--config", config, "-o", out] + flags + [
           "--force", "--quiet"]
    if tokenizer:
        cmd += ["--tokenizer", tokenizer]
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", required=True, help="the tern executable (for tern convert)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "models"))
    ap.add_argument("--models", default="base,demo")
    ap.add_argument("--dtypes", default="fp32,fp16,int8,int4,int4row")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()

    result = {}
    for name in [m for m in args.models.split(",") if m]:
        tokenizer = None
        if name == "base":
            label, cfg_dict = "base", BASE
        elif name == "demo":
            shipped = os.path.join(ROOT, "examples", "translation", "model.safetensors")
            spm = os.path.join(ROOT, "examples", "translation", "spm.model")
            if os.path.exists(shipped):
                label, cfg_dict = "demo", None
                tokenizer = spm if os.path.exists(spm) else None
            else:
                label, cfg_dict = "demo-random", DEMO
        else:
            sys.exit(f"unknown model {name!r} (base, demo)")
        d = os.path.join(args.out, label)
        os.makedirs(d, exist_ok=True)
        ckpt = os.path.join(d, "model.safetensors")
        cfg_path = os.path.join(d, "config.json")
        if cfg_dict is None:  # the shipped demo checkpoint: F16 tensors, config in its metadata
            tensors, meta = tern_torch.load_safetensors(shipped)
            cfg = tern_torch.Config.from_json(meta["config"]) if "config" in meta else \
                tern_torch.Config.load(os.path.join(os.path.dirname(shipped), "config.json"))
            if args.force or not os.path.exists(ckpt):
                fp32 = {k: v.float().contiguous() for k, v in tensors.items()}
                tern_torch.save_safetensors(ckpt, fp32, {"config": cfg.to_json(None)})
                cfg.save(cfg_path)
        elif args.force or not (os.path.exists(ckpt) and os.path.exists(cfg_path)):
            cfg, tensors = random_checkpoint(cfg_dict, args.seed)
            tern_torch.save_safetensors(ckpt + ".tmp", tensors, {"config": cfg.to_json(None)})
            os.replace(ckpt + ".tmp", ckpt)
            cfg.save(cfg_path)
            print(f"{label}: wrote {ckpt} ({sum(t.numel() for t in tensors.values())} parameters)",
                  file=sys.stderr)
        terns = {}
        for dtype in [t for t in args.dtypes.split(",") if t]:
            out = os.path.join(d, f"model-{dtype}.tern")
            if args.force or not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(ckpt):
                base_dtype, shortlist = dtype, ()
                if dtype.endswith("sl"):  # e.g. int8sl: int8 with a vocabulary shortlist
                    base_dtype = dtype[:-2]
                    vocab = tern_torch.Config.load(cfg_path).tgt_vocab_size
                    shortlist = shortlist_flags(d, label, vocab)
                convert(args.tern, ckpt, cfg_path, out, base_dtype, tokenizer, shortlist)
                print(f"{label}: wrote {out} ({os.path.getsize(out)} bytes)", file=sys.stderr)
            terns[dtype] = out
        result[label] = {"checkpoint": ckpt, "config": cfg_path, "tern": terns}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
