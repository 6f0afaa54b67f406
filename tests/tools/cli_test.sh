#!/usr/bin/env bash
# End-to-end test of the tern CLI: convert a parity fixture, inspect it, translate ids (the
# expected ids are PyTorch's greedy output stored in the fixture), and the error paths:
# each must exit non-zero with a one-line message naming the problem.
# usage: cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
set -uo pipefail
tern_bin=$1
fixtures=$2
shift 2
IFS=';' read -ra emulator <<<"${1:-}"  # CMake passes the emulator as a ;-list
tern() { "${emulator[@]}" "$tern_bin" "$@"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
pass=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else echo "FAILED: $name"; failures=$((failures + 1)); fi
}

fixture=$fixtures/parity/pre_gelu.safetensors
tern convert "$fixture" -o "$work/m.tern" --skip-prefix expected. --quiet
check "convert writes a model" test -s "$work/m.tern"

out=$(printf '22 10 24 29 28 26 2\n\n9 5 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12)
expected=$'35 30 26 30 35 30\n\n30 30 25 30 25 30 25 30 25 30 25 30'
check "translate --ids gives PyTorch's greedy ids (empty line passes through)" test "$out" == "$expected"

out_batch=$(printf '22 10 24 29 28 26 2\n\n9 5 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --batch 2)
check "batched translate equals one by one" test "$out_batch" == "$expected"

beam=$(printf '22 10 24 29 28 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --beam 4 --n-best 3)
check "--n-best 3 prints three hypotheses" test "$(grep -o ' ||| ' <<<"$beam" | wc -l)" -eq 2
json=$(printf '22 10 24 29 28 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --json)
check "--json carries the ids and a score" grep -q '"ids": \[35, 30, 26, 30, 35, 30\], "score": -' <<<"$json"

inspect=$(tern inspect "$work/m.tern")
check "inspect shows the config" grep -q '"d_model" *24\|d_model *24' <<<"$inspect"
check "inspect shows a tensor" grep -q 'decoder.layers.2.fc2.weight' <<<"$inspect"
check "inspect shows the arena size" grep -q 'arena for batch 1' <<<"$inspect"
check "inspect records the source digest" grep -q 'sha256:' <<<"$inspect"
json=$(tern inspect "$work/m.tern" --json)
check "inspect --json has required_arena_bytes" grep -q '"required_arena_bytes"' <<<"$json"

# Error paths: non-zero exit and one line on stderr that names the problem.
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
expect_error "convert refuses to overwrite" "exists" tern convert "$fixture" -o "$work/m.tern" --skip-prefix expected. --quiet
expect_error "convert names an unexpected tensor" 'unexpected tensor "expected.' tern convert "$fixture" -o "$work/x.tern" --quiet
check "a failed convert leaves no file" test ! -e "$work/x.tern"
head -c 1000 "$work/m.tern" >"$work/cut.tern"
expect_error "truncated model" "truncated" tern inspect "$work/cut.tern"
expect_error "missing model file" "cannot open" tern inspect "$work/none.tern"
expect_error "bad id in input" "line 1" sh -c "echo '1 x 2' | \"\$0\" \"\$@\"" "${emulator[@]}" "$tern_bin" translate -m "$work/m.tern" --ids
expect_error "out-of-vocabulary id" "outside the vocabulary" sh -c "echo '1 999 2' | \"\$0\" \"\$@\"" "${emulator[@]}" "$tern_bin" translate -m "$work/m.tern" --ids
expect_error "unknown option" "unknown option" tern translate -m "$work/m.tern" --idz
expect_error "--n-best above --beam is a usage error" "n-best" tern translate -m "$work/m.tern" --ids --n-best 2
expect_error "unknown command" "unknown command" tern frobnicate
check "--help exits 0" eval 'tern translate --help >/dev/null'
check "--version exits 0" eval 'tern --version >/dev/null'

# Text mode with the tokenizers embedded at conversion.
tern convert "$fixture" -o "$work/t.tern" --skip-prefix expected. --quiet \
  --tokenizer "$fixtures/tokenizer/src37.model" --target-tokenizer "$fixtures/tokenizer/tgt41.model"
text=$(printf 'hello\n\nabc\n' | tern translate -m "$work/t.tern" --max-length 12)
check "text mode: one output line per input line" test "$(wc -l <<<"$text")" -eq 3
check "text mode: the empty line stays empty" test -z "$(sed -n 2p <<<"$text")"
bad_utf8=$(printf 'abc\n\xc3\x28\nabc\n' | tern translate -m "$work/t.tern" --max-length 12 2>"$work/err"; echo "rc=$?")
check "invalid UTF-8: exit 1, other lines still translated" grep -q 'rc=1' <<<"$bad_utf8"
check "invalid UTF-8: the message names the line and byte" grep -q 'line 2: input is not valid UTF-8 (byte 0)' "$work/err"
check "invalid UTF-8: outputs stay aligned" test "$(sed -n 1p <<<"$bad_utf8")" == "$(sed -n 3p <<<"$bad_utf8")"
long=$(printf 'abcdefghijklmnopqrstuvwxyz\n' | tern translate -m "$work/t.tern" --max-source 8 --max-length 6 2>&1; echo "rc=$?")
check "a long line is an error by default" grep -q 'line 1: [0-9]* tokens; --max-source is 8' <<<"$long"
split=$(printf 'abcdefghijklmnopqrstuvwxyz\n' | tern translate -m "$work/t.tern" --max-source 8 --max-length 6 --long split 2>&1; echo "rc=$?")
check "--long split translates it in pieces" grep -q 'rc=0' <<<"$split"
expect_error "text mode without a tokenizer says how to fix it" "convert with --tokenizer" sh -c "echo hi | \"\$0\" \"\$@\"" "${emulator[@]}" "$tern_bin" translate -m "$work/m.tern"

echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
