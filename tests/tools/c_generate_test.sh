#!/usr/bin/env bash
# Converts the GPT-2 and LLaMA fixtures and the pre_gelu parity fixture with the tern CLI, then
# runs the C generation API test on them.
# usage: c_generate_test.sh TERN C_GENERATE_TEST FIXTURES [EMULATOR;ARGS]
set -euo pipefail
IFS=';' read -ra emulator <<<"${4:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${emulator[@]}" "$1" convert "$3/checkpoints/gpt2/pytorch_model.bin" --arch gpt2 -o "$work/gpt2.tern" --quiet
"${emulator[@]}" "$1" convert "$3/checkpoints/llama/model.safetensors" --arch llama -o "$work/llama.tern" --quiet
"${emulator[@]}" "$1" convert "$3/parity/pre_gelu.safetensors" -o "$work/mt.tern" --skip-prefix expected. --quiet
"${emulator[@]}" "$2" "$work/gpt2.tern" "$work/llama.tern" "$work/mt.tern"
