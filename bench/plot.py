#!/usr/bin/env python3
"""Plot a bench/results/<date>.json: tokens/s and peak RSS per engine, one row per model.

Usage: plot.py RESULTS.json OUT.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["tern-fp32", "tern-fp16", "tern-int8", "tern-int4", "ort-fp32", "ort-int8",
         "pytorch-fp32", "pytorch-int8"]
COLORS = {"tern": "#2a7ab0", "ort": "#e0822b", "pytorch": "#7a5aa8"}
MIB = 1024.0 * 1024.0


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        res = json.load(f)
    models = res["models"]
    fig, axes = plt.subplots(len(models), 2, figsize=(12, 3.6 * len(models)), squeeze=False)
    for row, (label, m) in enumerate(models.items()):
        eng = m["engines"]
        names = [e for e in ORDER if e in eng] + [e for e in eng if e not in ORDER]
        colors = [COLORS.get(n.split("-")[0], "gray") for n in names]
        tps = [eng[n]["tokens_per_s"] for n in names]
        ax = axes[row][0]
        bars = ax.bar(names, tps, color=colors)
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
        t = eng[names[0]]
        ax.set_title(f"{label}: tokens/s, {t.get('tokens', 32)} greedy tokens from a "
                     f"{t.get('source_length', 32)}-token source, {t.get('threads', 1)} thread, batch 1",
                     fontsize=9)
        ax.set_ylabel("tokens/s (higher is better)")
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax = axes[row][1]
        rss = [eng[n]["peak_rss_bytes"] / MIB for n in names]
        files = [eng[n]["model_bytes"] / MIB for n in names]
        bars = ax.bar(names, rss, color=colors)
        ax.bar(names, files, color="none", edgecolor="black", hatch="//", linewidth=0.5, label="model file")
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
        ax.set_title(f"{label}: peak RSS (MiB, lower is better); hatched: model file size", fontsize=9)
        ax.set_ylabel("MiB")
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    mach = res.get("machine", {})
    fig.suptitle(f"tern benchmark {res.get('date')}: {mach.get('cpu', '')} "
                 f"({', '.join(mach.get('cpu_flags', [])[-4:])})", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
