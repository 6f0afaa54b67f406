#!/usr/bin/python3
"""Interleaved A/B of two tern binaries with `tern bench --json` (a before/after of one change).

Every round runs each (model, threads) setting with both binaries, the binaries' order
alternating between rounds, so that a slow phase of a shared machine hits both. A ratio is the
median over rounds of the per-round ratio old / new of a time (above 1: the new binary is
faster).

Usage: bench/ab.py --old OLD_TERN --new NEW_TERN --models A.tern,B.tern [--threads 1,2]
                   [--rounds 3] [--out FILE.md] [-- extra tern bench flags]
       bench/ab.py --new TERN --thread-scaling 1,2 --models ... (one binary: old = 1 thread,
                   new = 2 threads; the ratio is the speed-up from the threads)
Example (docs/benchmarks.md, the pool governor per row class):
  bench/ab.py --old /tmp/tern-old --new build/x86_64/tools/tern \
    --models build/bench/models/smollm/model-int8.tern,build/bench/models/smollm/model-int4row.tern \
    --threads 1,2 --rounds 3 -- --repeat 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

TIMES = [("prefill_ms", "prefill ms"), ("decode_ms_per_token", "decode ms/token"),
         ("encode_ms", "encode ms"), ("total_ms", "total ms")]


def name_of(model):
    """dir/file: the bench models share file names (base/model-int8.tern, demo/model-int8.tern)."""
    return os.path.join(os.path.basename(os.path.dirname(os.path.abspath(model))),
                        os.path.basename(model))


def run(binary, model, threads, extra):
    out = subprocess.run([binary, "bench", "-m", model, "--threads", str(threads), "--json"] +
                         extra, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default="")
    ap.add_argument("--new", required=True)
    ap.add_argument("--thread-scaling", default="",
                    help="A,B: compare --new at A threads (old) with B threads (new)")
    ap.add_argument("--models", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    models = args.models.split(",")
    threads = [int(t) for t in args.threads.split(",")]
    # sides: (name, binary, threads or None for the --threads loop)
    if args.thread_scaling:
        a, b = (int(t) for t in args.thread_scaling.split(","))
        sides = [("old", args.new, a), ("new", args.new, b)]
        threads = [b]
        args.old = f"{args.new} at {a} thread(s)"
        args.new = f"{args.new} at {b} thread(s)"
    else:
        if not args.old:
            ap.error("--old is needed (or --thread-scaling)")
        sides = [("old", args.old, None), ("new", args.new, None)]
    # results[(model, threads, "old"|"new")] = list of bench JSON objects, one per round
    results = {}
    for r in range(args.rounds):
        order = list(sides)
        if r % 2:
            order.reverse()
        for model in models:
            for t in threads:
                for name, binary, side_threads in order:
                    res = run(binary, model, side_threads or t, extra)
                    results.setdefault((model, t, name), []).append(res)
                    times = ", ".join(f"{k} {res[k]:.2f}" for k, _ in TIMES if k in res)
                    print(f"round {r + 1} {name} {name_of(model)} threads {t}: {times}",
                          file=sys.stderr, flush=True)
    lines = [f"old: `{args.old}`, new: `{args.new}`, {args.rounds} interleaved rounds, "
             f"`tern bench` flags: `{' '.join(extra) or '(defaults)'}`", "",
             "| model | threads | time | old (median) | new (median) | old / new (median of "
             "rounds; min-max) |", "|---|--:|---|--:|--:|--:|"]
    for model in models:
        for t in threads:
            old, new = results[(model, t, "old")], results[(model, t, "new")]
            for key, label in TIMES:
                if key not in old[0]:
                    continue
                ratios = [o[key] / n[key] for o, n in zip(old, new)]
                lines.append(f"| {name_of(model)} | {t} | {label} | "
                             f"{statistics.median(o[key] for o in old):.2f} | "
                             f"{statistics.median(n[key] for n in new):.2f} | "
                             f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-"
                             f"{max(ratios):.2f}) |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
