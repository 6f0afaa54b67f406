#!/usr/bin/env bash
# `tern convert` + `tern generate --prompt` for every language-model family tern converts (issue
# 15's "done when"): each family's parity fixture (tests/fixtures/checkpoints/FAMILY, whose math
# the converter tests check against PyTorch) with its vocabulary resized to a real-sized tokenizer
# fixture (tests/tools/resize_lm_vocab.py), the family's kind of tokenizer beside it: SentencePiece
# tokenizer.model for LLaMA 2 / TinyLlama / Mistral / Gemma, byte-level BPE tokenizer.json for
# LLaMA 3, SmolLM and Qwen2. Per family: convert --arch auto takes the tokenizer and says so, the
# prompt's ids carry the family's BOS (or none), the text path generates exactly what the id path
# generates from the same prompt ids, and the streamed text is --json's.
# usage: generate_families_cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
set -uo pipefail
tern_bin=$1
fixtures=$2
shift 2
IFS=';' read -ra emulator <<<"${1:-}"
tern() { "${emulator[@]}" "$tern_bin" "$@"; }
here=$(cd "$(dirname "$0")" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
pass=0
check() {
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else echo "FAILED: $name"; failures=$((failures + 1)); fi
}
json() {  # json FIELD: the field of the JSON object on stdin, as JSON
  python3 -c 'import json, sys; print(json.dumps(json.loads(sys.stdin.read())[sys.argv[1]], ensure_ascii=False))' "$1"
}
same_text() {  # same_text JSON FILE: FILE holds exactly JSON's "text", then a newline
  python3 -c '
import json, sys
data = open(sys.argv[2], "rb").read()
sys.exit(data.decode("utf-8") != json.loads(sys.argv[1])["text"] + "\n")' "$1" "$2"
}
ids_of() { python3 -c 'import json, sys; print(" ".join(map(str, json.loads(sys.argv[1]))))' "$1"; }

spm=$fixtures/tokenizer/spm_llama.model
prompt="Der Bahnhof ist groß."
# family fixture tokenizer vocab BOS ("-": the tokenizer adds none)
while read -r family fixture tokenizer vocab bos; do
  dir=$work/$family
  python3 "$here/resize_lm_vocab.py" "$fixtures/checkpoints/$fixture" "$dir" "$vocab"
  case $tokenizer in
    *.model) cp "$fixtures/tokenizer/$tokenizer" "$dir/tokenizer.model"; taken=$dir/tokenizer.model ;;
    *) cp "$fixtures/tokenizer/$tokenizer/tokenizer.json" "$dir/"; taken=$dir/tokenizer.json ;;
  esac
  notes=$(tern convert "$dir/model.safetensors" --arch auto -o "$dir.tern" 2>&1 >/dev/null)
  check "$family: convert takes its tokenizer" grep -qF "tokenizer: took $taken" <<<"$notes"
  p=$(tern generate -m "$dir.tern" --prompt "$prompt" --max-new-tokens 6 --ignore-eos --json)
  q=$(tern generate -m "$dir.tern" --prompt "$prompt" --max-new-tokens 6 --ignore-eos --json --no-special-tokens)
  with=$(json prompt_ids <<<"$p")
  without=$(json prompt_ids <<<"$q")
  if [ "$bos" = - ]; then
    check "$family: no BOS before the prompt" test "$with" == "$without"
  else
    check "$family: BOS $bos before the prompt" test "$with" == "[$bos, ${without#[}"
  fi
  check "$family: the prompt is more than its specials" test "$without" != "[]"
  r=$(tern generate -m "$dir.tern" --ids "$(ids_of "$with")" --max-new-tokens 6 --ignore-eos --json)
  check "$family: --prompt generates what --ids generates from its ids" \
    test "$(json ids <<<"$p")" == "$(json ids <<<"$r")" -a "$(json log_probs <<<"$p")" == "$(json log_probs <<<"$r")"
  tern generate -m "$dir.tern" --prompt "$prompt" --max-new-tokens 6 --ignore-eos >"$dir.out"
  check "$family: the streamed text is --json's text" same_text "$p" "$dir.out"
done <<EOF_FAMILIES
llama2 llama spm_llama.model 1000 1
tinyllama llama_gqa spm_llama.model 1000 1
llama3 llama3 bpe_llama3 2000 1993
smollm llama_gqa bpe_smollm 1000 -
qwen2 qwen2 bpe_qwen2 1500 -
mistral mistral spm_llama.model 1000 1
gemma gemma spm_llama.model 1000 1
EOF_FAMILIES

echo "generate_families_cli_test: $pass passed, $failures failed"
[ "$failures" -eq 0 ]
