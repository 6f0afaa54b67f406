#!/usr/bin/python3
"""Interleaved arms of `tern bench` (binaries at thread counts), against the last arm.

Usage: bench/tools/arms.py MODEL ROUNDS BIN@THREADS[:FLAGS],... [-- tern bench flags]
Every round runs every arm once (the order rotating between rounds, so that a slow phase of a
shared machine hits each arm); an arm's speed is the median over rounds of the per-round ratio of
the last arm's total_ms to its own (above 1: faster than the last arm). Also prints each run's
passes without the pool (PassGovernor). bench/ab.py does two binaries with per-phase times; this
does three or more arms, e.g. a change at 2 threads, the binary before it at 2, and one thread:
  bench/tools/arms.py build/bench/models/base/model-int8.tern 9 \
    build/x86_64/tools/tern@2,/tmp/tern-old@2,build/x86_64/tools/tern@1 -- --repeat 60
FLAGS after a colon are that arm's own `tern bench` flags (space-separated), e.g. the same binary
with fp16 K/V caches against float ones:
  bench/tools/arms.py MODEL 7 "T@1:--kv-cache fp16,T@1" -- --batch 16 --repeat 5
"""
import json, statistics, subprocess, sys
model, rounds, arms = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
extra = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []


def cpu():
    """The CPU's name and the x86 features that pick tern's loops: the same `tern bench` runs
    XNNPACK's kernels on an AVX2-only CPU and tern's VNNI / AMX loops on others, so a comparison
    of two binaries' loops says nothing where they do not run."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return "unknown"
    name = next((l.split(":", 1)[1].strip() for l in text.splitlines()
                 if l.startswith("model name")), "unknown")
    flags = next((l.split(":", 1)[1].split() for l in text.splitlines()
                  if l.startswith("flags")), [])
    have = [f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    return "%s (%s)" % (name, ", ".join(have) or "none of avx2, avx512f, avx512_vnni, amx_tile")


print("cpu:", cpu(), flush=True)
res = {a: [] for a in arms}
decode = {a: [] for a in arms}
off = {a: [] for a in arms}
for r in range(rounds):
    order = arms[r % len(arms):] + arms[:r % len(arms)]
    for a in order:
        spec, _, own = a.partition(":")
        b, t = spec.rsplit("@", 1)
        out = subprocess.run([b, "bench", "-m", model, "--threads", t, "--json"] + own.split() +
                             extra, check=True, capture_output=True, text=True).stdout
        j = json.loads(out.strip().splitlines()[-1])
        res[a].append(j["total_ms"])
        decode[a].append(j.get("decode_ms_per_token", 0.0))
        off[a].append("%d/%d" % (j.get("passes_without_pool", 0), j.get("passes", 0)))
    print("round", r, {a: round(res[a][-1], 1) for a in arms}, flush=True)
ref = arms[-1]
for a in arms:
    ratios = [res[ref][i] / res[a][i] for i in range(rounds)]
    steps = [decode[ref][i] / decode[a][i] for i in range(rounds) if decode[a][i] > 0]
    print("%-28s median %.1f ms (decode step %.2f ms); speed vs %s: median %.2fx (%.2f-%.2f), "
          "decode step %.2fx; off %s" % (
              a, statistics.median(res[a]), statistics.median(decode[a]), ref,
              statistics.median(ratios), min(ratios), max(ratios),
              statistics.median(steps) if steps else 0.0, " ".join(off[a])))
