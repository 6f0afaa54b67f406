#!/usr/bin/env bash
# End-to-end test of `tern generate`: convert the GPT-2 fixture (--arch gpt2), continue its
# prompts greedily (the expected ids are PyTorch's greedy continuation stored in the fixture,
# tools/fixtures/make_gpt2_fixture.py) on both backends, sample reproducibly with a seed, and the
# error paths (non-zero exit, one line naming the problem); the LLaMA fixture (--arch llama) too.
# usage: generate_cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
set -uo pipefail
tern_bin=$1
fixtures=$2
shift 2
IFS=';' read -ra emulator <<<"${1:-}"
tern() { "${emulator[@]}" "$tern_bin" "$@"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
pass=0
check() {
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else echo "FAILED: $name"; failures=$((failures + 1)); fi
}

gpt2=$fixtures/checkpoints/gpt2
tern convert "$gpt2/pytorch_model.bin" --arch gpt2 -o "$work/gpt2.tern" --quiet
check "convert --arch gpt2 writes a model" test -s "$work/gpt2.tern"
tern convert "$gpt2/pytorch_model.bin" --arch gpt2 -o "$work/gpt2.i8.tern" --dtype int8 --quiet
check "int8 conversion writes a model" test -s "$work/gpt2.i8.tern"

check "tern --help lists generate" grep -q '^  generate' <<<"$(tern --help)"
check "tern generate --help describes sampling" grep -q -- '--top-p' <<<"$(tern generate --help)"

first="34 34 34 14 29 41 41 39 29 29 38 32"
second="34 26 26 26 40 40 21 26 26 7 26 7"
out=$(tern generate -m "$work/gpt2.tern" --ids "25 33 29 30 34" --max-new-tokens 12)
# --no-mmap reads the model into memory: the same continuation.
check "generate --no-mmap gives the same ids" \
  test "$(tern generate -m "$work/gpt2.tern" --ids "25 33 29 30 34" --max-new-tokens 12 --no-mmap)" == "$out"
check "generate --ids gives PyTorch's greedy continuation" test "$out" == "$first"
out=$(tern generate -m "$work/gpt2.tern" --ids "25 33 29 30 34" --max-new-tokens 12 --backend reference)
check "the reference backend too" test "$out" == "$first"
out=$(printf '25 33 29 30 34\n16 41\n' | tern generate -m "$work/gpt2.tern" --ids - --max-new-tokens 12)
check "--ids -: id prompts from stdin, one per line" test "$out" == "$first"$'\n'"$second"
out=$(tern generate -m "$work/gpt2.tern" --ids "16 41" --max-new-tokens 4 --json)
check "--json has the prompt, the ids and their log-probs" \
  grep -qE '^\{"prompt": \[16, 41\], "ids": \[34, 26, 26, 26\], "log_probs": \[(-[0-9.e-]+, ){3}-[0-9.e-]+\]\}$' <<<"$out"
out=$(tern generate -m "$work/gpt2.tern" --ids "16 41" --max-length 5)
check "--max-length caps prompt + new tokens" test "$out" == "34 26 26"

a=$(tern generate -m "$work/gpt2.tern" --ids "16 41" --max-new-tokens 20 --temperature 1.2 --top-k 20 --top-p 0.9 --seed 7)
b=$(tern generate -m "$work/gpt2.tern" --ids "16 41" --max-new-tokens 20 --temperature 1.2 --top-k 20 --top-p 0.9 --seed 7)
c=$(tern generate -m "$work/gpt2.tern" --ids "16 41" --max-new-tokens 20 --temperature 1.2 --top-k 20 --top-p 0.9 --seed 8 --ignore-eos)
check "a seed reproduces the sampled ids" test -n "$a" -a "$a" == "$b"
check "another seed gives other ids" test "$a" != "$c"
out=$(tern generate -m "$work/gpt2.tern" --ids "16 41" --max-new-tokens 12 --top-k 1 --temperature 3)
check "top-k 1 is greedy" test "$out" == "$second"
out=$(tern generate -m "$work/gpt2.i8.tern" --ids "25 33 29 30 34" --max-new-tokens 12 --ignore-eos)
check "the int8 model generates 12 tokens" test "$(wc -w <<<"$out")" -eq 12

# LLaMA (--arch llama: rotary, RMSNorm, SwiGLU): PyTorch's greedy continuations
# (tools/fixtures/make_llama_fixture.py); the first prompt stops at EOS after 9 tokens.
llama=$fixtures/checkpoints/llama
tern convert "$llama/model.safetensors" --arch llama -o "$work/llama.tern" --quiet
check "convert --arch llama writes a model" test -s "$work/llama.tern"
out=$(printf '1 34 38 21 33 46\n1 23\n' | tern generate -m "$work/llama.tern" --ids - --max-new-tokens 12)
check "llama: PyTorch's greedy continuations" \
  test "$out" == "12 41 16 22 24 34 19 41 35"$'\n'"5 5 25 5 28 5 5 5 5 18 20 41"
out=$(tern generate -m "$work/llama.tern" --ids "1 16 45 5" --max-new-tokens 12 --backend reference)
check "llama: the reference backend too" test "$out" == "22 41 22 5 25 20 41 22 22 22 4 47"

expect_error() {  # expect_error NAME PATTERN COMMAND...
  local name=$1 pattern=$2
  shift 2
  local err
  err=$("$@" 2>&1 >/dev/null)
  local rc=$?
  if [ $rc -eq 0 ]; then echo "FAILED: $name (exit 0)"; failures=$((failures + 1)); return; fi
  if [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -q -- "$pattern" <<<"$err"; then
    echo "FAILED: $name: stderr was: $err"
    failures=$((failures + 1))
    return
  fi
  pass=$((pass + 1))
}
expect_error "a token outside the vocabulary" "token id 99 at 1 is outside the vocabulary" \
  tern generate -m "$work/gpt2.tern" --ids "3 99"
expect_error "a bad top-p" "top_p must be in (0, 1]" tern generate -m "$work/gpt2.tern" --ids "3" --top-p 0
expect_error "not a number" "is not a token id" tern generate -m "$work/gpt2.tern" --ids "3 x"
expect_error "an empty prompt" "the prompt is empty" tern generate -m "$work/gpt2.tern" --ids ""
tern convert "$fixtures/parity/pre_gelu.safetensors" -o "$work/mt.tern" --skip-prefix expected. --quiet
expect_error "a translation model" "is not a decoder-only model" tern generate -m "$work/mt.tern" --ids "3"
expect_error "translate refuses a language model" "tern::Generator" \
  bash -c "echo 3 | $(printf '%q ' "${emulator[@]}" "$tern_bin") translate -m $work/gpt2.tern --ids"

echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
