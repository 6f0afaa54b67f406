#!/usr/bin/env python3
"""Aggregate bench/run.sh's raw runs into bench/results/<date>.json and .md, print the tables.

Each engine ran once per round and setting (--repeat timed translations each, medians inside
the engine). Per engine the reported number is the median over rounds; a ratio between two
engines is the median over rounds of the per-round ratio (engines of one round ran back to
back, so this cancels most of the drift of a shared machine).

Settings (bench/run.sh SETTINGS x THREADS): each run has a setting "BxK-tT" (batch B, beam K,
T threads; runs without one are 1x1-t<threads>). Per model the JSON has "settings": {setting:
{engines, ratios, verification, memory_target, batch, beam, threads}}; the model's own
engines / ratios / verification / memory_target keys are those of its first setting (the
batch-1 results of older runs keep their place). The .md has one table set per setting, a
tokens/s overview over the settings, and thread scaling where THREADS had several counts.

Verification: sentence 0's ids and top-5 logits against PyTorch fp32 (as before), and every
sentence (ids_batch at batch > 1, the best hypothesis with beams) against PyTorch fp32 and
against tern fp32: how many sentences have exactly the same ids.

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
ORDER = ["tern-fp32", "tern-fp16", "tern-int8", "tern-int4", "tern-int4row", "tern-int8sl",
         "tern-int4rowsl", "ort-fp32", "ort-int8", "pytorch-fp32", "pytorch-int8"]
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
    ("tern int4 vs tern int8", "tern-int4", "tern-int8", None),
    ("tern int4 per row vs tern int8", "tern-int4row", "tern-int8", None),
    ("tern int4 per row vs ONNX Runtime int8", "tern-int4row", "ort-int8", None),
    # With the vocabulary shortlist (engines tern-<dtype>sl): against the same model without.
    ("tern int8 + shortlist vs ONNX Runtime int8", "tern-int8sl", "ort-int8", None),
    ("tern int8 + shortlist vs tern int8", "tern-int8sl", "tern-int8", None),
    ("tern int4 per row + shortlist vs ONNX Runtime int8", "tern-int4rowsl", "ort-int8", None),
    ("tern int4 per row + shortlist vs tern int4 per row", "tern-int4rowsl", "tern-int4row", None),
] + [(f"tern {d} vs baseline tern {d} (TERN_BASELINE)", f"tern-{d}", f"tern-old-{d}", None)
     for d in ("fp32", "fp16", "int8", "int4", "int4row", "int8sl", "int4rowsl")]
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


def sentences(e):
    """Every sentence's ids: ids_batch split into rows, or [ids] (batch 1)."""
    if e is None:
        return None
    if e.get("ids_batch"):
        t = e["tokens"]
        flat = e["ids_batch"]
        return [flat[i:i + t] for i in range(0, len(flat), t)]
    return [e["ids"]] if e.get("ids") is not None else None


