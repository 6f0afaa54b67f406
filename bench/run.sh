#!/usr/bin/env bash
# tern's benchmark against PyTorch and ONNX Runtime, same checkpoints, same run (issue 4).
#
#   bench/run.sh                 build, make the models, run every engine interleaved, write
#                                bench/results/<date>.json + .md + .png, print the table
#
# Knobs (environment):
#   MODELS=base,demo      base: paper-base size, random weights; demo: the shipped demo model
#                         (examples/translation/model.safetensors) or random weights of its shape
#   ROUNDS=3              interleaved rounds (engine order rotates); each engine's result is the
#                         median over rounds of its per-round medians
#   REPEAT=5 WARMUP=1     timed / untimed translations per engine and round
#   THREADS=1 SOURCE=32 TOKENS=32
#                         THREADS may be a list (THREADS=1,2): every setting below runs at each
#   BATCH=1 BEAM=1        sentences per batch, beam width (1: greedy), passed to every engine
#   SETTINGS=1x1,16x1,32x1,1x4   several BATCHxBEAM settings in one run (default: BATCHxBEAM);
#                         each round runs every setting x thread count x engine, interleaved,
#                         and report.py gives a table per setting (plot.py: tokens/s per setting)
#   ENGINES=...           default: tern-fp32,tern-fp16,tern-int8,tern-int4,pytorch-fp32,
#                         pytorch-int8,ort-fp32,ort-int8; also tern-int4row (int4 per row) and
#                         tern-<dtype>sl (e.g. tern-int8sl: with a vocabulary shortlist,
#                         make_base.py; the base model's from a synthetic corpus)
#   TERN_BUILD_DIR=build/x86_64   where `tern` is built: `cmake --build DIR --target tern` when
#                         configured, else `make DIR` (set-up, configure, build)
#   NO_BUILD=1            use $TERN_BUILD_DIR/tools/tern as it is
#   TERN_BASELINE=PATH    another tern binary (e.g. a build of an older commit) measured as the
#                         engines tern-old-<dtype> on the same model files, interleaved with the
#                         rest: before/after ratios of a change from one run (add tern-old-int8
#                         etc. to ENGINES)
#   NICE=-10              priority of the measured processes when run as root (all engines alike;
#                         less interference from builds on a shared machine); empty: off. With
#                         the kernel's autogroup scheduling, nice alone does not beat other
#                         sessions, so run.sh runs in its own session (setsid) and sets that
#                         session's autogroup nice (/proc/self/autogroup) for the measurements.
#   OUT=bench/results/<date>   output prefix
#   PROFILE=1             afterwards, where the time goes: bench/profile.py (perf) for tern fp32
#                         and int8, ONNX Runtime's profiler for ort fp32 and int8 -> OUT.profile.txt
#                         (0: skip; skipped without perf)
#
# Needs: python3 with torch (Debian python3-torch), python3-onnx, python3-matplotlib, node + npm
# (onnxruntime-node is installed into bench/peers/node_modules from the lock file).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
NICE=${NICE--10}
if [[ -n "$NICE" && $(id -u) -eq 0 && -z "${TERN_BENCH_SESSION:-}" ]] && command -v setsid >/dev/null; then
  TERN_BENCH_SESSION=1 exec setsid -w "$0" "$@"  # own session = own autogroup (see NICE)
fi

MODELS=${MODELS:-base,demo}
ROUNDS=${ROUNDS:-3}
REPEAT=${REPEAT:-5}
WARMUP=${WARMUP:-1}
THREADS=${THREADS:-1}
BATCH=${BATCH:-1}
BEAM=${BEAM:-1}
SETTINGS=${SETTINGS:-${BATCH}x${BEAM}}
SOURCE=${SOURCE:-32}
TOKENS=${TOKENS:-32}
ENGINES=${ENGINES:-tern-fp32,tern-fp16,tern-int8,tern-int4,pytorch-fp32,pytorch-int8,ort-fp32,ort-int8}
TERN_BUILD_DIR=${TERN_BUILD_DIR:-build/x86_64}
STAMP=$(date -u +%Y-%m-%d)
OUT=${OUT:-bench/results/$STAMP}
PY=${PYTHON:-/usr/bin/python3}
WORK=build/bench
RAW=$WORK/raw/$(date -u +%Y%m%dT%H%M%S)
mkdir -p "$RAW" "$(dirname "$OUT")"

log() { printf '[bench] %s\n' "$*" >&2; }

