#!/bin/sh
# Issue 18's comparisons on equal training time: today's shape (3+3, d256, post-LN, 8k joint
# vocabulary) against pre-LN, a wider/deeper 6+3 d384, and a 16k joint vocabulary, each trained
# from scratch on the same corpus for the same CPU time (--max-cpu-hours: this process's CPU time
# in its steps, so that a machine shared with builds gives every arm the same compute), then
# greedy-decoded on the three validation sets (evaluate.py: BLEU, chrF, loops).
#
#   tools/train/compare.sh [--hours H] [--dir BASE] [--nice N] [--data DIR] [--device D] [ARM...]
#     ARM: base8k preln d384 v16k (default: all four, in that order), and d384pre, v16kpre: the
#     wider/deeper shape and the 16k vocabulary with pre-LN (post-LN stalls under this short
#     warm-up at both widths, so shape and vocabulary are compared on pre-LN: MODEL_CARD.md),
#     and d384pre16k: both.
#     --hours H   CPU hours per arm (default 0.35); with --device cuda, hours of step time
#     --dir BASE  runs in BASE/ARM (default /var/cache/tern/compare); results in BASE/ARM/eval.txt
#     --data DIR  the corpus (default /var/cache/tern/data)
#     --device D  cpu (default) or cuda: on an accelerator the arms train at the same time, each
#                 for the same step time on the shared device, with batches and schedule for it
#                 (GPU_COMMON below); each is then evaluated there as its last snapshot and as
#                 the average of its last three (eval_last/eval_avg.*.json, for select_arm.py)
#     SPM8=PATH   the 8k SentencePiece model of the 8k arms (default: the shipped one)
# Needs the corpus (tools/data/prepare.sh) and, for v16k, a 16k SentencePiece model:
#   SPM=1 SPM_VOCAB=16000 SPM_OUT=/var/cache/tern/spm16k.model tools/data/prepare.sh
# An arm whose eval.txt exists is skipped; one interrupted resumes from its last.pt.
# One thread per arm, arms one after another (the other core stays free for builds).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HOURS=0.35
BASE=/var/cache/tern/compare
NICE=10
DATA=/var/cache/tern/data
SPM16=${SPM16:-/var/cache/tern/spm16k.model}
SPM8=${SPM8:-$ROOT/examples/translation/spm.model}
DEVICE=cpu
while [ $# -gt 0 ]; do
  case "$1" in
    --hours) HOURS=$2; shift 2 ;;
    --dir) BASE=$2; shift 2 ;;
    --nice) NICE=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    *) break ;;
  esac
done
ARMS=${*:-base8k preln d384 v16k}
PY=${PY:-/usr/bin/python3}  # PY=python3 where that is the interpreter with PyTorch (a GPU image)
# TRAIN_TIMEOUT / EVAL_TIMEOUT (seconds, device mode): wall-clock limits on a leased machine; a
# trainer past its limit gets SIGTERM and writes its checkpoint and snapshot before it exits
TRAIN_TIMEOUT=${TRAIN_TIMEOUT:-0}
EVAL_TIMEOUT=${EVAL_TIMEOUT:-0}
# PARALLEL=1: the device mode's parallel arms on --device cpu (a rehearsal of a leased run, with
# EVAL_LIMIT=N validation sentences per set); 0 otherwise
PARALLEL=${PARALLEL:-0}
EVAL_LIMIT=${EVAL_LIMIT:-0}
# With the kernel's autogroup scheduling (Debian's default) each session shares the CPU as one
# group and `nice` only ranks processes inside their own group: the arms would take a whole core
# from a build or a benchmark started from another terminal. The group's own nice value is the
# one that counts across sessions (sched(7), "The autogroup feature"); start this script under
# setsid so that the group is its own.
echo "$NICE" >/proc/self/autogroup 2>/dev/null || true
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# The same schedule for every arm, set for a short budget: warm-up 400 steps (v1: 1200 over
# ~7000 steps) to a peak learning rate near v1's (0.6 x 256^-0.5 x 400^-0.5 = 1.9e-3 at d256).
COMMON="--lr-scale 0.6 --warmup 400 --sentence-weight 3 --ckpt-minutes 5 --valid-minutes 10"
# On an accelerator: 16k-token batches (5x the CPU's) and one schedule that post-LN survives too
# (v1 trained post-LN at peak 7e-4; here 0.5 x 1000^-0.5: 9.9e-4 at d256, 8.1e-4 at d384, as the
# paper's 7e-4 at d512), snapshots every minute for averaging.
GPU_COMMON="--lr-scale 0.5 --warmup 1000 --sentence-weight 3 --max-tokens 16000 --ckpt-minutes 1
  --keep 3 --valid-minutes 1.5 --log-every 100 --threads 2"

