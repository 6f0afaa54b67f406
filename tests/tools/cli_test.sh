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

# Length-sorted, token-budget batching (--batch with --buffer / --batch-tokens): every line's
# translation is the one-by-one translation, in the input's order, long lines split in pieces
# that end up in different batches included.
lines=$'22 10 24 29 28 26 2\n9 5 26 2\n\n7 7 7 7 7 7 7 7 7 7 7 2\n3 2\n11 12 13 14 15 16 17 2\n5 2\n8 9 10 11 2\n21 22 23 24 25 26 27 28 29 2\n2\n14 4 2'
one=$(tern translate -m "$work/m.tern" --ids --max-length 12 --max-source 6 --long split <<<"$lines")
sorted=$(tern translate -m "$work/m.tern" --ids --max-length 12 --max-source 6 --long split --batch 4 --batch-tokens 12 <<<"$lines")
check "sorted, token-budget batches give the one-by-one translations in input order" test "$sorted" == "$one"
small=$(tern translate -m "$work/m.tern" --ids --max-length 12 --max-source 6 --long split --batch 3 --buffer 4 <<<"$lines")
check "a small read-ahead buffer too" test "$small" == "$one"
check "11 input lines give 11 output lines" test "$(wc -l <<<"$sorted")" -eq 11
# Line 9 splits into "21..25 EOS" and "26..29 EOS" (5 tokens + EOS each): its output is theirs,
# joined in order, though the shorter second piece is translated in an earlier batch.
first=$(tern translate -m "$work/m.tern" --ids --max-length 12 <<<"21 22 23 24 25 2")
second=$(tern translate -m "$work/m.tern" --ids --max-length 12 <<<"26 27 28 29 2")
check "a split line's pieces are joined in order" test "$(sed -n 9p <<<"$sorted")" == "$first $second"
# A target-token budget (--target-tokens): batches end before sentences x decoder steps (here
# ceil(1.0 x source) + 5, at most 12) exceed 24; each line's translation is still its own.
ratio_one=$(tern translate -m "$work/m.tern" --ids --max-length 12 --max-source 6 --long split --max-length-ratio 1 <<<"$lines")
ratio_budget=$(tern translate -m "$work/m.tern" --ids --max-length 12 --max-source 6 --long split --max-length-ratio 1 --batch 4 --target-tokens 24 <<<"$lines")
check "target-token budget batches give the one-by-one translations in input order" test "$ratio_budget" == "$ratio_one"
check "... which --max-length-ratio shortened" test "$ratio_one" != "$one"
err=$(tern translate -m "$work/m.tern" --ids --max-length 12 --batch 4 --target-tokens 11 <<<"3 2" 2>&1 >/dev/null; echo "rc=$?")
check "--target-tokens below --max-length is a usage error" grep -q 'target-tokens must be 0 (off) or at least --max-length (12), got 11' <<<"$err"
check "... with exit status 2" grep -q 'rc=2' <<<"$err"
inspect_budget=$(tern inspect "$work/m.tern" --batch 16 --max-source 8 --max-length 32 --target-tokens 64)
inspect_full=$(tern inspect "$work/m.tern" --batch 16 --max-source 8 --max-length 32)
budget_bytes=$(sed -n 's/^arena for .*, 64 target tokens: \([0-9]*\) bytes$/\1/p' <<<"$inspect_budget")
full_bytes=$(sed -n 's/^arena for batch 16, beam 1, source 8, target 32: \([0-9]*\) bytes$/\1/p' <<<"$inspect_full")
check "inspect --target-tokens plans a smaller arena" test "${budget_bytes:-0}" -gt 0 -a "${budget_bytes:-0}" -lt "${full_bytes:-0}"
# Workers (--workers: sessions on threads sharing one packed copy of the weights): the same
# lines, in the same order, failed lines included.
workers=$(tern translate -m "$work/m.tern" --ids --max-length 12 --max-source 6 --long split --batch 2 --workers 3 --buffer 11 <<<"$lines")
check "--workers 3 gives the one-by-one translations in input order" test "$workers" == "$one"
workers_bad=$(printf '22 10 2\n99 2\n9 5 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --workers 2 2>"$work/workers.err")
check "--workers: a bad line fails alone, named by its line" grep -q 'line 2: ' "$work/workers.err"
check "... and the others are translated" test "$(sed -n 3p <<<"$workers_bad")" == "$(tern translate -m "$work/m.tern" --ids --max-length 12 <<<"9 5 26 2")"
err=$(tern translate -m "$work/m.tern" --ids --workers 0 <<<"3 2" 2>&1 >/dev/null; echo "rc=$?")
check "--workers 0 is a usage error" grep -q 'rc=2' <<<"$err"
err=$(tern translate -m "$work/m.tern" --ids --max-source 6 --batch 4 --batch-tokens 5 <<<"3 2" 2>&1 >/dev/null; echo "rc=$?")
check "--batch-tokens below --max-source is a usage error" grep -q 'batch-tokens must be 0 (off) or at least --max-source (6), got 5' <<<"$err"
check "... with exit status 2" grep -q 'rc=2' <<<"$err"
# fp16 K/V caches: a usage error for another value; the same ids as fp32 caches on this model
# (its margins are far above fp16's rounding).
err=$(tern translate -m "$work/m.tern" --ids --kv-cache fp8 <<<"3 2" 2>&1 >/dev/null; echo "rc=$?")
check "--kv-cache fp8 is a usage error naming the flag and value" \
  grep -q 'option --kv-cache must be fp32 or fp16, got "fp8"' <<<"$err"
check "--kv-cache fp8 exits 2" grep -q 'rc=2' <<<"$err"
half=$(tern translate -m "$work/m.tern" --ids --max-length 12 --batch 4 --kv-cache fp16 <<<"$lines")
full=$(tern translate -m "$work/m.tern" --ids --max-length 12 --batch 4 <<<"$lines")
check "--kv-cache fp16 translates as fp32 caches here" test "$half" == "$full"

beam=$(printf '22 10 24 29 28 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --beam 4 --n-best 3)
check "--n-best 3 prints three hypotheses" test "$(grep -o ' ||| ' <<<"$beam" | wc -l)" -eq 2
json=$(printf '22 10 24 29 28 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --json)
check "--json carries the ids and both scores, named" grep -q '"ids": \[35, 30, 26, 30, 35, 30\], "log_prob": -[0-9.]*, "normalized_score": -[0-9.]*, "scored_tokens": 7' <<<"$json"
# Greedy: normalized_score = log_prob / scored_tokens^1 (7 = 6 ids + EOS); beam: the runtime's
# normalized score, and log_prob recovered from it (checked against greedy's beam-1 path below).
scores_ok() {  # scores_ok JSON ALPHA: every translation's normalized_score = log_prob / n^ALPHA
  python3 -c '
import json, sys
alpha = float(sys.argv[1])
for line in sys.stdin:
    for t in json.loads(line)["translations"]:
        want = t["log_prob"] / t["scored_tokens"] ** alpha if alpha else t["log_prob"]
        assert abs(t["normalized_score"] - want) < 1e-3 * max(1, abs(want)), t
' "$2" <<<"$1"
}
check "greedy --json: normalized_score is log_prob / length" scores_ok "$json" 1
beam_json=$(printf '22 10 24 29 28 26 2\n9 5 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --beam 4 --n-best 2 --json)
check "beam --json: normalized_score is log_prob / length" scores_ok "$beam_json" 1
beam_json=$(printf '22 10 24 29 28 26 2\n' | tern translate -m "$work/m.tern" --ids --max-length 12 --beam 4 --length-penalty 0.5 --json)
check "beam --json with --length-penalty 0.5" scores_ok "$beam_json" 0.5

inspect=$(tern inspect "$work/m.tern")
check "inspect shows the config" grep -q '"d_model" *24\|d_model *24' <<<"$inspect"
check "inspect shows a tensor" grep -q 'decoder.layers.2.fc2.weight' <<<"$inspect"
check "inspect shows the arena size" grep -q 'arena for batch 1, beam 1, source ' <<<"$inspect"
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
expect_error "a .tern model given to convert says so" "m.tern: looks like a .tern model (already converted), not a checkpoint" \
  tern convert "$work/m.tern" -o "$work/again.tern"
expect_error "bad id in input" "line 1" sh -c "echo '1 x 2' | \"\$0\" \"\$@\"" "${emulator[@]}" "$tern_bin" translate -m "$work/m.tern" --ids
expect_error "out-of-vocabulary id" "outside the vocabulary" sh -c "echo '1 999 2' | \"\$0\" \"\$@\"" "${emulator[@]}" "$tern_bin" translate -m "$work/m.tern" --ids
expect_error "unknown option" "unknown option" tern translate -m "$work/m.tern" --idz
expect_error "--n-best above --beam is a usage error" "n-best" tern translate -m "$work/m.tern" --ids --n-best 2

# Usage errors: exit 2, one line naming the flag, before any input is read; values are never
# wrapped into 32 bits (4294967297 is not 1).
expect_usage() {  # expect_usage NAME MESSAGE COMMAND...
  local name=$1 message=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 </dev/null >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -qF -- "$message" <<<"$err"; then
    echo "FAILED: $name (exit $rc, wanted 2): $err"
    failures=$((failures + 1))
    return
  fi
  pass=$((pass + 1))
}
m=$work/m.tern
expect_usage "--beam 257" "option --beam must be between 1 and 256, got 257" tern translate -m "$m" --ids --beam 257
expect_usage "--beam 4294967297 is refused, not wrapped" "option --beam must be between 1 and 256, got 4294967297" tern translate -m "$m" --ids --beam 4294967297
expect_usage "--batch 0" "option --batch must be between 1 and 4096, got 0" tern translate -m "$m" --ids --batch 0
expect_usage "--threads 1000" "option --threads must be between 1 and 256, got 1000" tern translate -m "$m" --ids --threads 1000
expect_usage "--max-length beyond max_positions" "option --max-length must be between 1 and " tern translate -m "$m" --ids --max-length 100000000
expect_usage "--repetition-penalty 0 names its flag" "option --repetition-penalty must be > 0 (1: off), got 0" tern translate -m "$m" --ids --repetition-penalty 0
expect_usage "--length-penalty nan" "option --length-penalty needs a finite number, got \"nan\"" tern translate -m "$m" --ids --length-penalty nan
expect_usage "--max-length-ratio -1" "option --max-length-ratio must be >= 0 (0: off), got -1" tern translate -m "$m" --ids --max-length-ratio -1
expect_usage "--min-length -1" "option --min-length must be between 0 and 2147483647, got -1" tern translate -m "$m" --ids --min-length -1
expect_usage "--no-repeat-ngram -2" "option --no-repeat-ngram must be between 0 and 2147483647, got -2" tern translate -m "$m" --ids --no-repeat-ngram -2
expect_usage "--backend bogus" "option --backend must be auto, xnnpack or reference, got \"bogus\"" tern translate -m "$m" --ids --backend bogus
expect_usage "two input files" "expected at most one INPUT file" tern translate -m "$m" --ids a b
expect_usage "inspect --beam 257" "option --beam must be between 1 and 256, got 257" tern inspect "$m" --beam 257
expect_usage "inspect --batch 5000" "option --batch must be between 1 and 4096, got 5000" tern inspect "$m" --batch 5000
inspect_beam=$(tern inspect "$m" --beam 4 --batch 2 --max-source 16 --max-length 16)
check "inspect takes --beam and --batch" grep -q 'arena for batch 2, beam 4, source 16, target 16: [0-9]* bytes' <<<"$inspect_beam"
check "inspect's default limits are translate's: min(256, max_positions)" \
  test "$(tern inspect "$m" --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["limits"]["max_source_length"] == min(256, j["config"]["max_positions"]))')" == True

# --no-mmap reads the model into memory: the same output; a fifo is refused there too.
check "translate --no-mmap gives the same ids" \
  test "$(printf '22 10 24 29 28 26 2\n\n9 5 26 2\n' | tern translate -m "$m" --ids --max-length 12 --no-mmap)" == "$expected"
check "inspect --no-mmap" eval 'tern inspect "$m" --no-mmap | grep -q "arena for batch 1"'
mkfifo "$work/model.fifo"
expect_error "--no-mmap refuses a fifo" "model.fifo is not a regular file" \
  timeout 20 "${emulator[@]}" "$tern_bin" inspect "$work/model.fifo" --no-mmap

# A positional INPUT file is read, like stdin.
printf '22 10 24 29 28 26 2\n\n9 5 26 2\n' >"$work/in.ids"
check "translate reads a named INPUT file" test "$(tern translate -m "$m" --ids --max-length 12 "$work/in.ids")" == "$expected"
expect_error "a missing INPUT file" "none.ids: cannot open (No such file or directory)" tern translate -m "$m" --ids "$work/none.ids"

# One bad line never ends the run: every good line is translated, every bad one reported with
# its real line number (and an empty output line, so outputs stay aligned), at any --batch.
good1='22 10 24 29 28 26 2' good3='9 5 26 2'
want1=$(printf '%s\n' "$good1" | tern translate -m "$m" --ids --max-length 12)
want3=$(printf '%s\n' "$good3" | tern translate -m "$m" --ids --max-length 12)
for batch in 1 2 4; do
  out=$(printf '%s\n9000 2\n%s\n1 x 2\n%s\n' "$good1" "$good3" "$good1" |
    tern translate -m "$m" --ids --max-length 12 --batch "$batch" 2>"$work/err"; echo "rc=$?")
  check "--batch $batch: exit 1 after bad lines" test "$(tail -n 1 <<<"$out")" == "rc=1"
  check "--batch $batch: every good line translated" \
    test "$(sed -n '1p;3p;5p' <<<"$out")" == "$(printf '%s\n%s\n%s' "$want1" "$want3" "$want1")"
  check "--batch $batch: bad lines give empty output lines" test -z "$(sed -n '2p;4p' <<<"$out")"
  check "--batch $batch: line 2 reported as line 2" \
    grep -qx 'tern translate: line 2: source token id 9000 at 0 is outside the vocabulary \[0, 37)' "$work/err"
  check "--batch $batch: line 4 reported as line 4" grep -qx 'tern translate: line 4: "x" is not a token id' "$work/err"
  check "--batch $batch: exactly two messages" test "$(wc -l <"$work/err")" -eq 2
done
long_out=$(printf '%s\n%s\n' "$good1" "$good3" | tern translate -m "$m" --ids --max-length 12 --max-source 5 --batch 2 2>"$work/err"; echo "rc=$?")
check "a too-long line fails alone" test "$(sed -n 2p <<<"$long_out")" == "$want3"
check "a too-long line is named" grep -qx 'tern translate: line 1: 7 tokens; --max-source is 5 (or use --long split)' "$work/err"

# Write errors on stdout are errors: exit 1 with a message, for every command.
full_rc() { "$@" >/dev/full 2>"$work/err"; echo $?; }
if [ -w /dev/full ]; then
  check "translate > /dev/full exits 1" test "$(printf '%s\n' "$good1" | full_rc tern translate -m "$m" --ids --max-length 12)" -eq 1
  check "translate > /dev/full names the reason" grep -qx 'tern translate: cannot write to stdout: No space left on device' "$work/err"
  check "inspect > /dev/full exits 1" test "$(full_rc tern inspect "$m")" -eq 1
  check "inspect > /dev/full names the reason" grep -qx 'tern inspect: cannot write to stdout: No space left on device' "$work/err"
  check "inspect --json > /dev/full exits 1" test "$(full_rc tern inspect "$m" --json)" -eq 1
  check "--version > /dev/full exits 1" test "$(full_rc tern --version)" -eq 1
fi

# An arena larger than the memory this process may have is refused before it is allocated,
# with both sizes. ulimit -v cannot apply to a sanitizer build (ASan reserves terabytes of
# shadow memory) or to qemu-user, so this part runs in the native, unsanitized builds.
if [ -z "${TERN_SANITIZED:-}" ] && [ ${#emulator[@]} -eq 0 ]; then
  arena_err=$( (ulimit -v 2000000 && printf '%s\n' "$good1" | "$tern_bin" translate -m "$m" --ids --batch 4096 --beam 64) 2>&1 >/dev/null; echo "rc=$?")
  check "a huge arena: exit 1" grep -q 'rc=1' <<<"$arena_err"
  check "a huge arena: the message gives the size and the limit" \
    grep -q '^tern translate: the arena needs [0-9]* bytes, more than this machine.s limit of 2048000000 bytes (RLIMIT_AS (ulimit -v)); lower --batch' <<<"$arena_err"
fi
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
# --json is valid JSON whatever the input: invalid UTF-8 in "source" becomes U+FFFD.
bad_json=$(printf 'abc\n\xc3\x28 \xff\xfe\n' | tern translate -m "$work/t.tern" --max-length 12 --json 2>/dev/null)
check "--json with invalid UTF-8 parses" python3 -c '
import json, sys
lines = sys.stdin.read().splitlines()
assert len(lines) == 2, lines
second = json.loads(lines[1])
assert second["source"] == "\ufffd( \ufffd\ufffd", second
assert "error" in second and "translations" not in second
assert json.loads(lines[0])["translations"]' <<<"$bad_json"
expect_error "text mode without a tokenizer says how to fix it" "convert with --tokenizer" sh -c "echo hi | \"\$0\" \"\$@\"" "${emulator[@]}" "$tern_bin" translate -m "$work/m.tern"

echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
