#!/usr/bin/env python3
"""Greedy-decode the held-out test set with the PyTorch model and report corpus BLEU
(tools/data/bleu.py = sacreBLEU defaults: 13a, exp smoothing, case-sensitive), chrF and the
number of outputs with a repeated-word loop (tools/data/quality.py).

Usage:
  evaluate.py [--model examples/translation/model.safetensors]    # the shipped checkpoint
  evaluate.py --run /var/cache/tern/train/base [--last 5]         # average of run snapshots
Options: --src/--ref (default examples/translation/testset/test.{de,en}), --out HYP_FILE,
         --batch 64, --limit N (first N sentences only), --threads 1, --device cpu|cuda,
         --json FILE (bleu, chrf, loops, sentences: what tools/train/compare.sh selects by).
The source is encoded as spm ids + eos; max output length = 2 * source length + 10.
"""
import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
sys.path.insert(0, os.path.join(ROOT, "tools", "data"))
sys.path.insert(0, HERE)
import tern_torch  # noqa: E402
from bleu import corpus_bleu  # noqa: E402
from quality import corpus_chrf, repeat_loops  # noqa: E402

EX = os.path.join(ROOT, "examples", "translation")


def load_model(args):
    if args.run:
        import export
        paths = export.snapshots(args.run)[-args.last:] or [os.path.join(args.run, "last.pt")]
        sd, meta = export.average(paths)
        cfg = tern_torch.Config.from_dict(meta["config"])
        model = tern_torch.TernModel.from_tensors(cfg, sd)
        desc = f"run {args.run}, average of {len(paths)}: {[os.path.basename(p) for p in paths]}"
    else:
        import json
        tensors, meta = tern_torch.load_safetensors(args.model)
        cfg = tern_torch.Config.from_dict(json.loads(meta["config"]))
        model = tern_torch.TernModel.from_tensors(cfg, tensors)
        desc = f"{args.model} ({next(iter(tensors.values())).dtype} weights, run in fp32)"
    model.eval()
    return model, cfg, desc


def translate(model, cfg, sp, sents, batch=64, device="cpu"):
    ids = [sp.encode(s) + [cfg.eos_id] for s in sents]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out = [None] * len(ids)
    for b0 in range(0, len(order), batch):
        idx = order[b0:b0 + batch]
        L = max(len(ids[i]) for i in idx)
        src = torch.full((len(idx), L), cfg.pad_id, dtype=torch.long)
        for r, i in enumerate(idx):
            src[r, :len(ids[i])] = torch.tensor(ids[i])
        max_len = min(2 * L + 10, cfg.max_positions)
        hyps = model.greedy(src.to(device), max_len)
        for r, i in enumerate(idx):
            out[i] = sp.decode(hyps[r])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(EX, "model.safetensors"))
    ap.add_argument("--run", default="")
    ap.add_argument("--last", type=int, default=5)
    ap.add_argument("--spm", default=os.path.join(EX, "spm.model"))
    ap.add_argument("--src", default=os.path.join(EX, "testset", "test.de"))
    ap.add_argument("--ref", default=os.path.join(EX, "testset", "test.en"))
    ap.add_argument("--out", default="")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    model, cfg, desc = load_model(args)
    src = open(args.src, encoding="utf-8").read().splitlines()
    ref = open(args.ref, encoding="utf-8").read().splitlines()
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    t0 = time.time()
    model.to(args.device)
    hyps = translate(model, cfg, sp, src, args.batch, args.device)
    dt = time.time() - t0
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write("\n".join(hyps) + "\n")
    b = corpus_bleu(hyps, [ref])
    print(f"model: {desc}")
    print(f"test: {args.src} ({len(src)} sentences), greedy, {dt:.0f} s")
    for i in range(min(5, len(src))):
        print(f"  DE: {src[i]}\n  EN: {hyps[i]}\n  REF: {ref[i]}")
    print(b)
    chrf = corpus_chrf(hyps, ref)
    loops = sum(repeat_loops(h) for h in hyps)
    print(f"chrF = {chrf:.2f}; outputs with a repeated-word loop: {loops}/{len(hyps)}")
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"model": desc, "src": args.src, "bleu": b.score, "chrf": chrf,
                       "loops": loops, "sentences": len(hyps)}, f)
            f.write("\n")


if __name__ == "__main__":
    main()
