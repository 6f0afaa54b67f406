#!/usr/bin/env python3
"""The demo model's quality table: PyTorch and tern fp32 / fp16 / int8 / int4 on each held-out
test set, greedy, with the same maximum length: BLEU, chrF, how often tern's greedy ids equal
PyTorch's, and how many outputs hold a repeated-word loop (tools/data/quality.py).

Usage (after `make build`):
  /usr/bin/python3 tools/train/bleu_table.py [--model examples/translation/model.safetensors]
      [--sets ding,everyday,technical] [--dtypes fp32,fp16,int8,int4] [--no-tern]
      (a dtype int4:gN converts with --group-size N: int4 in blocks of N weights, g0 per row;
      int4+emb also stores the embeddings int4)
      [--tern build/x86_64/tools/tern] [--work build/bleu] [--limit N] [--max-length 128]
      [--quality examples/translation/quality.tsv]
--quality: also write the int8 rows as the table `make demo` prints (tools/demo.sh), with the
model file's SHA-256 so that the demo can tell when they were measured for other weights.
Test sets: ding = testset/test.{de,en} (Ding example sentences, v1's set), everyday =
testset/test_everyday.* (game dialogue and descriptions, GNOME help), technical =
testset/test_technical.* (package descriptions, Debian handbook); NAME=SRC:REF adds another.
--no-tern: PyTorch rows only (no tern build needed).

Steps: the test sources are encoded with the shipped SentencePiece model (+ EOS) once; the
PyTorch reference (tools/model/tern_torch.py, the checkpoint's weights widened to fp32) decodes
them greedily; `tern convert --dtype D` and `tern translate --ids` (one thread, XNNPACK backend
as built) decode the same ids for each D. Hypotheses are the decoded SentencePiece pieces; BLEU
is tools/data/bleu.py (sacreBLEU's defaults: 13a, exp smoothing, case-sensitive).
Prints Markdown tables and writes them (bleu_table.md, results.json), with every hypothesis
file, under --work.
"""
import argparse
import hashlib
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
from quality import corpus_chrf, repeat_loops  # noqa: E402

EX = os.path.join(ROOT, "examples", "translation")
DTYPES = ["fp32", "fp16", "int8", "int4"]
SETS = {"ding": ("test.de", "test.en"), "everyday": ("test_everyday.de", "test_everyday.en"),
        "technical": ("test_technical.de", "test_technical.en")}


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


def tern_convert(tern, model_path, spm_path, dtype, work):
    """dtype: fp32, fp16, int8, int4, or int4:gN (int4 in blocks of N weights; g0: per row);
    a +emb suffix stores the embeddings (the tied output projection) in that dtype too, where
    the converter's default keeps int4 models' embeddings int8."""
    spec, emb, _ = dtype.partition("+emb")
    name, _, group = spec.partition(":g")
    tern_file = os.path.join(work, f"de-en.{dtype.replace(':', '-').replace('+', '-')}.tern")
    extra = ["--group-size", group] if group else []
    if emb:
        extra += ["--keep", f"{name}:*embed_tokens*"]
    subprocess.run([tern, "convert", model_path, "-o", tern_file, "--dtype", name,
                    "--tokenizer", spm_path, "--force", "--quiet"] + extra, check=True)
    return tern_file


