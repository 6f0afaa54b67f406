#!/usr/bin/env bash
# End-to-end test of `tern bench` (not a timing test: it checks what bench reports, not how
# fast): batch 1, --batch 3 and --beam 2 on a parity fixture give a well-formed JSON report with
# the generated ids of every sentence, sentence 0 of a batch equals the batch-1 translation
# (batch invariance), the verification pass agrees with the decoder, and bad flags fail with
# one line naming the flag.
# usage: bench_cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
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
field() {  # field JSON EXPRESSION: a value of the report, computed in python
  python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

tern convert "$fixtures/parity/pre_gelu.safetensors" -o "$work/m.tern" --skip-prefix expected. --quiet
common=(-m "$work/m.tern" --source-length 7 --tokens 6 --repeat 1 --warmup 0 --json)

one=$(tern bench "${common[@]}")
check "batch 1 reports batch 1, beam 1" test "$(field "$one" 'j["batch"], j["beam"]')" == "(1, 1)"
check "batch 1 has 6 ids and the verification's top-5" \
  test "$(field "$one" 'len(j["ids"]), len(j["top5_last"]), "ids_batch" in j')" == "(6, 5, False)"

three=$(tern bench "${common[@]}" --batch 3)
check "--batch 3 reports 3 x 6 ids" test "$(field "$three" 'j["batch"], len(j["ids_batch"])')" == "(3, 18)"
check "sentence 0 of the batch is the batch-1 translation" \
  test "$(field "$three" 'j["ids_batch"][:6]')" == "$(field "$one" 'j["ids"]')"
check "the batch's sentences are different sources" \
  test "$(field "$three" 'j["ids_batch"][:6] != j["ids_batch"][6:12] or j["ids_batch"][6:12] != j["ids_batch"][12:]')" == True
check "tokens/s counts every sentence" \
  test "$(field "$three" 'abs(j["tokens_per_s"] - 3 * 6 * 1000 / j["total_ms"]) < 1e-6 * j["tokens_per_s"]')" == True

beam=$(tern bench "${common[@]}" --beam 2 --batch 2)
check "--beam 2 --batch 2 reports both and 2 x 6 ids" \
  test "$(field "$beam" 'j["batch"], j["beam"], len(j["ids_batch"])')" == "(2, 2, 12)"
ref=$(tern bench "${common[@]}" --batch 3 --backend reference)
check "the reference backend gives the same batch ids" \
  test "$(field "$ref" 'j["ids_batch"]')" == "$(field "$three" 'j["ids_batch"]')"

half=$(tern bench "${common[@]}" --batch 3 --beam 2 --kv-cache fp16)
full=$(tern bench "${common[@]}" --batch 3 --beam 2)
# Here (6 target tokens, 128-token sources planned) the encoder's phase may set the arena's size:
# not larger. Where the caches dominate (batch 16, 64 + 64 tokens), smaller.
check "--kv-cache fp16 is reported, in an arena no larger than fp32's" \
  test "$(field "$half" 'j["kv_cache"], j["arena_bytes"] <= '"$(field "$full" 'j["arena_bytes"]')")" == "('fp16', True)"
arena_of() { tern inspect "$work/m.tern" --batch 16 --max-source 64 --max-length 64 "$@" |
  sed -n 's/^arena for .*: \([0-9]*\) bytes$/\1/p'; }
a32=$(arena_of)
a16=$(arena_of --kv-cache fp16)
check "tern inspect --kv-cache fp16: a smaller arena where the caches dominate" \
  test -n "$a16" -a -n "$a32" -a "${a16:-0}" -lt "${a32:-0}"
check "--kv-cache fp32 is the default" test "$(field "$three" 'j["kv_cache"]')" == fp32
err=$(tern bench "${common[@]}" --kv-cache fp8 2>&1 >/dev/null)
check "--kv-cache fp8 fails naming the flag and the value" grep -q -- 'option --kv-cache must be fp32 or fp16, got "fp8"' <<<"$err"

text=$(tern bench -m "$work/m.tern" --source-length 7 --tokens 6 --repeat 1 --warmup 0 --batch 2)
check "the table names batch and tokens" grep -q 'for 2 x 6 tokens from 7-token sources' <<<"$text"

# --linear: every shape of the model at every --rows count, each weight type on its XNNPACK
# path (a build without XNNPACK says so).
lin=$(tern bench --linear -m "$work/m.tern" --rows 1,3 --repeat 1 --warmup 0 --working-set 0 \
  --json 2>&1)
if grep -q 'this build has no XNNPACK' <<<"$lin"; then
  check "--linear without XNNPACK fails naming it" true
else
  # (and int8 / int4 per row as sessions run them: "int8 session", "int4 session", XNNPACK's
  # operators or, on AVX2-only CPUs, tern's loops where the shape is whole panels of 16 rows,
  # vectorized/linear_sign.h)
  check "--linear reports 4 shapes x 2 row counts x 7 weight types" \
    test "$(field "$lin" 'len(j), sorted({r["rows"] for r in j}), len({(r["n"], r["k"]) for r in j})')" == "(56, [1, 3], 4)"
  check "--linear's session columns take XNNPACK's operators or tern's panels" \
    test "$(field "$lin" '{r["path"] for r in j if r["weights"] in ("int8 session", "int4 session")} <= {"fully_connected_nc_qd8_f32_qc8w", "fully_connected_nc_qd8_f32_qc4w", "AVX2 loops on packed panels (vectorized/linear_sign.h)"}')" == True
  # (int4 per row: tern's integer loops on CPUs where XNNPACK's qc4w kernel is wrong,
  # runtime/kernels/xnnpack/kernel_check.h)
  check "--linear times every call and names each weight type's path" \
    test "$(field "$lin" 'all(r["us"] > 0 for r in j), sorted({(r["weights"], "loops" if r["path"].startswith("integer loops (vectorized/linear_qd8.h, ") else r["path"]) for r in j if r["weights"] in ("f32", "int8", "int4/row")})')" \
      == "(True, [('f32', 'fully_connected_nc_f32'), ('int4/row', 'fully_connected_nc_qd8_f32_qc4w'), ('int8', 'fully_connected_nc_qd8_f32_qc8w')])" -o \
    "$(field "$lin" 'all(r["us"] > 0 for r in j), sorted({(r["weights"], "loops" if r["path"].startswith("integer loops (vectorized/linear_qd8.h, ") else r["path"]) for r in j if r["weights"] in ("f32", "int8", "int4/row")})')" \
      == "(True, [('f32', 'fully_connected_nc_f32'), ('int4/row', 'loops'), ('int8', 'fully_connected_nc_qd8_f32_qc8w')])"
  # int4 in blocks of 32: qb4w, per row where the block is the whole row, tern's integer loops
  # where no block of 32 divides the row (the fixture's rows of 40) or qb4w is not trusted
  check "--linear's int4 blocks take qb4w, qc4w or the integer loops" \
    test "$(field "$lin" '{r["path"] if not r["path"].startswith("integer loops (vectorized/linear_qd8.h, ") else "loops" for r in j if r["weights"] == "int4/block"} <= {"fully_connected_nc_qd8_f32_qb4w", "fully_connected_nc_qd8_f32_qc4w", "loops"}')" == True
  # --weights: only the named columns (the table prints "-" for ratios that lack one)
  some=$(tern bench --linear -m "$work/m.tern" --rows 1 --repeat 1 --warmup 0 --working-set 0 \
    --weights int8,int4-session --json 2>&1)
  check "--linear --weights times only the named weight types" \
    test "$(field "$some" 'len(j), sorted({r["weights"] for r in j})')" == "(8, ['int4 session', 'int8'])"
  table=$(tern bench --linear -m "$work/m.tern" --rows 1 --repeat 1 --warmup 0 --working-set 0 \
    --weights int8,int8-session 2>&1)
  check "--linear --weights' table has the named columns and '-' for the others' ratios" \
    grep -qE '^n x k +M +int8 +int8 session +row/int8' <<<"$table"
  check "--linear --weights' table: sess/int8 a number, row/int8 '-'" \
    grep -qE '^[0-9]+ x [0-9]+ +1 .* - +- +[0-9.]+ +-$' <<<"$table"
  # --split: int8 on 2 threads, XNNPACK's tiling against one operator per thread (it fails if
  # the cut layer's outputs differ from the whole layer's); layers of fewer than 64 rows stay
  # whole (post_relu's feed-forward layer has 64)
  tern convert "$fixtures/parity/post_relu.safetensors" -o "$work/p.tern" --skip-prefix expected. --quiet
  split=$(tern bench --linear --split --threads 2 -m "$work/p.tern" --rows 1,3 --repeat 1 \
    --warmup 0 --working-set 0 --json 2>&1)
  check "--linear --split times every shape and row count three ways, outputs identical" \
    test "$(field "$split" 'len(j), all(r["one_thread_us"] > 0 and r["tiled_us"] > 0 and r["cut_us"] > 0 and r["threads"] == 2 and r["parts"] == (2 if r["n"] >= 64 else 1) for r in j), any(r["parts"] == 2 for r in j)')" == "(8, True, True)"
fi
err=$(tern bench --linear --split 2>&1 >/dev/null)
check "--split on one thread fails naming the flag" grep -q -- '--split needs --threads 2 to 8' <<<"$err"
err=$(tern bench --linear --split --threads 9 2>&1 >/dev/null)
check "--split on 9 threads fails naming the bound" grep -q -- '--split needs --threads 2 to 8' <<<"$err"
err=$(tern bench -m "$work/m.tern" --split 2>&1 >/dev/null)
check "--split without --linear fails naming it" grep -q -- '--split is for --linear' <<<"$err"
err=$(tern bench --linear --rows 1,0 2>&1 >/dev/null)
check "--rows 0 fails naming the flag" grep -q -- '--rows takes a comma-separated list of row counts 1..4096' <<<"$err"
err=$(tern bench --linear --int4-block 40 2>&1 >/dev/null)
check "--int4-block 40 fails naming the flag" grep -q -- '--int4-block must be a multiple of 32' <<<"$err"
err=$(tern bench -m "$work/m.tern" --rows 4 2>&1 >/dev/null)
check "--rows without --linear fails naming it" grep -q -- '--rows is for --linear' <<<"$err"
err=$(tern bench --linear --weights int8,fp8 2>&1 >/dev/null)
check "--weights with an unknown type fails naming the list" \
  grep -q -- '--weights takes a comma-separated list of f32,f16,int8,int4row,int4block,int8-session,int4-session, not "int8,fp8"' <<<"$err"
err=$(tern bench -m "$work/m.tern" --weights int8 2>&1 >/dev/null)
check "--weights without --linear fails naming it" grep -q -- '--weights is for --linear' <<<"$err"
err=$(tern bench --linear --split --threads 2 --weights int8 2>&1 >/dev/null)
check "--weights with --split fails naming both" grep -q -- '--weights is for the table (not --split or --gather)' <<<"$err"
err=$(tern bench --linear --gather 8 --weights int8 2>&1 >/dev/null)
check "--weights with --gather fails naming both" grep -q -- '--weights is for the table (not --split or --gather)' <<<"$err"
err=$(tern bench --linear --weights int8, 2>&1 >/dev/null)
check "--weights with an empty item fails naming the list" grep -q -- 'not "int8,"' <<<"$err"

err=$(tern bench -m "$work/m.tern" --batch 0 2>&1 >/dev/null)
check "--batch 0 fails naming the flag" grep -q -- '--batch and --beam must be >= 1' <<<"$err"

# A language model: prefill and decode of deterministic prompts; the ids are what tern generate
# gives the same prompt, and prompt 0 of a batch is the batch-1 run.
tern convert "$fixtures/checkpoints/mistral/model.safetensors" --arch mistral -o "$work/lm.tern" \
  --quiet
lm=(-m "$work/lm.tern" --prompt-length 7 --tokens 9 --repeat 1 --warmup 0 --json)
lm_one=$(tern bench "${lm[@]}")
check "an LM reports prefill and decode" \
  test "$(field "$lm_one" 'j["prompt_length"], j["tokens"], len(j["ids"]), j["prefill_ms"] > 0, j["decode_ms_per_token"] > 0')" == "(7, 9, 9, True, True)"
prompt_ids=$(field "$lm_one" '" ".join(map(str, j["prompt_ids"]))')
generated=$(tern generate -m "$work/lm.tern" --ids "$prompt_ids" --max-new-tokens 9 --ignore-eos)
check "an LM's ids are tern generate's for its prompt" \
  test "$(field "$lm_one" '" ".join(map(str, j["ids"]))')" == "$generated"
lm_three=$(tern bench "${lm[@]}" --batch 3)
check "prompt 0 of an LM batch is the batch-1 run" \
  test "$(field "$lm_three" 'j["ids_batch"][:9]')" == "$(field "$lm_one" 'j["ids"]')"
check "an LM's decode tokens/s counts every prompt" \
  test "$(field "$lm_three" 'abs(j["decode_tokens_per_s"] - 3 * 1000 / j["decode_ms_per_token"]) < 1e-6 * j["decode_tokens_per_s"]')" == True
err=$(tern bench -m "$work/lm.tern" --beam 2 2>&1 >/dev/null)
check "--beam on an LM fails naming it" grep -q -- '--beam, --source-length and --no-shortlist are for translation models' <<<"$err"
# fp16 K/V caches in a language model: a smaller arena, reported; tern generate takes the flag.
lm_half=$(tern bench "${lm[@]}" --kv-cache fp16)
check "an LM's --kv-cache fp16 is reported, in a smaller arena" \
  test "$(field "$lm_half" 'j["kv_cache"], j["arena_bytes"] < '"$(field "$lm_one" 'j["arena_bytes"]')")" == "('fp16', True)"
check "an LM's --kv-cache fp32 is the default" test "$(field "$lm_one" 'j["kv_cache"]')" == fp32
half_ids=$(tern generate -m "$work/lm.tern" --ids "$prompt_ids" --max-new-tokens 9 --ignore-eos --kv-cache fp16)
check "tern generate --kv-cache fp16 generates" test "$(wc -w <<<"$half_ids")" -eq 9
err=$(tern generate -m "$work/lm.tern" --ids "$prompt_ids" --kv-cache fp8 2>&1 >/dev/null; echo "rc=$?")
check "tern generate --kv-cache fp8 is a usage error naming the flag and value" \
  grep -q -- 'option --kv-cache must be fp32 or fp16, got "fp8".*rc=2' <<<"$(tr '\n' ' ' <<<"$err")"
err=$(tern bench -m "$work/lm.tern" --prompt-length 30 --tokens 16 2>&1 >/dev/null)
check "an LM's prompt + tokens beyond max_positions fails naming it" \
  grep -q -- "--prompt-length + --tokens must be <= the model's max_positions (32)" <<<"$err"
err=$(tern bench "${common[@]}" --prompt-length 4 2>&1 >/dev/null)
check "--prompt-length on a translation model fails naming it" grep -q -- '--prompt-length is for language models' <<<"$err"

echo "$pass passed, $failures failed"
test "$failures" -eq 0