# --- build ------------------------------------------------------------------------------------
if [[ -z "${NO_BUILD:-}" ]]; then
  if [[ -f "$TERN_BUILD_DIR/build.ninja" ]]; then
    log "cmake --build $TERN_BUILD_DIR --target tern"
    cmake --build "$TERN_BUILD_DIR" --target tern >&2
  else
    log "make build (configures $TERN_BUILD_DIR: Release, XNNPACK on)"
    make "$TERN_BUILD_DIR" >&2
  fi
fi
TERN=$TERN_BUILD_DIR/tools/tern
[[ -x "$TERN" ]] || { echo "no $TERN" >&2; exit 1; }

# --- peers' dependencies ----------------------------------------------------------------------
"$PY" -c 'import torch, onnx, matplotlib' 2>/dev/null || {
  log "installing python3-onnx python3-matplotlib"
  apt-get install -y -q python3-onnx python3-matplotlib >&2
}
if [[ ! -d bench/peers/node_modules/onnxruntime-node ]]; then
  log "npm ci (onnxruntime-node, bundled CPU library)"
  (cd bench/peers && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund >&2)
fi

# --- models -----------------------------------------------------------------------------------
log "models ($MODELS)"
# The dtypes the tern engines name (tern-int8, tern-old-int8, tern-int8sl: int8 with a shortlist).
DTYPES=$(tr , '\n' <<<"$ENGINES" | sed -n 's/^tern-\(old-\)\{0,1\}//p' | sort -u | paste -sd,)
"$PY" bench/models/make_base.py --tern "$TERN" --out "$WORK/models" --models "$MODELS" \
  --dtypes "${DTYPES:-int8}" >"$RAW/models.json"
mapfile -t LABELS < <("$PY" -c 'import json,sys; [print(k) for k in json.load(open(sys.argv[1]))]' "$RAW/models.json")
for label in "${LABELS[@]}"; do
  ckpt=$WORK/models/$label/model.safetensors
  onnx=$WORK/onnx/$label
  if [[ ! -f $onnx-int8/decoder_step.onnx || $onnx-int8/decoder_step.onnx -ot $ckpt \
        || $onnx-int8/decoder_step.onnx -ot bench/peers/export_onnx.py ]]; then
    log "ONNX export $label"
    OMP_NUM_THREADS=1 "$PY" bench/peers/export_onnx.py --checkpoint "$ckpt" --out "$onnx" --int8 \
      2> >(grep -v -e TracerWarning -e 'scores = torch.matmul' >&2)
  fi
done

# --- runs -------------------------------------------------------------------------------------
PRIO=()
if [[ -n "$NICE" && $(id -u) -eq 0 ]]; then
  PRIO=(nice -n "$NICE")
  if [[ -w /proc/self/autogroup ]]; then echo "$NICE" >/proc/self/autogroup || true; fi
  log "priority: nice $NICE, $(cat /proc/self/autogroup 2>/dev/null || echo 'no autogroup')"
fi
# Settings: BATCHxBEAM for each thread count, e.g. "16x1 1" (batch 16, greedy, 1 thread).
IFS=, read -r -a SETTING_LIST <<<"$SETTINGS"
IFS=, read -r -a THREAD_LIST <<<"$THREADS"
RUNS=()
for s in "${SETTING_LIST[@]}"; do
  [[ $s =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || { echo "SETTINGS: '$s' is not BATCHxBEAM (e.g. 16x1)" >&2; exit 2; }
  for t in "${THREAD_LIST[@]}"; do
    [[ $t =~ ^[1-9][0-9]*$ ]] || { echo "THREADS: '$t' is not a thread count" >&2; exit 2; }
    RUNS+=("${s%x*} ${s#*x} $t")
  done
done

run_engine() {  # label engine batch beam threads -> one JSON line on stdout
  local label=$1 engine=$2 dir=$WORK/models/$1 threads=$5
  local common=(--source-length "$SOURCE" --tokens "$TOKENS" --repeat "$REPEAT" --warmup "$WARMUP"
                --threads "$threads")
  # Batch and beam flags only off batch-1 greedy, so a TERN_BASELINE binary older than tern
  # bench's --batch / --beam still runs the 1x1 setting.
  if [[ $3 != 1 || $4 != 1 ]]; then common+=(--batch "$3" --beam "$4"); fi
  export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads MKL_NUM_THREADS=$threads
  case $engine in
    tern-old-*) "${PRIO[@]}" "${TERN_BASELINE:?tern-old-* engines need TERN_BASELINE}" bench \
                  -m "$dir/model-${engine#tern-old-}.tern" --json "${common[@]}" ;;
    tern-*) "${PRIO[@]}" "$TERN" bench -m "$dir/model-${engine#tern-}.tern" --json "${common[@]}" ;;
    pytorch-*) "${PRIO[@]}" "$PY" bench/peers/torch_bench.py --checkpoint "$dir/model.safetensors" \
                 --config "$dir/config.json" --mode "${engine#pytorch-}" "${common[@]}" \
                 2> >(grep -v -e 'reduce_range' -e 'InitGoogleLogging' >&2) ;;
    ort-fp32) "${PRIO[@]}" node bench/peers/ort_bench.js --dir "$WORK/onnx/$label" "${common[@]}" ;;
    ort-int8) "${PRIO[@]}" node bench/peers/ort_bench.js --dir "$WORK/onnx/$label-int8" "${common[@]}" ;;
    *) echo "unknown engine $engine" >&2; return 2 ;;
  esac
}