def tern_greedy(tern, tern_file, src_file, max_len):
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
    ap.add_argument("--sets", default="ding,everyday,technical")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--no-tern", action="store_true")
    ap.add_argument("--tern", default=os.path.join(ROOT, "build", "x86_64", "tools", "tern"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bleu"))
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--quality", default="",
                    help="write the tern int8 rows here (TSV with the model's SHA-256)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.work, exist_ok=True)

    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.spm)
    dtypes = [] if args.no_tern else [d for d in args.dtypes.split(",") if d]
    tern_files = {d: tern_convert(args.tern, args.model, args.spm, d, args.work) for d in dtypes}
    eos = 2
    results, lines = {}, []
    for name in args.sets.split(","):
        if "=" in name:
            name, paths = name.split("=", 1)
            src_path, ref_path = paths.split(":", 1)
        else:
            src_path, ref_path = (os.path.join(EX, "testset", f) for f in SETS[name])
        src = open(src_path, encoding="utf-8").read().splitlines()
        ref = open(ref_path, encoding="utf-8").read().splitlines()
        if args.limit:
            src, ref = src[:args.limit], ref[:args.limit]
        src_ids = [sp.encode(s) + [eos] for s in src]
        src_file = os.path.join(args.work, f"{name}.de.ids")
        with open(src_file, "w") as f:
            f.write("".join(" ".join(map(str, ids)) + "\n" for ids in src_ids))

        rows = []

        def row(label, hyps, same, secs, size):
            engine, dtype = label.split()
            with open(os.path.join(args.work, f"hyp.{name}.{engine.lower()}-{dtype.replace(':', '-')}.en"), "w",
                      encoding="utf-8") as f:
                f.write("\n".join(hyps) + "\n")
            bleu = corpus_bleu(hyps, [ref])
            chrf = corpus_chrf(hyps, ref)
            loops = sum(repeat_loops(h) for h in hyps)
            rows.append({"model": label, "bleu": bleu.score, "chrf": chrf, "loops": loops,
                         "identical": same, "n": len(hyps), "seconds": secs, "size": size,
                         "signature": str(bleu)})
            print(f"{name} {label}: {bleu}; chrF {chrf:.2f}; loops {loops}; identical {same}",
                  flush=True)

        t0 = time.time()
        ref_ids = pytorch_greedy(args.model, src_ids, args.max_length)
        row("PyTorch fp32", [sp.decode(x) for x in ref_ids], None, time.time() - t0, None)
        for dtype in dtypes:
            ids, seconds, size = tern_greedy(args.tern, tern_files[dtype], src_file, args.max_length)
            assert len(ids) == len(src_ids), (dtype, len(ids))
            same = sum(a == b for a, b in zip(ids, ref_ids))
            row(f"tern {dtype}", [sp.decode(x) for x in ids], same, seconds, size)
        results[name] = {"src": os.path.relpath(src_path, ROOT), "n": len(src), "rows": rows}

        lines += [f"Test set {name}: {os.path.relpath(src_path, ROOT)} ({len(src)} sentences), "
                  f"greedy, max length {args.max_length}, one thread.", "",
                  "| model | BLEU | chrF | greedy ids identical to PyTorch | outputs with a loop "
                  "| time | .tern size |", "|---|---|---|---|---|---|---|"]
        for r in rows:
            same = "-" if r["identical"] is None else \
                f"{r['identical']}/{r['n']} ({100.0 * r['identical'] / r['n']:.1f}%)"
            batch = "batch 64" if r["identical"] is None else "batch 1"
            size = "-" if r["size"] is None else f"{r['size'] / 1e6:.1f} MB"
            lines.append(f"| {r['model']} | {r['bleu']:.2f} | {r['chrf']:.2f} | {same} | "
                         f"{r['loops']} | {r['seconds']:.0f} s ({batch}) | {size} |")
        lines += ["", "sacreBLEU-style signatures:"]
        lines += [f"- {r['model']}: `{r['signature']}`" for r in rows]
        lines.append("")
    table = "\n".join(lines)
    with open(os.path.join(args.work, "bleu_table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump({"model": args.model, "sets": results}, f, indent=1)
    if args.quality:
        write_quality(args.quality, args.model, args.max_length, results)
    print(table)


def write_quality(path, model, max_length, results):
    """The int8 rows for tools/demo.sh: one line per test set, the weights' SHA-256 first."""
    with open(model, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    lines = [f"# model_sha256\t{digest}",
             f"# tern int8, greedy, max length {max_length}, held-out test sets "
             "(tools/train/bleu_table.py --quality)",
             "# set\tsentences\tBLEU\tchrF\toutputs_with_a_loop"]
    for name, r in results.items():
        row = next((x for x in r["rows"] if x["model"] == "tern int8"), None)
        if row is None:
            raise SystemExit("--quality needs int8 among --dtypes")
        lines.append(f"{name}\t{r['n']}\t{row['bleu']:.2f}\t{row['chrf']:.2f}\t{row['loops']}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
