#!/usr/bin/env bash
# Converts the pre_gelu parity fixture with the tiny tokenizers (and again with a vocabulary
# shortlist), then runs the C API test on them.
# usage: c_api_test.sh TERN C_API_TEST FIXTURES [EMULATOR;ARGS]
set -euo pipefail
IFS=';' read -ra emulator <<<"${4:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${emulator[@]}" "$1" convert "$3/parity/pre_gelu.safetensors" -o "$work/m.tern" --skip-prefix expected. \
  --tokenizer "$3/tokenizer/src37.model" --target-tokenizer "$3/tokenizer/tgt41.model" --quiet
# The same weights with a hand-written shortlist (docs/shortlist.md's text form): frequent token
# 30, source token 22 -> 35.
printf 'tern-shortlist 1\nk 1\nfrequent 30\n22\t35\n' >"$work/sl.txt"
"${emulator[@]}" "$1" convert "$3/parity/pre_gelu.safetensors" -o "$work/sl.tern" --skip-prefix expected. \
  --tokenizer "$3/tokenizer/src37.model" --target-tokenizer "$3/tokenizer/tgt41.model" --quiet \
  --shortlist "$work/sl.txt"
"${emulator[@]}" "$2" "$work/m.tern" "$work/sl.tern"