IFS=, read -r -a ENGINE_LIST <<<"$ENGINES"
n=${#ENGINE_LIST[@]}
: >"$RAW/runs.jsonl"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
LOADS=()  # the 1-minute load average after every round
for ((round = 0; round < ROUNDS; ++round)); do
  for label in "${LABELS[@]}"; do
    for run in "${RUNS[@]}"; do
      read -r batch beam threads <<<"$run"
      setting="${batch}x${beam}-t${threads}"
      for ((i = 0; i < n; ++i)); do
        engine=${ENGINE_LIST[$(((i + round) % n))]}  # rotate the order each round
        log "round $((round + 1))/$ROUNDS $label batch $batch beam $beam threads $threads $engine"
        line=$(run_engine "$label" "$engine" "$batch" "$beam" "$threads")
        "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); d.update(label=sys.argv[2], engine_id=sys.argv[3], round=int(sys.argv[4]), setting=sys.argv[5]); print(json.dumps(d))' \
          "$line" "$label" "$engine" "$round" "$setting" >>"$RAW/runs.jsonl"
      done
    done
  done
  LOADS+=("$(cut -d' ' -f1 /proc/loadavg)")
done
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# --- report -----------------------------------------------------------------------------------
COMMAND="bench/run.sh  (MODELS=$MODELS ENGINES=$ENGINES ROUNDS=$ROUNDS REPEAT=$REPEAT WARMUP=$WARMUP THREADS=$THREADS SETTINGS=$SETTINGS SOURCE=$SOURCE TOKENS=$TOKENS NICE=$NICE)"
"$PY" bench/report.py --runs "$RAW/runs.jsonl" --out "$OUT" --command "$COMMAND" \
  --load "$LOAD_START -> $LOAD_END (1-minute average after each round: ${LOADS[*]})" --tern "$TERN"
"$PY" bench/plot.py "$OUT.json" "$OUT.png"
log "wrote $OUT.json $OUT.md $OUT.png (raw runs: $RAW/runs.jsonl)"

# --- profiles ---------------------------------------------------------------------------------
if [[ "${PROFILE:-1}" != 0 ]] && command -v perf >/dev/null; then
  {
    echo "# Where the time goes ($COMMAND)"
    echo "# tern: share of perf samples (bench/profile.py); ONNX Runtime: ms per graph and node kind"
    echo "# over $REPEAT translations (its profiler; bench/peers/ort_bench.js --profile)."
    for label in "${LABELS[@]}"; do
      for run in "${RUNS[@]}"; do
        read -r batch beam threads <<<"$run"
        common=(--source-length "$SOURCE" --tokens "$TOKENS" --repeat "$REPEAT" --warmup "$WARMUP"
                --batch "$batch" --beam "$beam" --threads "$threads")
        echo
        echo "## $label, batch $batch, beam $beam, $threads thread(s)"
        export OMP_NUM_THREADS=$threads
        for dtype in fp32 int8; do
          echo
          "${PRIO[@]}" "$PY" bench/profile.py --tern "$TERN" -m "$WORK/models/$label/model-$dtype.tern" \
            "${common[@]}"
        done
        for dir in "$label" "$label-int8"; do
          echo
          echo "onnxruntime $dir:"
          "${PRIO[@]}" node bench/peers/ort_bench.js --dir "$WORK/onnx/$dir" "${common[@]}" \
            --profile "$RAW/ort-$dir"
        done
      done
    done
  } >"$OUT.profile.txt"
  log "wrote $OUT.profile.txt"
fi
