#!/usr/bin/python3
"""bench/lm.sh's runs (JSON lines) -> <out>.json + <out>.md: per engine and thread count the
median over rounds of prefill tokens/s, decode ms/token and tokens/s, peak RSS; ratios against
the PyTorch peers from per-round ratios; each tern decode step against the time to stream its
model file once at the measured bandwidth; whether every engine generated the same ids."""
import argparse
import json
import os
import statistics
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs")
    ap.add_argument("--shape", required=True)
    ap.add_argument("--load", default="")
    ap.add_argument("--git", default="")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    runs = [json.loads(line) for line in open(a.runs)]
    # The read bandwidth per thread count (bench/tools/read_bandwidth.c between rounds; older
    # runs: one numpy figure without a thread count, used for every row).
    probes = defaultdict(list)
    for r in runs:
        if r["name"] == "bandwidth":
            probes[r.get("threads")].append(r["bytes_per_s"])
    bandwidths = {t: statistics.median(v) for t, v in probes.items()}
    bandwidth_of = lambda t: bandwidths.get(t, bandwidths.get(None, max(bandwidths.values())))  # noqa: E731
    probe = "bench/tools/read_bandwidth.c" if None not in bandwidths else "numpy dot"
    by = defaultdict(list)  # (engine, threads) -> runs
    for r in runs:
        if r["name"] != "bandwidth":
            by[(r["name"], r["threads"])].append(r)
    med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731

    def ratio(num, den, threads, key):  # median of per-round ratios of `key` (time: den / num)
        rounds = {r["round"]: r[key] for r in by.get((den, threads), [])}
        values = [rounds[r["round"]] / r[key] for r in by.get((num, threads), [])
                  if r["round"] in rounds and r[key] > 0]
        return statistics.median(values) if values else None

    lines = [f"# tern language-model benchmark ({a.shape})", "",
             f"git {a.git}; load average {a.load}; read bandwidth " +
             ", ".join(f"{v / 1e9:.1f} GB/s" + (f" at {t} thread{'s' if t > 1 else ''}" if t else "")
                       for t, v in sorted(bandwidths.items(), key=lambda kv: kv[0] or 0)) +
             f" ({probe}, median of rounds)", "",
             "| engine | threads | prefill tokens/s | decode ms/token | decode tokens/s | peak RSS MiB "
             "| file + arena + 8 MiB | decode vs streaming the file once |",
             "|---|--:|--:|--:|--:|--:|--:|--:|"]
    table = []
    ids = {}
    for (engine, threads), rs in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        step = med(rs, "decode_ms_per_token")
        stream = ""
        row = {"engine": engine, "threads": threads,
               "prefill_tokens_per_s": med(rs, "prefill_tokens_per_s"),
               "decode_ms_per_token": step, "decode_tokens_per_s": med(rs, "decode_tokens_per_s"),
               "peak_rss_mib": med(rs, "peak_rss_bytes") / 2**20}
        budget = ""
        if "model_bytes" in rs[0]:
            stream_ms = rs[0]["model_bytes"] / bandwidth_of(threads) * 1e3
            row["decode_vs_stream"] = step / stream_ms
            stream = f"{step / stream_ms:.2f}x"
        if "arena_bytes" in rs[0]:  # issue 15's memory target: peak RSS <= this
            row["budget_mib"] = (rs[0]["model_bytes"] + rs[0]["arena_bytes"]) / 2**20 + 8
            budget = f"{row['budget_mib']:.0f} ({'met' if row['peak_rss_mib'] <= row['budget_mib'] else 'over'})"
        table.append(row)
        ids[engine] = rs[0]["ids"]
        lines.append(f"| {engine} | {threads} | {row['prefill_tokens_per_s']:.1f} | {step:.2f} | "
                     f"{row['decode_tokens_per_s']:.1f} | {row['peak_rss_mib']:.0f} | {budget} | {stream} |")
    lines += ["", "| decode speed-up (median of per-round ratios) | threads | ratio |",
              "|---|--:|--:|"]
    threads_seen = sorted({t for _, t in by})
    for t in threads_seen:
        for num, den in (("tern-fp32", "pytorch-fp32"), ("tern-int8", "pytorch-int8"),
                         ("tern-fp32", "ort-fp32"), ("tern-int8", "ort-int8"),
                         ("tern-int4", "ort-int8"), ("tern-int4", "tern-int8"),
                         ("tern-int4row", "ort-int8"), ("tern-int4row", "tern-int8"),
                         ("tern-int4all", "ort-int8"), ("tern-int4all", "tern-int4row"),
                         ("tern-int8-kv16", "ort-int8"), ("tern-int8-kv16", "tern-int8"),
                         ("tern-int4row-kv16", "ort-int8"), ("tern-int4row-kv16", "tern-int4row")):
            r = ratio(num, den, t, "decode_ms_per_token")
            if r is not None:
                lines.append(f"| {num} vs {den} | {t} | {r:.2f}x |")
    if len(threads_seen) > 1:  # thread scaling: decode at 1 thread / at t threads, per round
        lines += ["", "| thread scaling of decode (vs 1 thread) | threads | ratio |", "|---|--:|--:|"]
        for engine in sorted({e for e, _ in by}):
            one = {r["round"]: r["decode_ms_per_token"] for r in by.get((engine, 1), [])}
            for t in threads_seen[1:]:
                v = [one[r["round"]] / r["decode_ms_per_token"] for r in by.get((engine, t), [])
                     if r["round"] in one and r["decode_ms_per_token"] > 0]
                if v:
                    lines.append(f"| {engine} | {t} | {statistics.median(v):.2f}x |")
    first = next(iter(ids.values()))
    agree = {e: v == first for e, v in ids.items()}
    lines += ["", "Generated ids equal to the first engine's: " +
              ", ".join(f"{e} {'yes' if ok else 'no'}" for e, ok in sorted(agree.items()))]
    with open(a.out + ".json", "w") as f:
        json.dump({"shape": a.shape, "load": a.load, "git": a.git, "bandwidth_bytes_per_s": {str(t): v for t, v in bandwidths.items()},
                   "table": table, "ids_agree": agree}, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