def compare_sentences(ref, other):
    """How many sentences have exactly the same ids (and which differ)."""
    a, b = sentences(ref), sentences(other)
    if a is None or b is None or len(a) != len(b):
        return None
    differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return {"same": len(a) - len(differ), "of": len(a), "differ": differ}


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
        n_tokens = first.get("batch", 1) * first["tokens"]  # generated tokens of all sentences
        e["tokens_per_s"] = n_tokens * 1000.0 / e["total_ms"]
        e["tokens_per_cpu_s"] = n_tokens * 1000.0 / e["cpu_total_ms"] if e.get("cpu_total_ms") else None
        e["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in rs)
        e["rss_end_bytes"] = med([r.get("rss_end_bytes") or (r.get("rss_anon_bytes", 0) + r.get("rss_file_bytes", 0))
                                  for r in rs])
        for k in ("model_bytes", "arena_bytes", "weights_dtype", "backend", "backend_report", "mode",
                  "quantized_engine", "torch", "onnxruntime", "threads", "source_length", "tokens", "batch",
                  "beam", "repeat", "warmup", "kernel_fallback_calls", "rss_before_load_bytes", "ids",
                  "ids_batch", "top5_first", "top5_last"):
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
        shortlist = " + shortlist" if eid.endswith("sl") else ""
        if eid.removesuffix("sl").endswith("int4row"):
            return "int4 per row (emb. int8)" + shortlist
        return {"f32": "fp32", "f16": "fp16", "i8": "int8",
                "i4": "int4 blocks of 32 (emb. int8)"}.get(e.get("weights_dtype"), "?") + shortlist
    if eid == "pytorch-int8":
        return f"int8 dyn. ({e.get('quantized_engine')})"
    if eid == "ort-int8":
        return "int8 DynQuantMatMul"
    return "fp32"


def setting_of(run):
    return run.get("setting") or f"{run.get('batch', 1)}x{run.get('beam', 1)}-t{run.get('threads', 1)}"


def describe(batch, beam, threads):
    return (f"batch {batch}, {'greedy' if beam == 1 else f'beam {beam}'}, "
            f"{threads} thread{'s' if threads != 1 else ''}")


def target_for(name, default, batch, beam):
    """The target of a ratio in this setting: issue 4's at batch 1 greedy, issue 20's for
    batches of 16 and more and for beam 4 (tern int8 >= 2x ONNX Runtime int8), and tern int4 >=
    tern int8 everywhere."""
    if name in ("tern int4 vs tern int8", "tern int4 per row vs tern int8"):
        return 1.0
    if batch == 1 and beam == 1:
        return default
    if name == "tern int8 vs ONNX Runtime int8" and ((batch >= 16 and beam == 1) or (batch == 1 and beam == 4)):
        return 2.0
    return None


def ordered(engines):
    return [e for e in ORDER if e in engines] + [e for e in engines if e not in ORDER]


def analyse(lr):
    """Runs of one model and setting -> engines, ratios, verification, memory target."""
    engines = aggregate(lr)
    first = lr[0]
    batch, beam, threads = first.get("batch", 1), first.get("beam", 1), first.get("threads", 1)
    ref = engines.get("pytorch-fp32")
    tern_ref = engines.get("tern-fp32")
    verification = {}
    for eid, e in engines.items():
        v = {}
        if ref is not None:
            v.update(ids=compare_ids(ref.get("ids"), e.get("ids")),
                     top5_first=compare_top5(ref.get("top5_first"), e.get("top5_first")),
                     top5_last=compare_top5(ref.get("top5_last"), e.get("top5_last")),
                     sentences_vs_pytorch_fp32=compare_sentences(ref, e))
        if tern_ref is not None:
            v["sentences_vs_tern_fp32"] = compare_sentences(tern_ref, e)
        verification[eid] = v
    ratios = {}
    for name, fast, slow, target in RATIOS:
        if fast in engines and slow in engines:
            target = target_for(name, target, batch, beam)
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
    return {"batch": batch, "beam": beam, "threads": threads, "engines": engines, "ratios": ratios,
            "verification": verification, "memory_target": memory}


def sentences_cell(c):
    if not c:
        return "-"
    return "all" if c["same"] == c["of"] and c["of"] > 1 else ("same" if c["same"] == c["of"] else f"{c['same']}/{c['of']}")


def tables(a, heading):
    """Markdown of one model and setting."""
    engines, ratios, verification, memory = a["engines"], a["ratios"], a["verification"], a["memory_target"]
    batch, beam, tokens = a["batch"], a["beam"], next(iter(engines.values()))["tokens"]
    many = batch > 1 or beam > 1
    work = f"{tokens} tokens" if batch == 1 else f"{batch} x {tokens} tokens"
    md = [heading, ""]
    if many:
        sources = "one source" if batch == 1 else f"a batch of {batch} sources"
        md += [f"{describe(batch, a['beam'], a['threads'])}: {sources}, {tokens} tokens each "
               f"{'greedy' if beam == 1 else f'(the best of {beam} beams)'}; tokens/s counts every sentence's tokens; "
               "decode ms/token = one step of the whole batch.", ""]
    md += [f"| engine | weights | encode 32 ms | encode 128 ms | decode ms/token | {work} ms | tokens/s "
           f"| CPU ms ({work}) | load+prepare ms | peak RSS MiB | file MiB | ids vs PyTorch fp32 "
           "| sentences = tern fp32 |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|"]
    for eid in ordered(engines):
        e = engines[eid]
        ver = verification.get(eid, {})
        v = ver.get("ids")
        ids = "-" if not v else ("same" if v["equal"] else f"{100 * v['agreement']:.0f}% (from {v['first_difference']})")
        rows = ver.get("sentences_vs_pytorch_fp32")
        if rows and rows["of"] > 1:  # every sentence, then sentence 0's agreement
            ids = f"{rows['same']}/{rows['of']} sentences (sentence 0: {ids})"
        md.append(f"| {eid} | {weights_label(eid, e)} | {fmt(e['encode_ms_32'])} | {fmt(e['encode_ms_128'])} "
                  f"| {fmt(e['decode_ms_per_token'], 2)} | {fmt(e['total_ms'])} | {fmt(e['tokens_per_s'])} "
                  f"| {fmt(e.get('cpu_total_ms'))} "
                  f"| {fmt(e['load_prepare_ms'], 0)} | {fmt(e['peak_rss_bytes'] / MIB)} "
                  f"| {fmt(e['model_bytes'] / MIB)} | {ids} | {sentences_cell(ver.get('sentences_vs_tern_fp32'))} |")
    first_step = "first step" if beam == 1 else "first step (greedy only)"
    md += ["", "| speed-up (median of per-round ratios) | total | target | total, CPU time | encode 32 "
               f"| encode 128 | decode/token | {first_step} | step {tokens} |", "|---|--:|---|--:|--:|--:|--:|--:|--:|"]
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
    if top:
        md += [f"Top-5 logits of sentence 0 at step {tokens} vs PyTorch fp32 (same ids / max |diff|): " +
               "; ".join(f"{k}: {'same' if t['same_ids'] else 'differ'} / {fmt(t['max_abs_diff'], 4)}"
                         for k, t in top.items()), ""]
    if many:
        agree = {eid: v.get("sentences_vs_tern_fp32") for eid, v in verification.items()
                 if v.get("sentences_vs_tern_fp32") and eid != "tern-fp32"}
        what = "best hypothesis" if beam > 1 else "greedy ids"
        md += [f"Sentences whose {what} equal tern fp32's (of {batch}): " +
               "; ".join(f"{k}: {c['same']}" + (f" (differ: {', '.join(map(str, c['differ'][:8]))}"
                                                 f"{', ...' if len(c['differ']) > 8 else ''})" if c["differ"] else "")
                         for k, c in agree.items()), ""]
    return md


def overview(settings):
    """tokens/s and peak RSS of every engine in every setting."""
    names = list(settings)
    engines = ordered({e: None for a in settings.values() for e in a["engines"]})
    head = [describe(a["batch"], a["beam"], a["threads"]) for a in settings.values()]
    md = ["| tokens/s (peak RSS MiB) | " + " | ".join(head) + " |", "|---|" + "--:|" * len(names)]
    for eid in engines:
        cells = []
        for n in names:
            e = settings[n]["engines"].get(eid)
            cells.append("-" if e is None else f"{fmt(e['tokens_per_s'])} ({fmt(e['peak_rss_bytes'] / MIB, 0)})")
        md.append(f"| {eid} | " + " | ".join(cells) + " |")
    return md + [""]


def thread_scaling(lr, settings):
    """Per engine and batch x beam: tokens/s at T threads over 1 thread (median of per-round
    ratios), where THREADS had several counts."""
    groups = defaultdict(dict)
    for name, a in settings.items():
        groups[(a["batch"], a["beam"])][a["threads"]] = name
    rows = []
    for (batch, beam), by_threads in groups.items():
        if 1 not in by_threads or len(by_threads) < 2:
            continue
        one = by_threads[1]
        for t, name in sorted(by_threads.items()):
            if t == 1:
                continue
            for eid in ordered(settings[name]["engines"]):
                per_round = defaultdict(dict)
                for r in lr:
                    if r["engine_id"] == eid and setting_of(r) in (one, name):
                        per_round[r["round"]][setting_of(r)] = r["total_ms"]
                vals = [d[one] / d[name] for d in per_round.values() if one in d and name in d]
                rows.append((f"batch {batch}, {'greedy' if beam == 1 else f'beam {beam}'}", eid, t, med(vals)))
    if not rows:
        return [], {}
    md = ["| scaling: tokens/s at T threads / at 1 thread | engine | T | speed-up |", "|---|---|--:|--:|"]
    md += [f"| {s} | {eid} | {t} | {fmt(v, 2)}x |" for s, eid, t, v in rows]
    return md + [""], [{"setting": s, "engine": eid, "threads": t, "speedup": v} for s, eid, t, v in rows]


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
        names = list(dict.fromkeys(setting_of(r) for r in lr))
        settings = {n: analyse([r for r in lr if setting_of(r) == n]) for n in names}
        first = settings[names[0]]
        model = {k: first[k] for k in ("engines", "ratios", "verification", "memory_target")}
        model["setting"] = names[0]
        model["settings"] = settings
        if len(names) == 1:
            md += tables(first, f"## {label}")
        else:
            md += [f"## {label}", ""] + overview(settings)
            scaling_md, scaling = thread_scaling(lr, settings)
            md += scaling_md
            if scaling:
                model["thread_scaling"] = scaling
            for n, a in settings.items():
                md += tables(a, f"### {label}: {describe(a['batch'], a['beam'], a['threads'])}")
        result["models"][label] = model

    with open(args.out + ".json", "w") as f:
        json.dump(result, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
