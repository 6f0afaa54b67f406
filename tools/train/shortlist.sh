#!/usr/bin/env bash
# Builds the demo model's vocabulary shortlist (docs/shortlist.md) from the model's own
# translations of its training sources: the shortlist should hold the tokens the *model* emits
# for a source (the full vocabulary's argmax), and a lexical table of the reference
# translations misses many of them (a weak model emits words no source word explains, and
# those are what change a translation when they fall outside the candidates). Measured on the
# demo test sets: docs/benchmarks.md, "Shortlist from the model's own translations".
#
#   1. the model converted to int8 without a shortlist;
#   2. `tern translate --no-shortlist` (greedy, as shipped) of every training source line;
#   3. `tern convert --shortlist-corpus train.de train.hyp.en` (IBM model 1) with K and F, the
#      table written as text for examples/translation/.
#
# usage: tools/train/shortlist.sh [--k 250] [--f 150] [--data /var/cache/tern/data]
#          [--model examples/translation/model.safetensors] [--work /var/cache/tern/shortlist]
#          [--out examples/translation/shortlist.txt] [--workers 2]
# Needs `make build` (build/x86_64/tools/tern, or TERN=path) and tools/data/prepare.sh's
# corpus. Step 2 takes about 27 minutes on the 2-core machine (804,519 lines, 2 workers);
# its output is kept in WORK and reused while the model file and train.de are unchanged. The
# translations are text, re-encoded by the converter: SentencePiece may split a word otherwise
# than the model emitted it (rarely; the measured recall counts it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
K=250
F=150
DATA=/var/cache/tern/data
MODEL=$ROOT/examples/translation/model.safetensors
WORK=/var/cache/tern/shortlist
OUT=$ROOT/examples/translation/shortlist.txt
WORKERS=2
TERN=${TERN:-$ROOT/build/x86_64/tools/tern}
while [[ $# -gt 0 ]]; do
  case $1 in
    --k) K=$2; shift 2 ;;
    --f) F=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    *) echo "unknown option $1 (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
[[ -x "$TERN" ]] || { echo "no $TERN: run make build first (or set TERN)" >&2; exit 1; }
for f in "$DATA/train.de" "$DATA/train.en" "$MODEL"; do
  [[ -f "$f" ]] || { echo "missing $f (tools/data/prepare.sh builds the corpus)" >&2; exit 1; }
done
spm=$(dirname "$MODEL")/spm.model
[[ -f "$spm" ]] || { echo "missing $spm (the model's SentencePiece model, beside it)" >&2; exit 1; }
mkdir -p "$WORK"
# The translations belong to one set of weights and one corpus: either changed translates again.
sum=$(cat "$MODEL" "$DATA/train.de" | sha256sum | cut -c1-16)
hyp=$WORK/train.hyp.$sum.en
if [[ ! -s "$hyp" || $(wc -l <"$hyp") -ne $(wc -l <"$DATA/train.de") ]]; then
  "$TERN" convert "$MODEL" -o "$WORK/model.int8.tern" --dtype int8 --tokenizer "$spm" --force \
    --quiet
  echo "[shortlist] translating $(wc -l <"$DATA/train.de") training sources with the model" >&2
  "$TERN" translate -m "$WORK/model.int8.tern" --no-shortlist --batch 32 --workers "$WORKERS" \
    --max-length 128 --long split "$DATA/train.de" >"$hyp.part"
  mv "$hyp.part" "$hyp"
fi
echo "[shortlist] IBM model 1 over (train.de, the model's translations), K = $K, F = $F" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$TERN" convert "$MODEL" -o "$tmp/check.tern" --dtype int8 --tokenizer "$spm" --force --quiet \
  --shortlist-corpus "$DATA/train.de" "$hyp" --shortlist-k "$K" --shortlist-f "$F" \
  --write-shortlist "$tmp/shortlist.txt"
mv "$tmp/shortlist.txt" "$OUT"
echo "[shortlist] wrote $OUT" >&2