arm_settings() {  # sets spm and extra for arm $1
  spm=$SPM8
  case "$1" in
    base8k) extra="" ;;
    preln) extra='--model-json {"norm":"pre"}' ;;
    d384) extra='--model-json {"d_model":384,"heads":6,"encoder_layers":6,"decoder_layers":3,"d_ff":1536}' ;;
    v16k) spm=$SPM16; extra="" ;;
    d384pre) extra='--model-json {"norm":"pre","d_model":384,"heads":6,"encoder_layers":6,"decoder_layers":3,"d_ff":1536}' ;;
    v16kpre) spm=$SPM16; extra='--model-json {"norm":"pre"}' ;;
    d384pre16k) spm=$SPM16; extra='--model-json {"norm":"pre","d_model":384,"heads":6,"encoder_layers":6,"decoder_layers":3,"d_ff":1536}' ;;
    *) echo "unknown arm $1" >&2; exit 2 ;;
  esac
}

if [ "$DEVICE" != cpu ] || [ "$PARALLEL" = 1 ]; then
  for arm in $ARMS; do arm_settings "$arm"; done  # unknown arms fail before anything starts
  # the corpus encoded once per SentencePiece model, before the arms start (they share the cache)
  for arm in $ARMS; do arm_settings "$arm"; echo "$spm"; done | sort -u | while read -r model; do
    "$PY" "$ROOT/tools/train/train.py" --run "$BASE/.encode" --data "$DATA" --spm "$model" \
      --prepare-only >/dev/null
  done
  for arm in $ARMS; do
    arm_settings "$arm"
    mkdir -p "$BASE/$arm"
    echo "$arm: training ($HOURS h of step time on $DEVICE) in $BASE/$arm"
    # shellcheck disable=SC2086  # GPU_COMMON and extra are word lists
    timeout -s TERM -k 60 "$TRAIN_TIMEOUT" \
      "$PY" "$ROOT/tools/train/train.py" --run "$BASE/$arm" --data "$DATA" --spm "$spm" \
      --max-hours "$HOURS" $GPU_COMMON --device "$DEVICE" $extra >>"$BASE/$arm/stdout.log" 2>&1 &
  done
  wait
  for arm in $ARMS; do  # every (arm, set, weights) at once: each is small for the device
    arm_settings "$arm"
    for set in valid valid_everyday valid_technical; do
      for how in last:1 avg:3; do
        timeout -k 10 "$EVAL_TIMEOUT" \
          "$PY" "$ROOT/tools/train/evaluate.py" --run "$BASE/$arm" --last "${how#*:}" --spm "$spm" \
          --src "$DATA/$set.de" --ref "$DATA/$set.en" --device "$DEVICE" --batch 250 \
          --limit "$EVAL_LIMIT" --out "$BASE/$arm/$set.${how%:*}.hyp" \
          --json "$BASE/$arm/eval_${how%:*}.$set.json" >"$BASE/$arm/$set.${how%:*}.log" 2>&1 &
      done
    done
  done
  wait
  exit 0
fi

for arm in $ARMS; do
  dir=$BASE/$arm
  mkdir -p "$dir"
  [ -f "$dir/eval.txt" ] && { echo "$arm: done ($dir/eval.txt)"; continue; }
  arm_settings "$arm"
  echo "$arm: training ($HOURS CPU hours) in $dir"
  # shellcheck disable=SC2086  # COMMON and extra are word lists
  nice -n "$NICE" "$PY" "$ROOT/tools/train/train.py" --run "$dir" --data "$DATA" --spm "$spm" \
    --threads 1 --max-cpu-hours "$HOURS" $COMMON $extra >>"$dir/stdout.log" 2>&1
  : >"$dir/eval.tmp"
  for set in valid valid_everyday valid_technical; do
    # the last snapshot alone: the comparison is of the runs at the budget, not of averages
    nice -n "$NICE" "$PY" "$ROOT/tools/train/evaluate.py" --run "$dir" --last 1 --spm "$spm" \
      --src "$DATA/$set.de" --ref "$DATA/$set.en" --out "$dir/$set.hyp" >"$dir/$set.log" 2>&1
    printf '%s\t%s\n' "$set" "$(tail -n 2 "$dir/$set.log" | tr "\n" " ")" >>"$dir/eval.tmp"
  done
  grep '^valid' "$dir/train.log" | tail -n 1 >>"$dir/eval.tmp"
  mv "$dir/eval.tmp" "$dir/eval.txt"
  cat "$dir/eval.txt"
done
