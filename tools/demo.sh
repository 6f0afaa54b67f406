#!/usr/bin/env bash
# The main job (`make demo`): convert a checkpoint to .tern and translate with it.
#
# When the trained German->English demo model (examples/translation/) is present, it is
# converted to int8 and translates the sample sentences. Until then, the demo converts the
# small random parity model the tests use and translates a few id sequences, checking them
# against PyTorch's greedy output stored with that model.
# usage: tools/demo.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: tools/demo.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
tern=$build/tools/tern
out=$build/demo
mkdir -p "$out"

demo_model=$root/examples/translation/model.safetensors
if [ -f "$demo_model" ]; then
  echo "== tern demo: German -> English (examples/translation, trained from Debian package data)"
  # The vocabulary shortlist built from the model's training data (docs/shortlist.md): each
  # sentence scores only its candidate target tokens.
  "$tern" convert "$demo_model" -o "$out/de-en.int8.tern" --dtype int8 \
    --tokenizer "$root/examples/translation/spm.model" \
    --shortlist "$root/examples/translation/shortlist.txt" --force --quiet
  "$tern" inspect "$out/de-en.int8.tern" | sed -n '1p;/^shortlist/p;/^arena/p'
  echo
  # samples.de: sentences under "# everyday" / "# software" headers; each is translated greedily
  # and with beam 4.
  samples=$root/examples/translation/samples.de
  sources=$(grep -v '^#' "$samples")
  count=$(wc -l <<<"$sources")
  run() {  # run NAME FLAGS...: translations into $out/NAME.en, wall time in ms on stdout
    local start end
    start=$(date +%s%N)
    "$tern" translate -m "$out/de-en.int8.tern" --max-length 64 "${@:2}" <<<"$sources" >"$out/$1.en"
    end=$(date +%s%N)
    echo $(((end - start) / 1000000))
  }
  greedy_ms=$(run greedy)
  beam_ms=$(run beam4 --beam 4)
  awk -v greedy="$out/greedy.en" -v beam="$out/beam4.en" '
    /^#/ { sub(/^# */, ""); print "-- " $0; next }
    { getline g <greedy; getline b <beam
      print "  " $0; print "      greedy -> " g; print "      beam 4 -> " b }' "$samples"
  echo
  echo "$count sentences, int8, one thread (process start, load and prepare included):" \
    "greedy $greedy_ms ms, beam 4 $beam_ms ms"
  # How good the weights are, measured on held-out test sets (tools/train/bleu_table.py
  # --quality), so that the samples above are not the only evidence.
  quality=$root/examples/translation/quality.tsv
  if [ -f "$quality" ]; then
    echo
    echo "Quality of these weights (int8 without the shortlist, greedy, held-out test sets; BLEU and chrF 0-100;"
    echo "the shortlist changes 2.5-6.5% of outputs and BLEU by under 0.1: docs/benchmarks.md):"
    awk -F'\t' '!/^#/ { printf "  %-10s %5s sentences  BLEU %6s  chrF %6s  outputs with a repeated-word loop: %s\n", $1, $2, $3, $4, $5 }' "$quality"
    want=$(awk -F'\t' '/^# model_sha256/ { print $2 }' "$quality")
    if [ "$want" != "$(sha256sum "$demo_model" | cut -d' ' -f1)" ]; then
      echo "  (measured for other weights than model.safetensors: rerun tools/train/bleu_table.py --quality)"
    fi
    # The everyday sentences a user types first: judged one by one (testset/everyday_short.tsv).
    judged=$root/examples/translation/testset/everyday_short.tsv
    if [ -f "$judged" ]; then
      awk -F'\t' '!/^#/ { n++; if ($4 == "accept") a++ } END {
        printf "  Short everyday sentences (testset/everyday_short.tsv): %d of %d greedy translations acceptable\n", a, n }' "$judged"
      if [ "$(awk -F'\t' '/^# model_sha256/ { print $2 }' "$judged")" != "$(sha256sum "$demo_model" | cut -d' ' -f1)" ]; then
        echo "  (judged for other weights than model.safetensors)"
      fi
    fi
    echo "  A small demo model (6+3 layers, d384) trained for 9 minutes on one accelerator, on" \
      "dictionary entries and software/game texts (examples/translation/MODEL_CARD.md): about" \
      "a third of short everyday sentences come out wrong, as some above do."
  fi
  echo "Try it yourself: $tern translate -m $out/de-en.int8.tern"
  exit 0
fi

fixture=$root/tests/fixtures/parity/pre_gelu.safetensors
echo "== tern demo: a small random encoder-decoder (pre-LN, GELU, 1+3 layers, d_model 24)"
echo "   checkpoint: ${fixture#$root/}"
"$tern" convert "$fixture" -o "$out/pre_gelu.tern" --skip-prefix expected. --force --quiet
"$tern" inspect "$out/pre_gelu.tern" | sed -n '1p;/^arena/p'
echo
echo "== translate --ids (source ids, EOS=2, in; generated ids out)"
input=$'22 10 24 29 28 26 2\n9 5 26 2\n2'
expected=$'35 30 26 30 35 30\n30 30 25 30 25 30 25 30 25 30 25 30\n30 26 30 30 30 30 30 26 30 26 30 30'
start=$(date +%s%N)
got=$("$tern" translate -m "$out/pre_gelu.tern" --ids --max-length 12 <<<"$input")
end=$(date +%s%N)
paste -d'|' <(echo "$input") <(echo "$got") | sed 's/|/   ->   /'
echo
if [ "$got" == "$expected" ]; then
  echo "identical to PyTorch's greedy output for the same checkpoint"
else
  echo "MISMATCH with PyTorch's greedy output:" >&2
  echo "$expected" >&2
  exit 1
fi
echo "3 sentences in $(((end - start) / 1000000)) ms (process start, load and prepare included)"
