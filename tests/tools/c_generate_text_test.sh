#!/usr/bin/env bash
# Writes a GPT-2 checkpoint with the bpe_gpt2 tokenizer.json and a LLaMA checkpoint with the
# spm_llama tokenizer.model (tests/tools/make_lm_checkpoint.py), converts them with the tern CLI
# (and the LLaMA one once more without its tokenizer), then runs the C text generation test.
# usage: c_generate_text_test.sh TERN C_GENERATE_TEXT_TEST FIXTURES [EMULATOR;ARGS]
set -euo pipefail
IFS=';' read -ra emulator <<<"${4:-}"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$here/make_lm_checkpoint.py" gpt2 "$work/gpt2" 1500
cp "$3/tokenizer/bpe_gpt2/tokenizer.json" "$work/gpt2/"
python3 "$here/make_lm_checkpoint.py" llama "$work/llama" 1000
cp "$3/tokenizer/spm_llama.model" "$work/llama/tokenizer.model"
"${emulator[@]}" "$1" convert "$work/gpt2/model.safetensors" --arch gpt2 -o "$work/bpe.tern" --quiet
"${emulator[@]}" "$1" convert "$work/llama/model.safetensors" --arch llama -o "$work/spm.tern" --quiet
"${emulator[@]}" "$1" convert "$work/llama/model.safetensors" --arch llama -o "$work/bare.tern" \
  --no-tokenizer --quiet
"${emulator[@]}" "$2" "$work/bpe.tern" "$work/spm.tern" "$work/bare.tern"
