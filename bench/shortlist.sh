#!/usr/bin/env bash
# The vocabulary shortlist's speed and quality table (docs/benchmarks.md, docs/shortlist.md):
#   speed: the demo model and the paper-base model (random weights, bench/models/make_base.py)
#          at int8 and int4, 1 thread, batch 1, greedy, `tern bench` timing each run with and
#          without the shortlist in turn (interleaved in one process); the base model's
#          shortlist comes from a synthetic id corpus (bench/models/synthetic_corpus.py).
#   quality (demo): test-set BLEU with and without, the share of identical greedy outputs, and
#          how often the full-vocabulary output's tokens fall outside the sentence's candidates.
# usage: bench/shortlist.sh [BUILD_DIR] [BASE_CHECKPOINT]   (writes build/bench/shortlist/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/x86_64}
base=${2:-$root/build/bench/models/base/model.safetensors}
tern=$build/tools/tern
out=$root/build/bench/shortlist
data=${TERN_DATA:-/var/cache/tern/data}
mkdir -p "$out"
demo=$root/examples/translation
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for dtype in int8 int4; do
  "$tern" convert "$demo/model.safetensors" -o "$out/demo-$dtype.tern" --dtype "$dtype" \
    --tokenizer "$demo/spm.model" --shortlist "$demo/shortlist.txt" --force --quiet
done
if [ -f "$base" ]; then
  python3 "$root/bench/models/synthetic_corpus.py" --vocab 32000 --pairs 20000 --out "$out/base-corpus"
  for dtype in int8 int4; do
    "$tern" convert "$base" -o "$out/base-$dtype.tern" --dtype "$dtype" --force --quiet \
      --shortlist-corpus "$out/base-corpus/train.src.ids" "$out/base-corpus/train.tgt.ids"
  done
fi
for m in demo-int8 demo-int4 base-int8 base-int4; do
  [ -f "$out/$m.tern" ] || continue
  "$tern" bench -m "$out/$m.tern" --threads 1 --repeat "${REPEAT:-7}" --json >"$out/$m.json"
  python3 - "$out/$m.json" "$m" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
on, off = j["decode_ms_per_token"], j["no_shortlist_decode_ms_per_token"]
print(f"{sys.argv[2]:10s} rows {j['shortlist_rows_per_sentence']:.0f}  decode {off:.2f} -> {on:.2f} ms/token"
      f" ({off / on:.2f}x)  32 tokens {j['no_shortlist_total_ms']:.1f} -> {j['total_ms']:.1f} ms"
      f" ({j['no_shortlist_total_ms'] / j['total_ms']:.2f}x)")
PY
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# Quality on the demo test set (greedy, int8).
test_src=$data/test.de
test_ref=$data/test.en
"$tern" translate -m "$out/demo-int8.tern" --max-length 128 <"$test_src" >"$out/hyp.shortlist.en"
"$tern" translate -m "$out/demo-int8.tern" --max-length 128 --no-shortlist <"$test_src" >"$out/hyp.full.en"
echo "BLEU with shortlist:    $(python3 "$root/tools/data/bleu.py" "$out/hyp.shortlist.en" "$test_ref")"
echo "BLEU without shortlist: $(python3 "$root/tools/data/bleu.py" "$out/hyp.full.en" "$test_ref")"
same=$(paste -d'\t' "$out/hyp.shortlist.en" "$out/hyp.full.en" | awk -F'\t' '$1 == $2' | wc -l)
echo "identical greedy outputs: $same of $(wc -l <"$test_src")"
# Recall: the full-vocabulary output (re-encoded with the target tokenizer) inside the
# candidates of its source sentence.
"$tern" convert "$demo/model.safetensors" -o "$out/recall.tern" --dtype int8 --force --quiet \
  --tokenizer "$demo/spm.model" --shortlist "$demo/shortlist.txt" \
  --shortlist-eval "$test_src" "$out/hyp.full.en"
