#!/usr/bin/env python3
"""Aggregate bench/run.sh's raw runs into bench/results/<date>.json and .md, print the table.

Each engine ran once per round (--repeat timed translations each, medians inside the engine).
Per engine the reported number is the median over rounds; a ratio between two engines is the
median over rounds of the per-round ratio (engines of one round ran back to back, so this
cancels most of the drift of a shared machine).

Usage: report.py --runs RAW/runs.jsonl --out bench/results/DATE [--command STR] [--load STR]
                 [--tern build/x86_64/tools/tern]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
from collections import defaultdict

MIB = 1024.0 * 1024.0
TIME_KEYS = ["encode_ms_32", "encode_ms_128", "decode_ms_per_token", "decode_first_step_ms",
             "decode_last_step_ms", "total_ms", "load_prepare_ms", "cpu_encode_ms",
             "cpu_decode_ms_per_token", "cpu_total_ms"]
ORDER = ["tern-fp32", "tern-fp16", "tern-int8", "tern-int4", "ort-fp32", "ort-int8",
         "pytorch-fp32", "pytorch-int8"]
# (name, faster engine, slower engine, target speed-up or None)
RATIOS = [
    ("tern int8 vs ONNX Runtime int8", "tern-int8", "ort-int8", 1.0),
    ("tern int8 vs PyTorch fp32", "tern-int8", "pytorch-fp32", 4.0),
    ("tern fp32 vs ONNX Runtime fp32", "tern-fp32", "ort-fp32", 1.0),
    ("tern int8 vs PyTorch int8", "tern-int8", "pytorch-int8", None),
    ("tern fp32 vs PyTorch fp32", "tern-fp32", "pytorch-fp32", None),
    ("tern int4 vs ONNX Runtime int8", "tern-int4", "ort-int8", None),
    ("tern fp16 vs ONNX Runtime fp32", "tern-fp16", "ort-fp32", None),
    ("ONNX Runtime int8 vs PyTorch fp32", "ort-int8", "pytorch-fp32", None),
] + [(f"tern {d} vs baseline tern {d} (TERN_BASELINE)", f"tern-{d}", f"tern-old-{d}", None)
     for d in ("fp32", "fp16", "int8", "int4")]
PARTS = [("encode 32", "encode_ms_32"), ("encode 128", "encode_ms_128"),
         ("decode/token", "decode_ms_per_token"), ("first step", "decode_first_step_ms"),
         ("step 32", "decode_last_step_ms"), ("total", "total_ms"), ("total CPU", "cpu_total_ms")]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def machine():
    info = {"platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        for line in text.splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
        info["cpu_flags"] = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                                         "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_int8") if f in flags]
        with open("/proc/meminfo") as f:
            info["mem_total_kb"] = int(f.readline().split()[1])
    except OSError:
        pass
    return info


def git_info(root):
    def run(*cmd):
        try:
            return subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    status = run("git", "status", "--porcelain", "--untracked-files=no")
    info = {"commit": run("git", "rev-parse", "--short", "HEAD"), "dirty": bool(status)}
    if status:  # which uncommitted runtime was measured: a hash of its diff (and new files)
        import hashlib
        diff = (run("git", "diff", "HEAD", "--", "runtime", "converter", "tools/tern") or "") + \
            (run("git", "ls-files", "--others", "--exclude-standard", "--", "runtime") or "")
        for f in sorted((run("git", "ls-files", "--others", "--exclude-standard", "--", "runtime") or "").split()):
            with open(os.path.join(root, f), "rb") as fh:
                diff += hashlib.sha256(fh.read()).hexdigest()
        info["uncommitted_runtime_sha256"] = hashlib.sha256(diff.encode()).hexdigest()[:16]
    return info


def compare_ids(ref, other):
    if ref is None or other is None:
        return None
    n = min(len(ref), len(other))
    same = sum(1 for a, b in zip(ref, other) if a == b)
    first = next((i for i in range(n) if ref[i] != other[i]), None)
    return {"equal": ref == other, "agreement": same / max(len(ref), 1), "first_difference": first}


def compare_top5(ref, other):
    """Same top-5 ids (in order)? Largest |logit difference| over ids both have."""
    if not ref or not other:
        return None
    r = {i: v for i, v in ref}
    o = {i: v for i, v in other}
    common = set(r) & set(o)
    return {"same_ids": [i for i, _ in ref] == [i for i, _ in other],
            "max_abs_diff": max((abs(r[i] - o[i]) for i in common), default=None)}


def aggregate(runs):
    by = defaultdict(list)
    for r in runs:
        by[r["engine_id"]].append(r)
    engines = {}
    for eid, rs in by.items():
        first = rs[0]
        e = {k: med([r.get(k) for r in rs]) for k in TIME_KEYS}
        e["tokens_per_s"] = first["tokens"] * 1000.0 / e["total_ms"]
        e["tokens_per_cpu_s"] = first["tokens"] * 1000.0 / e["cpu_total_ms"] if e.get("cpu_total_ms") else None
        e["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in rs)
        e["rss_end_bytes"] = med([r.get("rss_end_bytes") or (r.get("rss_anon_bytes", 0) + r.get("rss_file_bytes", 0))
                                  for r in rs])
        for k in ("model_bytes", "arena_bytes", "weights_dtype", "backend", "backend_report", "mode",
                  "quantized_engine", "torch", "onnxruntime", "threads", "source_length", "tokens", "repeat",
                  "warmup", "kernel_fallback_calls", "rss_before_load_bytes", "ids", "top5_first", "top5_last"):
            if k in first:
                e[k] = first[k]
        e["rounds"] = len(rs)
        e["total_ms_rounds"] = [r["total_ms"] for r in rs]
        engines[eid] = e
    return engines


def ratio(runs, fast, slow, key):
    """Median over rounds of slow[key] / fast[key] (> 1: `fast` is faster)."""
    per_round = defaultdict(dict)
    for r in runs:
        per_round[r["round"]][r["engine_id"]] = r
    vals = []
    for rd in per_round.values():
        if fast in rd and slow in rd and rd[fast].get(key) and rd[slow].get(key):
            vals.append(rd[slow][key] / rd[fast][key])
    return med(vals)


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def weights_label(eid, e):
    if eid.startswith("tern"):
        return {"f32": "fp32", "f16": "fp16", "i8": "int8", "i4": "int4 (emb. int8)"}.get(e.get("weights_dtype"), "?")
    if eid == "pytorch-int8":
        return f"int8 dyn. ({e.get('quantized_engine')})"
    if eid == "ort-int8":
        return "int8 DynQuantMatMul"
    return "fp32"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", default="bench/run.sh")
    ap.add_argument("--load", default=None)
    ap.add_argument("--tern", default=None)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    with open(args.runs) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    labels = list(dict.fromkeys(r["label"] for r in runs))
    result = {"date": os.path.basename(args.out), "command": args.command, "machine": machine(),
              "git": git_info(root), "load_average": args.load, "models": {}}
    md = [f"# tern benchmark {result['date']}", "",
          f"Command: `{args.command}`", "",
          f"Machine: {result['machine'].get('cpu')} ({result['machine'].get('cpus')} CPUs; "
          f"{', '.join(result['machine'].get('cpu_flags', []))}); load average {args.load}; "
          f"git {result['git']['commit']}{' (dirty tree)' if result['git']['dirty'] else ''}", ""]
    for label in labels:
        lr = [r for r in runs if r["label"] == label]
        engines = aggregate(lr)
        ref = engines.get("pytorch-fp32")
        verification = {}
        for eid, e in engines.items():
            if ref is None:
                break
            verification[eid] = {"ids": compare_ids(ref.get("ids"), e.get("ids")),
                                 "top5_first": compare_top5(ref.get("top5_first"), e.get("top5_first")),
                                 "top5_last": compare_top5(ref.get("top5_last"), e.get("top5_last"))}
        ratios = {}
        for name, fast, slow, target in RATIOS:
            if fast in engines and slow in engines:
                parts = {key: ratio(lr, fast, slow, key) for _, key in PARTS}
                ratios[name] = {"fast": fast, "slow": slow, "target": target, "speedup": parts["total_ms"],
                                "parts": parts,
                                "meets_target": None if target is None or parts["total_ms"] is None
                                else parts["total_ms"] >= target}
        memory = {}
        for eid, e in engines.items():
            if eid.startswith("tern") and e.get("arena_bytes"):
                budget = e["model_bytes"] + e["arena_bytes"] + 8 * MIB
                memory[eid] = {"peak_rss_bytes": e["peak_rss_bytes"], "budget_bytes": budget,
                               "meets_target": e["peak_rss_bytes"] <= budget,
                               "margin_mib": (budget - e["peak_rss_bytes"]) / MIB}
        result["models"][label] = {"engines": engines, "ratios": ratios, "verification": verification,
                                   "memory_target": memory}

        md += [f"## {label}", "",
               "| engine | weights | encode 32 ms | encode 128 ms | decode ms/token | 32 tokens ms | tokens/s "
               "| CPU ms (32 tokens) | load+prepare ms | peak RSS MiB | file MiB | ids vs PyTorch fp32 |",
               "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
        for eid in [e for e in ORDER if e in engines] + [e for e in engines if e not in ORDER]:
            e = engines[eid]
            v = verification.get(eid, {}).get("ids")
            ids = "-" if not v else ("same" if v["equal"] else f"{100 * v['agreement']:.0f}% (from {v['first_difference']})")
            md.append(f"| {eid} | {weights_label(eid, e)} | {fmt(e['encode_ms_32'])} | {fmt(e['encode_ms_128'])} "
                      f"| {fmt(e['decode_ms_per_token'], 2)} | {fmt(e['total_ms'])} | {fmt(e['tokens_per_s'])} "
                      f"| {fmt(e.get('cpu_total_ms'))} "
                      f"| {fmt(e['load_prepare_ms'], 0)} | {fmt(e['peak_rss_bytes'] / MIB)} "
                      f"| {fmt(e['model_bytes'] / MIB)} | {ids} |")
        md += ["", "| speed-up (median of per-round ratios) | total | target | total, CPU time | encode 32 "
                   "| encode 128 | decode/token | first step | step 32 |", "|---|--:|---|--:|--:|--:|--:|--:|--:|"]
        for name, r in ratios.items():
            p = r["parts"]
            tgt = "-" if r["target"] is None else (f">= {r['target']:g}x: " + ("met" if r["meets_target"] else "MISSED"))
            md.append(f"| {name} | {fmt(r['speedup'], 2)}x | {tgt} | {fmt(p['cpu_total_ms'], 2)}x | {fmt(p['encode_ms_32'], 2)} "
                      f"| {fmt(p['encode_ms_128'], 2)} | {fmt(p['decode_ms_per_token'], 2)} "
                      f"| {fmt(p['decode_first_step_ms'], 2)} | {fmt(p['decode_last_step_ms'], 2)} |")
        md += ["", "| tern memory | peak RSS MiB | .tern + arena + 8 MiB | margin MiB | target |",
               "|---|--:|--:|--:|---|"]
        for eid, m in memory.items():
            md.append(f"| {eid} | {fmt(m['peak_rss_bytes'] / MIB)} | {fmt(m['budget_bytes'] / MIB)} "
                      f"| {fmt(m['margin_mib'])} | {'met' if m['meets_target'] else 'MISSED'} |")
        tern_reports = {eid: e.get("backend_report") for eid, e in engines.items() if eid.startswith("tern")}
        md += ["", "Backends: " + "; ".join(f"{k}: {v}" for k, v in tern_reports.items()), ""]
        top = {eid: v.get("top5_last") for eid, v in verification.items() if v.get("top5_last")}
        md += ["Top-5 logits at step 32 vs PyTorch fp32 (same ids / max |diff|): " +
               "; ".join(f"{k}: {'same' if t['same_ids'] else 'differ'} / {fmt(t['max_abs_diff'], 4)}"
                         for k, t in top.items()), ""]

    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
