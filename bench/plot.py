#!/usr/bin/env python3
"""Plot a bench/results/<date>.json: tokens/s and peak RSS per engine, one row per model.

With one setting (batch x beam x threads) per model, as every older result: one bar per engine.
With several (bench/run.sh SETTINGS / THREADS lists): bars grouped by setting, one colour per
engine, tokens/s on a log scale (batch 32 and batch 1 differ by more than 10x).

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
# One colour per engine for the grouped plot: the family's hue, lighter for lower precision.
SHADES = {"tern-fp32": "#0b3d5e", "tern-fp16": "#1f6391", "tern-int8": "#3c8fc9", "tern-int4": "#8cc3e8",
          "ort-fp32": "#a34f0a", "ort-int8": "#f0a35e", "pytorch-fp32": "#4b2f78", "pytorch-int8": "#a88fd0"}
MIB = 1024.0 * 1024.0


def ordered(names):
    return [e for e in ORDER if e in names] + [e for e in names if e not in ORDER]


def describe(s):
    beam = "greedy" if s.get("beam", 1) == 1 else f"beam {s['beam']}"
    return f"batch {s.get('batch', 1)}\n{beam}\n{s.get('threads', 1)} thr."


def plot_single(axes, label, eng):
    names = ordered(list(eng))
    colors = [COLORS.get(n.split("-")[0], "gray") for n in names]
    tps = [eng[n]["tokens_per_s"] for n in names]
    ax = axes[0]
    bars = ax.bar(names, tps, color=colors)
    ax.bar_label(bars, fmt="%.0f", fontsize=8)
    t = eng[names[0]]
    batch, beam = t.get("batch", 1), t.get("beam", 1)
    ax.set_title(f"{label}: tokens/s, {t.get('tokens', 32)} {'greedy' if beam == 1 else f'beam-{beam}'} tokens "
                 f"from a {t.get('source_length', 32)}-token source, {t.get('threads', 1)} thread, batch {batch}",
                 fontsize=9)
    ax.set_ylabel("tokens/s (higher is better)")
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    ax = axes[1]
    rss = [eng[n]["peak_rss_bytes"] / MIB for n in names]
    files = [eng[n]["model_bytes"] / MIB for n in names]
    bars = ax.bar(names, rss, color=colors)
    ax.bar(names, files, color="none", edgecolor="black", hatch="//", linewidth=0.5, label="model file")
    ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_title(f"{label}: peak RSS (MiB, lower is better); hatched: model file size", fontsize=9)
    ax.set_ylabel("MiB")
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)


def plot_settings(axes, label, settings):
    names = list(settings)
    engines = ordered(list(dict.fromkeys(e for s in settings.values() for e in s["engines"])))
    width = 0.8 / len(engines)
    for k, (key, title, ylabel, log) in enumerate([
            ("tokens_per_s", f"{label}: tokens/s per setting (log scale, higher is better)", "tokens/s", True),
            ("peak_rss_bytes", f"{label}: peak RSS per setting (MiB, lower is better)", "MiB", False)]):
        ax = axes[k]
        for j, e in enumerate(engines):
            xs, ys = [], []
            for i, n in enumerate(names):
                d = settings[n]["engines"].get(e)
                if d is None:
                    continue
                xs.append(i + (j - (len(engines) - 1) / 2) * width)
                ys.append(d[key] / (MIB if key == "peak_rss_bytes" else 1.0))
            bars = ax.bar(xs, ys, width, label=e, color=SHADES.get(e, COLORS.get(e.split("-")[0], "gray")))
            ax.bar_label(bars, fmt="%.0f", fontsize=5, rotation=90, padding=1)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([describe(settings[n]) for n in names], fontsize=7)
        if log:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=9)
        ax.set_ylabel(ylabel)
        ax.margins(y=0.15)
        if k == 0:
            ax.legend(fontsize=6, ncol=2)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        res = json.load(f)
    models = res["models"]
    many = any(len(m.get("settings", {})) > 1 for m in models.values())
    fig, axes = plt.subplots(len(models), 2, figsize=(14 if many else 12, (4.4 if many else 3.6) * len(models)),
                             squeeze=False)
    for row, (label, m) in enumerate(models.items()):
        settings = m.get("settings", {})
        if len(settings) > 1:
            plot_settings(axes[row], label, settings)
        else:
            plot_single(axes[row], label, m["engines"])
    mach = res.get("machine", {})
    fig.suptitle(f"tern benchmark {res.get('date')}: {mach.get('cpu', '')} "
                 f"({', '.join(mach.get('cpu_flags', [])[-4:])})", fontsize=10)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
