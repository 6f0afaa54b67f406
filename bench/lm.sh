#!/usr/bin/env bash
# Issue 15's language-model benchmark: tern against PyTorch and ONNX Runtime on a decoder-only
# model of a published shape (bench/models/make_lm.py: SmolLM-135M by default, random weights),
# same checkpoint, same prompts, interleaved rounds (engine order rotates), plus this machine's
# read bandwidth at each thread count in the same run (bench/tools/read_bandwidth.c). ONNX
# Runtime runs bench/peers/export_lm_onnx.py's graphs (fp32, and int8 with DynamicQuantizeMatMul)
# through bench/peers/ort_lm_bench.js.
#
#   bench/lm.sh        -> bench/results/<date>-lm.json + .md, and the table on stdout
#
# Knobs (environment): SHAPE=smollm (or llama1b), ENGINES=tern-fp32,tern-int8,tern-int4,
# pytorch-fp32,pytorch-int8,ort-fp32,ort-int8 (also tern-int4row: int4 per row; tern-int4all:
# per row, the tied embedding / output projection int4 too; any tern engine with -kv16 appended,
# e.g. tern-int4row-kv16: the same file with fp16 K/V caches, --kv-cache fp16), THREADS=1,2,
# PROMPT=128, TOKENS=128, BATCH=1, ROUNDS=3, REPEAT=3, WARMUP=1,
# TERN_BUILD_DIR=build/x86_64 (its tools/tern, built by `make build`),
# NICE=-10 (as bench/run.sh: the measured processes' priority when root), OUT=prefix.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
NICE=${NICE--10}
if [[ -n "$NICE" && $(id -u) -eq 0 && -z "${TERN_BENCH_SESSION:-}" ]] && command -v setsid >/dev/null; then
  TERN_BENCH_SESSION=1 exec setsid -w "$0" "$@"  # own session = own autogroup (bench/run.sh)
fi
if [[ -n "$NICE" && $(id -u) -eq 0 && -w /proc/self/autogroup ]]; then
  echo "$NICE" >/proc/self/autogroup 2>/dev/null || true
fi
SHAPE=${SHAPE:-smollm}
ENGINES=${ENGINES:-tern-fp32,tern-int8,tern-int4,pytorch-fp32,pytorch-int8,ort-fp32,ort-int8}
THREADS=${THREADS:-1,2}
PROMPT=${PROMPT:-128}
TOKENS=${TOKENS:-128}
BATCH=${BATCH:-1}
ROUNDS=${ROUNDS:-3}
REPEAT=${REPEAT:-3}
WARMUP=${WARMUP:-1}
TERN=${TERN_BUILD_DIR:-build/x86_64}/tools/tern
OUT=${OUT:-bench/results/$(date -u +%Y-%m-%d)-lm}
PY=/usr/bin/python3
PRIO=()
[[ -n "$NICE" && $(id -u) -eq 0 ]] && PRIO=(nice -n "$NICE")

# The tern files the engines need (make_lm.py converts each dtype once and keeps it).
DTYPES=$(tr , '\n' <<<"$ENGINES" | sed -n 's/^tern-//p' | sed 's/-kv16$//' | sort -u | paste -sd,)
DTYPES=${DTYPES:-int8}
[[ -x "$TERN" ]] || { echo "no $TERN: run make build first" >&2; exit 1; }
# make_lm.py writes the checkpoint with PyTorch; a fresh machine lacks it.
"$PY" -c 'import torch' 2>/dev/null || {
  echo "[lm] installing python3-torch" >&2
  apt-get install -y -q python3-torch >&2
}
models=$("$PY" bench/models/make_lm.py --tern "$TERN" --shapes "$SHAPE" --dtypes "$DTYPES")
field() { "$PY" -c 'import json,sys; print(eval(sys.argv[2], {"j": json.loads(sys.argv[1])}))' "$1" "$2"; }
checkpoint=$(field "$models" "j['$SHAPE']['checkpoint']")
config=$(field "$models" "j['$SHAPE']['config']")
onnx=$(dirname "$checkpoint")/onnx
if [[ ",$ENGINES," == *,ort-* ]]; then
  # The ONNX export needs python3-onnx (as bench/run.sh installs it); a fresh machine lacks it.
  "$PY" -c 'import onnx' 2>/dev/null || {
    echo "[lm] installing python3-onnx" >&2
    apt-get install -y -q python3-onnx >&2
  }
  if [[ ! -d bench/peers/node_modules/onnxruntime-node ]]; then
    (cd bench/peers && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2)
  fi
  if [[ ! -f $onnx-int8/lm_step.onnx || $onnx-int8/lm_step.onnx -ot bench/peers/export_lm_onnx.py ]]; then
    OMP_NUM_THREADS=1 "$PY" bench/peers/export_lm_onnx.py --checkpoint "$checkpoint" --config "$config" \
      --out "$onnx" --int8 2>&1 | grep -v -i warning >&2 || true
  fi
fi
raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
cc -O2 -march=native -pthread bench/tools/read_bandwidth.c -o "$raw/read_bandwidth"
runs=$raw/runs.jsonl
IFS=, read -ra engines <<<"$ENGINES"
IFS=, read -ra threads <<<"$THREADS"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((round = 0; round < ROUNDS; round++)); do
  for t in "${threads[@]}"; do
    n=${#engines[@]}
    for ((i = 0; i < n; i++)); do
      e=${engines[$(((i + round) % n))]}
      echo "[lm] round $((round + 1))/$ROUNDS threads $t $e" >&2
      common=(--prompt-length "$PROMPT" --tokens "$TOKENS" --batch "$BATCH" --repeat "$REPEAT"
        --warmup "$WARMUP" --threads "$t")
      case $e in
        tern-*)
          dtype=${e#tern-} kv=fp32
          [[ $dtype == *-kv16 ]] && dtype=${dtype%-kv16} kv=fp16
          json=$("${PRIO[@]}" "$TERN" bench -m "$(field "$models" "j['$SHAPE']['tern']['$dtype']")" \
            "${common[@]}" --kv-cache "$kv" --json) ;;
        ort-fp32) json=$("${PRIO[@]}" node bench/peers/ort_lm_bench.js --dir "$onnx" "${common[@]}") ;;
        ort-int8) json=$("${PRIO[@]}" node bench/peers/ort_lm_bench.js --dir "$onnx-int8" "${common[@]}") ;;
        pytorch-*) json=$("${PRIO[@]}" "$PY" bench/peers/torch_lm_bench.py --checkpoint "$checkpoint" \
          --config "$config" --mode "${e#pytorch-}" "${common[@]}") ;;
        *) echo "unknown engine $e" >&2; exit 2 ;;
      esac
      "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); j.update(name=sys.argv[2], round=int(sys.argv[3])); print(json.dumps(j))' \
        "$json" "$e" "$round" >>"$runs"
    done
  done
  # The machine's read bandwidth between rounds, at each thread count (bench/tools/
  # read_bandwidth.c: a 1 GiB buffer summed in wide loads, median of 7 passes).
  for t in "${threads[@]}"; do "${PRIO[@]}" "$raw/read_bandwidth" "$t" >>"$runs"; done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$(dirname "$OUT")"
"$PY" bench/lm_report.py "$runs" --shape "$SHAPE" --load "$load_before -> $load_after" \
  --git "$(git rev-parse --short HEAD)" --out "$OUT"
