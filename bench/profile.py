#!/usr/bin/env python3
"""Where tern's time goes: `perf record --call-graph dwarf` over `tern bench`, each sample put in
one bucket by its call stack (tern's own frames; XNNPACK's kernels are anonymous in Debian's
library, so they are attributed to the tern function that called them).

Buckets (share of samples inside Encode and DecodeStep, the timed work):
  encode: attention projections (Q/K/V/out linear), FFN linear, attention (scores, softmax,
          A V), LayerNorm, cross K/V (every decoder layer's K/V projection of the source), other
  decode: self/cross-attention projections, FFN linear, attention, LayerNorm, output projection
          (the [vocab, d_model] linear), other (embedding, argmax, residual adds...)

  search: the decoding algorithm's own work between steps (GreedyDecode / BeamSearch outside
          DecodeStep): log-softmax, top-k / argmax, beam reordering of the K/V caches

Samples outside the timed work are not counted, but two kinds are reported, so that a profile
that lost its stacks does not pass for a complete one: "workers" (a thread pool's threads, whose
stacks start at the thread and so name no phase) and "truncated" (a stack perf could not unwind
to main: `--call-graph dwarf` copies at most 64 KiB of stack per sample, and a frame larger than
that, or a chain of them, cuts the stack off; their time is missing from every bucket above).

Usage: profile.py --tern build/x86_64/tools/tern -m MODEL.tern [--repeat 10] [--json]
       [--batch 16] [--beam 4]
       (any other arguments go to `tern bench`; needs perf)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter


def bucket(frames):
    """frames: innermost first (symbol names). Names of both the current layer code (nn/
    transformer_layer: LayerForward, LayerStep, CrossKeysValues, FeedForwardBlock) and the
    older per-stack functions, so a baseline binary profiles into the same buckets."""
    stack = " ".join(frames)
    if "EncoderDecoder::Encode" not in stack and "EncoderDecoder::DecodeStep" not in stack \
            and "tern::BeamSearch" not in stack and "tern::GreedyDecode" not in stack:
        if "start_thread" in stack or "pthreadpool" in stack or "thread_main" in stack:
            return "outside", "workers (thread pool)"
        if not any(f in ("main", "_start", "__libc_start_main", "__libc_start_call_main")
                   for f in frames):
            return "outside", "truncated (stack not unwound to main)"
        return None
    if "tern::EncoderDecoder::Encode" in stack:
        phase = "encode"
    elif "tern::EncoderDecoder::DecodeStep" in stack:
        phase = "decode"
    elif "tern::BeamSearch" in stack or "tern::GreedyDecode" in stack:
        phase = "search"  # the decoding algorithm's own work (log-softmax, top-k, reordering)
    else:
        return None
    if phase == "search":
        if "ReorderRows" in stack:
            what = "beam reordering (K/V caches)"
        elif "LogSumExp" in stack:
            what = "log-softmax"
        else:
            what = "top-k, argmax, bookkeeping"
    elif "MultiHeadAttention" in stack:
        what = "attention (QK^T, softmax, AV)"
    elif "LayerNorm" in stack:
        what = "LayerNorm"
    elif "CrossKeysValues" in stack:
        what = "cross K/V projections"
    elif "FeedForward" in stack:
        what = "FFN linear (fc1, relu, fc2)"
    elif "RunLinear" in stack or "ref::Linear" in stack or "xnn_run_operator" in stack \
            or "Linear" in stack:
        if any(f in stack for f in ("tern::LayerStep", "tern::LayerForward", "DecoderLayerStep",
                                    "EncoderLayerForward")):
            what = "attention projections (linear)"
        else:
            what = "output projection"
    else:
        what = "other"
    return phase, what


def parse(script_text):
    samples = []
    frames = []
    for line in script_text.splitlines():
        if not line.strip():
            if frames:
                samples.append(frames)
            frames = []
            continue
        if line.startswith("\t") or line.startswith(" "):
            parts = line.strip().split(" ", 1)
            if len(parts) == 2:
                sym = parts[1].rsplit(" (", 1)[0]
                frames.append(sym)
    if frames:
        samples.append(frames)
    return samples


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tern", required=True)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--frequency", default="1000")
    args, rest = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", args.frequency, "--call-graph", "dwarf,65528",
               "-o", data, args.tern, "bench", "--json"] + rest
        bench = subprocess.run(cmd, capture_output=True, text=True)
        if bench.returncode != 0:
            sys.exit(f"perf record failed: {bench.stderr.strip()}")
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True,
                                text=True, check=True).stdout
    result = json.loads(bench.stdout.strip().splitlines()[-1])
    counts = Counter()
    for frames in parse(script):
        b = bucket(frames)
        if b:
            counts[b] += 1
    out = {"model": result["model"], "backend_report": result.get("backend_report"),
           "encode_ms_32": result["encode_ms_32"], "decode_ms_per_token": result["decode_ms_per_token"],
           "phases": {}}
    for phase in ("encode", "decode", "search", "outside"):
        total = sum(v for (p, _), v in counts.items() if p == phase)
        out["phases"][phase] = {"samples": total, "share": {w: v / total for (p, w), v in counts.most_common()
                                                             if p == phase and total}}
    if args.json:
        print(json.dumps(out))
        return
    print(f"{out['model']}: {out['backend_report']}")
    print(f"encode 32 tokens {out['encode_ms_32']:.2f} ms, decode {out['decode_ms_per_token']:.2f} ms/token "
          "(samples include the 128-token encodes)")
    timed = sum(p["samples"] for phase, p in out["phases"].items() if phase != "outside")
    for phase, p in out["phases"].items():
        if phase == "outside":
            if p["samples"]:
                print(f"  not in the buckets above ({p['samples']} samples, "
                      f"{100 * p['samples'] / max(1, timed + p['samples']):.1f}% of all counted):")
        else:
            print(f"  {phase} ({p['samples']} samples):")
        for w, s in p["share"].items():
            print(f"    {100 * s:5.1f}%  {w}")


if __name__ == "__main__":
    main()
