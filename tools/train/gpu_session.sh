#!/bin/sh
# Issue 18's comparison and the shipped model's training on one leased accelerator, in one go
# (a lease is minutes long and its machine starts bare): compare.sh --device cuda trains the
# arms at the same time for the same step time, evaluates them on the validation sets,
# select_arm.py picks and exports the winner, and the results are packed to leave the machine.
#
#   tools/train/gpu_session.sh IN_DIR OUT_DIR [ARM...]
#     IN_DIR:  train.{de,en}.xz (the corpus of tools/data/prepare.sh, xz-compressed to travel),
#              valid{,_everyday,_technical}.{de,en}, spm8k.model, spm16k.model (prepare.sh with
#              SPM=1 SPM_VOCAB=8000 / 16000)
#     OUT_DIR: model.safetensors.part-aa, -ab, ... (cat them together; split to travel in 15 MiB
#              files), config.json, compare.md (the table and the choice), logs.tgz (every arm's
#              train.log, evaluation logs and validation hypotheses)
#     ARM:     default base8k preln d384pre d384pre16k
#   HOURS (default 0.085: 306 s of step time per arm), TRAIN_TIMEOUT (380 s), EVAL_TIMEOUT (75 s)
#   bound the run; WORK (default /tmp/tern-gpu) holds the runs.
# Runs with the image's python3 (PyTorch with CUDA, sentencepiece); nothing is installed.
# Rehearsal on a CPU: DEVICE=cpu PARALLEL=1 EVAL_LIMIT=20 HOURS=0.002 PY=/usr/bin/python3.
set -u
PY=${PY:-python3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
IN=$1
OUT=$2
shift 2
ARMS=${*:-base8k preln d384pre d384pre16k}
WORK=${WORK:-/tmp/tern-gpu}
DATA=$WORK/data
mkdir -p "$DATA" "$OUT"
t0=$(date +%s)
"$PY" - "$IN" "$DATA" <<'EOF'
import lzma, os, shutil, sys
src, dst = sys.argv[1:]
for name in os.listdir(src):
    if name.endswith(".xz"):
        with lzma.open(os.path.join(src, name)) as f, open(os.path.join(dst, name[:-3]), "wb") as g:
            shutil.copyfileobj(f, g, 1 << 20)
    elif name.startswith("valid"):
        shutil.copy(os.path.join(src, name), dst)
EOF
nvidia-smi -L 2>/dev/null | tee "$WORK/gpu.txt"
echo "data ready after $(($(date +%s) - t0)) s"
# shellcheck disable=SC2086  # ARMS is a word list
PY=$PY SPM8=$IN/spm8k.model SPM16=$IN/spm16k.model TRAIN_TIMEOUT=${TRAIN_TIMEOUT:-380} \
  EVAL_TIMEOUT=${EVAL_TIMEOUT:-75} "$ROOT/tools/train/compare.sh" --device "${DEVICE:-cuda}" \
  --hours "${HOURS:-0.085}" --dir "$WORK/runs" --data "$DATA" $ARMS
echo "trained and evaluated after $(($(date +%s) - t0)) s"
for arm in $ARMS; do
  echo "== $arm"
  grep -E "new run|--max-hours|signal|Error|error" "$WORK/runs/$arm/train.log" "$WORK/runs/$arm/stdout.log" | cut -c1-300
  grep "^20.* step .*tok/s" "$WORK/runs/$arm/train.log" | tail -n 1
  grep "valid step" "$WORK/runs/$arm/train.log" | tail -n 1
  tail -n 2 "$WORK/runs/$arm/stdout.log" | cut -c1-300
done
# shellcheck disable=SC2086
if ! "$PY" "$ROOT/tools/train/select_arm.py" --base "$WORK/runs" --out "$WORK/ship" $ARMS; then
  # no arm has all its validation results: ship the last arm's average rather than nothing
  last=$(echo $ARMS | awk '{ print $NF }')
  echo "selection failed: exporting $last (average of its last 3 snapshots)"
  "$PY" "$ROOT/tools/train/export.py" --run "$WORK/runs/$last" --last 3 --out "$WORK/ship"
  echo "fallback: $last, average of last 3 (no selection)" >"$WORK/ship/compare.md"
fi
split -b 15M "$WORK/ship/model.safetensors" "$OUT/model.safetensors.part-"
cp "$WORK/ship/config.json" "$WORK/ship/compare.md" "$OUT/"
tar -czf "$OUT/logs.tgz" -C "$WORK/runs" --exclude='*.pt' --exclude='*.npz' --exclude='.encode' .
ls -la "$OUT"
echo "done after $(($(date +%s) - t0)) s"
