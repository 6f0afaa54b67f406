#!/usr/bin/env python3
"""The demo model's BLEU table: PyTorch and tern fp32 / fp16 / int8 / int4 on the held-out test
set, greedy, with the same maximum length, and how often tern's greedy ids equal PyTorch's.

Usage (after `make build`):
  /usr/bin/python3 tools/train/bleu_table.py [--model examples/translation/model.safetensors]
      [--tern build/x86_64/tools/tern] [--work build/bleu] [--limit N] [--max-length 128]

Steps: the test sources are encoded with the shipped SentencePiece model (+ EOS) once; the
PyTorch reference (tools/model/tern_torch.py, the checkpoint's weights widened to fp32) decodes
them greedily; `tern convert --dtype D` and `tern translate --ids` (one thread, XNNPACK backend
as built) decode the same ids for each D. Hypotheses are the decoded SentencePiece pieces; BLEU
is tools/data/bleu.py (sacreBLEU's defaults: 13a, exp smoothing, case-sensitive).
Prints a Markdown table and writes it, with every hypothesis file, under --work.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "model"))
sys.path.insert(0, os.path.join(ROOT, "tools", "data"))
import tern_torch  # noqa: E402
from bleu import corpus_bleu  # noqa: E402

EX = os.path.join(ROOT, "examples", "translation")
DTYPES = ["fp32", "fp16", "int8", "int4"]


def pytorch_greedy(model_path, src_ids, max_len, batch=64):
    tensors, meta = tern_torch.load_safetensors(model_path)
    cfg = tern_torch.Config.from_dict(json.loads(meta["config"]))
    model = tern_torch.TernModel.from_tensors(cfg, {k: v.float() for k, v in tensors.items()})
    model.eval()
    order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
    out = [None] * len(src_ids)
    with torch.no_grad():
        for b0 in range(0, len(order), batch):
            idx = order[b0:b0 + batch]
            L = max(len(src_ids[i]) for i in idx)
            src = torch.full((len(idx), L), cfg.pad_id, dtype=torch.long)
            for r, i in enumerate(idx):
                src[r, :len(src_ids[i])] = torch.tensor(src_ids[i])
            for r, ids in enumerate(model.greedy(src, max_len)):
                out[idx[r]] = ids
    return out


def tern_greedy(tern, model_path, spm_path, dtype, src_file, work, max_len):
    tern_file = os.path.join(work, f"de-en.{dtype}.tern")
    subprocess.run([tern, "convert", model_path, "-o", tern_file, "--dtype", dtype,
                    "--tokenizer", spm_path, "--force", "--quiet"], check=True)
    t0 = time.time()
    with open(src_file, "rb") as f:
        res = subprocess.run([tern, "translate", "-m", tern_file, "--ids", "--max-length",
                              str(max_len), "--threads", "1"], stdin=f, capture_output=True,
                             check=True)
    seconds = time.time() - t0
    lines = res.stdout.decode().split("\n")[:-1]
    return [[int(t) for t in line.split()] for line in lines], seconds, os.path.getsize(tern_file)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(EX, "model.safetensors"))
    ap.add_argument("--spm", default=os.path.join(EX, "spm.model"))
    ap.add_argument("--src", default=os.path.join(EX, "testset", "test.de"))
    ap.add_argument("--ref", default=os.path.join(EX, "testset", "test.en"))
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "x86_64", "tools", "tern"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bleu"))
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)

    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    src = open(args.src, encoding="utf-8").read().splitlines()
    ref = open(args.ref, encoding="utf-8").read().splitlines()
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    eos = 2
    src_ids = [sp.encode(s) + [eos] for s in src]
    src_file = os.path.join(args.work, "test.de.ids")
    with open(src_file, "w") as f:
        f.write("".join(" ".join(map(str, ids)) + "\n" for ids in src_ids))

    rows = []
    t0 = time.time()
    ref_ids = pytorch_greedy(args.model, src_ids, args.max_length)
    seconds = time.time() - t0
    hyps = [sp.decode(ids) for ids in ref_ids]
    with open(os.path.join(args.work, "hyp.pytorch.en"), "w", encoding="utf-8") as f:
        f.write("\n".join(hyps) + "\n")
    bleu = corpus_bleu(hyps, [ref])
    rows.append(("PyTorch fp32 (reference)", bleu, "-", f"{seconds:.0f} s (batch 64)", "-"))
    print(f"pytorch: {bleu}", flush=True)
    for dtype in DTYPES:
        ids, seconds, size = tern_greedy(args.tern, args.model, args.spm, dtype, src_file,
                                         args.work, args.max_length)
        assert len(ids) == len(src_ids), (dtype, len(ids))
        hyps = [sp.decode(x) for x in ids]
        with open(os.path.join(args.work, f"hyp.{dtype}.en"), "w", encoding="utf-8") as f:
            f.write("\n".join(hyps) + "\n")
        bleu = corpus_bleu(hyps, [ref])
        same = sum(a == b for a, b in zip(ids, ref_ids))
        rows.append((f"tern {dtype}", bleu, f"{same}/{len(ids)} ({100.0 * same / len(ids):.1f}%)",
                     f"{seconds:.0f} s (batch 1)", f"{size / 1e6:.1f} MB"))
        print(f"{dtype}: {bleu}; identical to PyTorch {same}/{len(ids)}", flush=True)

    lines = [f"Test set: {os.path.relpath(args.src, ROOT)} ({len(src)} sentences), greedy, "
             f"max length {args.max_length}, one thread.", "",
             "| model | BLEU | greedy ids identical to PyTorch | time | .tern size |",
             "|---|---|---|---|---|"]
    for name, bleu, same, secs, size in rows:
        lines.append(f"| {name} | {bleu.score:.2f} | {same} | {secs} | {size} |")
    lines.append("")
    lines.append("sacreBLEU-style signatures:")
    for name, bleu, *_ in rows:
        lines.append(f"- {name}: `{bleu}`")
    table = "\n".join(lines) + "\n"
    with open(os.path.join(args.work, "bleu_table.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
