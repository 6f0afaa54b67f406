#!/usr/bin/env bash
# End-to-end test of `tern convert` on the architecture fixtures: each --arch through the CLI,
# mixed precision, the quality report, --quiet, and error paths (one line on stderr, exit 1;
# usage errors exit 2). Registered in tests/CMakeLists.txt as
#   add_test(NAME "cli: convert architectures"
#            COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/converter/convert_cli_test.sh $<TARGET_FILE:tern>
#                    ${TERN_FIXTURES} "${CMAKE_CROSSCOMPILING_EMULATOR}")
# usage: convert_cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
set -uo pipefail
tern_bin=$1
all_fixtures=$2
fixtures=$2/checkpoints
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
expect_error() {  # expect_error NAME CODE PATTERN COMMAND...
  local name=$1 code=$2 pattern=$3
  shift 3
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne "$code" ]; then echo "FAILED: $name (exit $rc, wanted $code): $err"; failures=$((failures + 1)); return; fi
  if [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -qF -- "$pattern" <<<"$err"; then
    echo "FAILED: $name: stderr was: $err"
    failures=$((failures + 1))
    return
  fi
  pass=$((pass + 1))
}

# Each architecture through the CLI; the converted model translates.
tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/marian.tern" --quiet 2>"$work/err"
check "marian converts" test -s "$work/marian.tern"
check "--quiet prints nothing" test ! -s "$work/err"
tern convert "$fixtures/marian/sharded/model.safetensors.index.json" --arch marian -o "$work/sharded.tern" --quiet
check "sharded marian converts" test -s "$work/sharded.tern"
tern convert "$fixtures/nn_transformer/model.pt" --arch nn_transformer --map "$fixtures/nn_transformer/map.json" \
  -o "$work/nn.tern" --dtype int8 --quiet
check "nn_transformer converts to int8" test -s "$work/nn.tern"
tern convert "$fixtures/annotated/model.pt" --arch annotated --set heads=2 -o "$work/ann.tern" --dtype int4 --quiet
check "annotated converts to int4" test -s "$work/ann.tern"
out=$(printf '5 9 12 0\n' | tern translate -m "$work/marian.tern" --ids --max-length 10)
check "the marian model translates" test -n "$out"

notes=$(tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/notes.tern" 2>&1 >/dev/null)
check "notes name the verified position table" grep -q "verified and dropped model.encoder.embed_positions.weight" <<<"$notes"
check "notes name the tied lm_head" grep -q "dropped lm_head.weight: tied to model.shared.weight" <<<"$notes"

# Mixed precision, visible in inspect --json.
tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/mixed.tern" --dtype int8 \
  --keep fp16:decoder.layers.*.fc2.weight --keep fp32:encoder.embed_tokens.weight --quiet
json=$(tern inspect "$work/mixed.tern" --json)
check "--keep fp16 applied" grep -q '"f16"' <<<"$(grep -A1 '"decoder.layers.1.fc2.weight"' <<<"$json")"
check "--keep fp32 applied" grep -q '"f32"' <<<"$(grep -A1 '"encoder.embed_tokens.weight"' <<<"$json")"
check "the rest is int8" grep -q '"i8"' <<<"$(grep -A1 '"decoder.layers.1.fc1.weight"' <<<"$json")"
check "inspect --json has required_arena_bytes" grep -q '"required_arena_bytes"' <<<"$json"
tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/auto.tern" --dtype int4 --group-size 8 \
  --auto-budget 40% --quiet
check "--auto-budget converts" test -s "$work/auto.tern"

# Quality report with references.
printf '5 9 12 0\n3 0\n17 4 4 8 2 0\n' >"$work/src.txt"
printf '6 6 4\n2 2\n8 8 8 8\n' >"$work/ref.txt"
report=$(tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/q.tern" --dtype int8 --quiet \
  --report "$work/src.txt" --references "$work/ref.txt" --max-length 10)
check "report: agreement" grep -q "token agreement" <<<"$report"
check "report: logit error" grep -q "max |logit error|" <<<"$report"
check "report: BLEU" grep -q "BLEU-4 on ids vs references: fp32" <<<"$report"

# Quality report on text: sources and references encoded with the embedded tokenizers.
printf 'hello world\n\nabc\n' >"$work/src.de"
printf 'hallo welt\n\nabd\n' >"$work/ref.en"
report=$(tern convert "$all_fixtures/parity/pre_gelu.safetensors" --skip-prefix expected. -o "$work/qt.tern" \
  --dtype int8 --quiet --tokenizer "$all_fixtures/tokenizer/src37.model" \
  --target-tokenizer "$all_fixtures/tokenizer/tgt41.model" --report-text "$work/src.de" \
  --references-text "$work/ref.en" --max-length 8)
check "report-text: two sentences (the empty line skipped)" grep -q "fp32, 2 sentences" <<<"$report"
check "report-text: BLEU" grep -q "BLEU-4 on ids vs references: fp32" <<<"$report"
expect_error "report-text without a tokenizer" 2 "--report-text needs the SentencePiece model" \
  tern convert "$all_fixtures/parity/pre_gelu.safetensors" --skip-prefix expected. -o "$work/x.tern" --report-text "$work/src.de"
printf 'ok\n\xc3\x28\n' >"$work/bad.de"
expect_error "report-text: invalid UTF-8 names the file and line" 1 "bad.de:2: " \
  tern convert "$all_fixtures/parity/pre_gelu.safetensors" --skip-prefix expected. -o "$work/x.tern" \
  --tokenizer "$all_fixtures/tokenizer/src37.model" --target-tokenizer "$all_fixtures/tokenizer/tgt41.model" \
  --report-text "$work/bad.de" --quiet

# Errors: one line, exit 1; usage errors exit 2; no output file left behind.
expect_error "os.system pickle" 1 'pickle global "posix.system"' tern convert "$fixtures/readers/evil.pt" -o "$work/x.tern"
check "no file after a failed convert" test ! -e "$work/x.tern"
expect_error "annotated without heads" 1 "pass --set heads=N" \
  tern convert "$fixtures/annotated/model.pt" --arch annotated -o "$work/x.tern"
expect_error "training checkpoint" 1 "pass --state-key model" tern convert "$fixtures/readers/training.pt" -o "$work/x.tern"
expect_error "keep matching nothing" 1 "matches no weight matrix" \
  tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/x.tern" --dtype int8 --keep fp16:nothing.*
expect_error "bad --keep" 2 "expected DTYPE:PATTERN" \
  tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/x.tern" --keep fp16
expect_error "auto-budget without a floor dtype" 2 "--auto-budget needs" \
  tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/x.tern" --auto-budget 50%
expect_error "unknown arch" 1 'unknown --arch "t5"' tern convert "$fixtures/marian/pytorch_model.bin" --arch t5 -o "$work/x.tern"
expect_error "bad --set" 2 "expected KEY=VALUE" \
  tern convert "$fixtures/annotated/model.pt" --arch annotated --set heads -o "$work/x.tern"
check "convert --help exits 0" eval "tern convert --help >/dev/null"

echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
