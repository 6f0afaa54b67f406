#!/usr/bin/env bash
# examples/translation/quality.tsv (what `make demo` prints about the weights' quality) must have
# been measured for the shipped model.safetensors: new weights without a new table fail here,
# instead of the demo quoting another model's BLEU. Also checks the table's shape.
# usage: demo_quality_test.sh SOURCE_DIR
set -euo pipefail
dir=$1/examples/translation
table=$dir/quality.tsv
want=$(awk -F'\t' '/^# model_sha256/ { print $2 }' "$table")
have=$(sha256sum "$dir/model.safetensors" | cut -d' ' -f1)
if [[ "$want" != "$have" ]]; then
  echo "quality.tsv was measured for weights with SHA-256 $want; model.safetensors is $have." >&2
  echo "Rerun: /usr/bin/python3 tools/train/bleu_table.py --quality $table" >&2
  exit 1
fi
rows=$(awk -F'\t' '!/^#/ && NF == 5 && $2 > 0 && $3 ~ /^[0-9.]+$/ { n++ } END { print n + 0 }' "$table")
if [[ "$rows" -lt 3 ]]; then
  echo "quality.tsv: expected a row (set, sentences, BLEU, chrF, loops) per test set, found $rows" >&2
  exit 1
fi
# the judged everyday sentences the demo counts belong to the weights as well
judged=$dir/testset/everyday_short.tsv
if [[ -f "$judged" ]]; then
  want=$(awk -F'\t' '/^# model_sha256/ { print $2 }' "$judged")
  if [[ "$want" != "$have" ]]; then
    echo "testset/everyday_short.tsv was judged for weights with SHA-256 $want; model.safetensors is $have." >&2
    echo "Translate testset/everyday_short.de with the new weights and judge them again (MODEL_CARD.md)." >&2
    exit 1
  fi
  judged_rows=$(awk -F'\t' '!/^#/ && NF >= 6 && ($4 == "accept" || $4 == "reject") { n++ } END { print n + 0 }' "$judged")
  if [[ "$judged_rows" -ne $(wc -l <"$dir/testset/everyday_short.de") ]]; then
    echo "testset/everyday_short.tsv: expected a judged row per sentence of everyday_short.de, found $judged_rows" >&2
    exit 1
  fi
fi
echo "quality.tsv: $rows test sets, measured for model.safetensors ($have)"
