#!/usr/bin/env bash
# Converts the pre_gelu parity fixture with the tiny tokenizers, then runs the C API test on it.
# usage: c_api_test.sh TERN C_API_TEST FIXTURES [EMULATOR;ARGS]
set -euo pipefail
IFS=';' read -ra emulator <<<"${4:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${emulator[@]}" "$1" convert "$3/parity/pre_gelu.safetensors" -o "$work/m.tern" --skip-prefix expected. \
  --tokenizer "$3/tokenizer/src37.model" --target-tokenizer "$3/tokenizer/tgt41.model" --quiet
"${emulator[@]}" "$2" "$work/m.tern"
