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

# tokenizer_config.json beside the checkpoint (converter/tokenizer/prompt_specials.h): the
# prompt's ids are BEFORE + the text's + AFTER. Per case: a family above, its tokenizer_config.
same_ids() {  # same_ids WITH WITHOUT BEFORE AFTER: WITH == BEFORE + WITHOUT + AFTER
  python3 -c 'import json, sys
w, wo, b, a = (json.loads(x) for x in sys.argv[1:])
sys.exit(w != b + wo + a)' "$@"
}
while read -r name base before after config; do
  dir=$work/specials_$name
  cp -r "$work/$base" "$dir"
  # The same command without the config first (its options are in the file's metadata).
  tern convert "$dir/model.safetensors" --arch auto -o "$dir.tern" 2>/dev/null && mv "$dir.tern" "$dir.plain"
  printf '%s\n' "$config" >"$dir/tokenizer_config.json"
  notes=$(tern convert "$dir/model.safetensors" --arch auto -o "$dir.tern" 2>&1 >/dev/null)
  p=$(tern generate -m "$dir.tern" --prompt "$prompt" --max-new-tokens 6 --ignore-eos --json)
  q=$(tern generate -m "$dir.tern" --prompt "$prompt" --max-new-tokens 6 --ignore-eos --json --no-special-tokens)
  check "$name: the prompt is $before + its text + $after" \
    same_ids "$(json prompt_ids <<<"$p")" "$(json prompt_ids <<<"$q")" "$before" "$after"
  r=$(tern generate -m "$dir.tern" --ids "$(ids_of "$(json prompt_ids <<<"$p")")" --max-new-tokens 6 --ignore-eos --json)
  check "$name: --prompt generates what --ids generates from its ids" \
    test "$(json ids <<<"$p")" == "$(json ids <<<"$r")"
  case $name in
    llama2_no_bos_eos)
      check "$name: convert says what the config changed" \
        grep -qF "add_bos_token false, add_eos_token true: a prompt gets no BOS before and EOS after (format 1.10)" <<<"$notes"
      check "$name: convert says what a prompt gets" grep -qF "pieces, EOS 2 added after a prompt" <<<"$notes"
      check "$name: inspect shows it" grep -qF "a prompt gets no BOS before and EOS after (format 1.10)" <<<"$(tern inspect "$dir.tern")" ;;
    llama2_default)
      # The default said out loud: the file is byte for byte the one without the config.
      check "$name: the same file as without tokenizer_config.json" cmp -s "$dir.tern" "$dir.plain" ;;
    llama3_fast)
      check "$name: convert says it replaced the post-processor's" \
        grep -qF "replaces the post-processor's [1993] before and [] after a text with [] and [1994]" <<<"$notes" ;;
  esac
done <<'EOF_SPECIALS'
llama2_no_bos_eos llama2 [] [2] {"tokenizer_class": "LlamaTokenizer", "add_bos_token": false, "add_eos_token": true, "bos_token": "<s>", "eos_token": "</s>"}
llama2_default llama2 [1] [] {"tokenizer_class": "LlamaTokenizer", "add_bos_token": true, "bos_token": {"__type": "AddedToken", "content": "<s>"}}
gemma_eos gemma [1] [2] {"tokenizer_class": "GemmaTokenizer", "add_eos_token": true}
llama3_fast llama3 [] [1994] {"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true, "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
smollm_agrees smollm [] [] {"tokenizer_class": "GPT2Tokenizer", "add_bos_token": false, "bos_token": "<|endoftext|>"}
EOF_SPECIALS

# A config that disagrees with a class's post-processor is refused, and no file is written.
dir=$work/specials_refused
cp -r "$work/smollm" "$dir"
echo '{"tokenizer_class": "GPT2Tokenizer", "add_bos_token": true, "bos_token": "<|endoftext|>"}' >"$dir/tokenizer_config.json"
err=$(tern convert "$dir/model.safetensors" --arch auto -o "$dir.tern" 2>&1 >/dev/null)
check "a disagreeing add_bos_token is refused by name" \
  grep -qF "$dir/tokenizer_config.json: add_bos_token is true, but $dir/tokenizer.json's post-processor puts [] before a text (bos_token \"<|endoftext|>\" is id 0)" <<<"$err"
check "no file after the refusal" test ! -e "$dir.tern"

echo "generate_families_cli_test: $pass passed, $failures failed"
[ "$failures" -eq 0 ]
