#!/usr/bin/env python3
"""Pick the model to ship from comparison arms (tools/train/compare.sh --device ...), by the
validation sets alone, and export it.

Usage: select_arm.py --base DIR --out OUT_DIR ARM...
Reads DIR/ARM/eval_{last,avg}.{valid,valid_everyday,valid_technical}.json (evaluate.py --json)
and writes OUT_DIR/compare.md: per arm and set the BLEU / chrF / repeated-word loops of the last
snapshot and of the average of the last three. The winner is the (arm, last or average) with the
highest mean BLEU over the three validation sets (BLEU, not NLL: the arms' vocabularies differ,
and per-token NLL does not compare across vocabularies); the test sets are not read. It is
exported like tools/train/export.py (F16 safetensors with config metadata) to
OUT_DIR/model.safetensors with its config.json and its SentencePiece model as OUT_DIR/spm.model.
An arm without all six results (a run that failed or ran out of time) is listed and skipped.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = ("valid", "valid_everyday", "valid_technical")
HOWS = (("last", 1), ("avg", 3))


def run_args(run):
    """The arguments of the run's last start (train.py logs them as 'args {json}')."""
    args = None
    with open(os.path.join(run, "train.log"), encoding="utf-8") as f:
        for line in f:
            _, _, rest = line.partition(" args ")
            if rest.startswith("{"):
                args = json.loads(rest)
    return args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("arms", nargs="+")
    args = ap.parse_args()
    rows, scores = [], {}
    for arm in args.arms:
        for how, k in HOWS:
            res = {}
            for s in SETS:
                p = os.path.join(args.base, arm, f"eval_{how}.{s}.json")
                if os.path.exists(p):
                    with open(p) as f:
                        res[s] = json.load(f)
            cells = [f"{res[s]['bleu']:.2f} / {res[s]['chrf']:.1f} / {res[s]['loops']}"
                     if s in res else "missing" for s in SETS]
            if len(res) == len(SETS):
                scores[(arm, how, k)] = sum(res[s]["bleu"] for s in SETS) / len(SETS)
            mean = f"{scores[(arm, how, k)]:.2f}" if (arm, how, k) in scores else "-"
            rows.append(f"| {arm} | {how}{k if how == 'avg' else ''} | " + " | ".join(cells)
                        + f" | {mean} |")
    os.makedirs(args.out, exist_ok=True)
    lines = ["| arm | weights | " + " | ".join(f"{s}: BLEU / chrF / loops" for s in SETS)
             + " | mean BLEU |", "|---|---|" + "---|" * len(SETS) + "--:|"] + rows
    if not scores:
        print("\n".join(lines))
        sys.exit("select_arm: no arm has all its validation results")
    arm, how, k = max(scores, key=scores.get)
    run = os.path.join(args.base, arm)
    ra = run_args(run)
    lines.append("")
    lines.append(f"selected: {arm}, {'last snapshot' if how == 'last' else f'average of last {k}'}"
                 f" (mean validation BLEU {scores[(arm, how, k)]:.2f}); spm {ra['spm']}")
    subprocess.run([sys.executable, os.path.join(HERE, "export.py"), "--run", run, "--last",
                    str(k), "--out", args.out], check=True)
    shutil.copyfile(ra["spm"], os.path.join(args.out, "spm.model"))
    with open(os.path.join(args.out, "compare.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
