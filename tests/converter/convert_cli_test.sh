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
# OpenNMT-py: token ids as its vocab lists number them, sources without </s>.
tern convert "$fixtures/opennmt_rel/model.pt" --arch opennmt -o "$work/onmt.tern" --quiet
out=$(printf '12 17 11 10 18 7\n5 6 7\n6\n' | tern translate -m "$work/onmt.tern" --ids --max-length 10 --batch 3)
check "opennmt translates ids as its PyTorch reference" test "$out" = "14 26 18 10 14 5 10 14 5 6
10 26 14 24 14 14 14 12 14 12
10 18 17 5 18"
out=$(printf '5 9 12 0\n' | tern translate -m "$work/marian.tern" --ids --max-length 10)
check "the marian model translates" test -n "$out"
# NLLB: [src_lang] tokens </s> in, eng_Latn (98) forced first: the fixture's PyTorch greedy ids.
tern convert "$fixtures/nllb/model.safetensors" --arch auto -o "$work/nllb.tern" --quiet
check "nllb converts (--arch auto)" test -s "$work/nllb.tern"
out=$(printf '97 73 14 22 95 44 2\n99 94 69 2\n' | tern translate -m "$work/nllb.tern" --ids --forced-bos 98 --max-length 11 --batch 2)
check "nllb translates with the target language forced" test "$out" = "7 7 45 45 45 45 45 45 45 45
45 45 45 45 65 65 65 65 65 65"
out=$(printf '73 14 22 95 44 2\n94 69 2\n' | tern translate -m "$work/nllb.tern" --ids --source-lang deu_Latn --target-lang eng_Latn --max-length 11)
check "nllb translates with --source-lang / --target-lang" test "$out" = "7 7 45 45 45 45 45 45 45 45
$(printf '97 94 69 2\n' | tern translate -m "$work/nllb.tern" --ids --forced-bos 98 --max-length 11)"
expect_error "an unknown --target-lang names the nearest codes" 2 \
  'option --target-lang: unknown language code "eng_latn"; nearest known: eng_Latn, deu_Latn, fra_Latn' \
  tern translate -m "$work/nllb.tern" --ids --target-lang eng_latn
check "inspect lists the languages" grep -q "languages (4; --source-lang / --target-lang CODE): deu_Latn=97 eng_Latn=98 fra_Latn=99 spa_Latn=100" <<<"$(tern inspect "$work/nllb.tern")"
expect_error "--forced-bos outside the vocabulary" 2 "option --forced-bos must be between 0 and 101, got 102" \
  tern translate -m "$work/nllb.tern" --ids --forced-bos 102

# NLLB and M2M100 from text: sentencepiece.bpe.model beside the checkpoint, its ids mapped to the
# model's (NLLB: fairseq's offset rule, M2M100: vocab.json, a shuffled order), the source led by
# its language code, the target's forced: PyTorch's greedy translations decoded
# (tests/fixtures/checkpoints/{nllb,m2m100}/translate.tsv, by make_nllb_text_fixture.py).
notes=$(tern convert "$fixtures/nllb/model.safetensors" --arch nllb -o "$work/nllb_text.tern" 2>&1 >/dev/null)
check "nllb takes the sentencepiece.bpe.model beside it" grep -qF "tokenizer: took $fixtures/nllb/sentencepiece.bpe.model: SentencePiece, 96 pieces, both sides, ids offset as fairseq's dictionary" <<<"$notes"
check "inspect shows the vocabulary map" grep -qF "tokenizer: SentencePiece, 96 pieces mapped to model ids (format 1.8)" <<<"$(tern inspect "$work/nllb_text.tern")"
notes=$(tern convert "$fixtures/m2m100/pytorch_model.bin" --arch m2m100 -o "$work/m2m100_text.tern" 2>&1 >/dev/null)
check "m2m100 takes sentencepiece.bpe.model with vocab.json" grep -qF "tokenizer: took $fixtures/m2m100/sentencepiece.bpe.model: SentencePiece, 96 pieces, both sides, ids from $fixtures/m2m100/vocab.json" <<<"$notes"
for family in nllb m2m100; do
  while IFS=$'\t' read -r src tgt text want; do
    out=$(printf '%s\n' "$text" | tern translate -m "$work/${family}_text.tern" --source-lang "$src" --target-lang "$tgt" --max-length 11)
    check "$family translates \"$text\" ($src -> $tgt) as PyTorch does" test "$out" == "$want"
  done <"$fixtures/$family/translate.tsv"
  # The text path's source ids are the Hugging Face tokenizer's: the same translation from them.
  while IFS=$'\t' read -r src text ids; do
    from_text=$(printf '%s\n' "$text" | tern translate -m "$work/${family}_text.tern" --source-lang "$src" --target-lang "$src" --max-length 11 --json | grep -o '"ids": \[[0-9, ]*\]')
    from_ids=$(printf '%s\n' "${ids#* }" | tern translate -m "$work/${family}_text.tern" --ids --source-lang "$src" --target-lang "$src" --max-length 11 --json | grep -o '"ids": \[[0-9, ]*\]')
    check "$family: \"$text\" gives the ids the Hugging Face tokenizer gives" test "$from_text" == "$from_ids"
  done <"$fixtures/$family/translate_ids.tsv"
done
cp -r "$fixtures/m2m100" "$work/m2m100_novocab" && rm "$work/m2m100_novocab/vocab.json"
expect_error "m2m100 without vocab.json" 1 \
  "$work/m2m100_novocab/sentencepiece.bpe.model: --arch m2m100 numbers the pieces by vocab.json, and $work/m2m100_novocab/vocab.json does not exist (--no-tokenizer converts without a tokenizer)" \
  tern convert "$work/m2m100_novocab/pytorch_model.bin" --arch m2m100 -o "$work/novocab.tern"
check "no output file after the error" test ! -e "$work/novocab.tern"

# T5 from text: the spiece.model beside the checkpoint embedded, task prefixes as plain text, the
# output PyTorch's greedy ids decoded (tests/fixtures/checkpoints/t5/translate.tsv, by
# make_t5_fixture.py).
tern convert "$fixtures/t5/pytorch_model.bin" --arch auto -o "$work/t5.tern" --quiet
check "t5 converts with the spiece.model beside it" test -s "$work/t5.tern"
out=$(cut -f1 "$fixtures/t5/translate.tsv" | tern translate -m "$work/t5.tern" --max-length 10)
check "the t5 model translates text as PyTorch does" test "$out" == "$(cut -f2 "$fixtures/t5/translate.tsv")"
out=$(cut -f1 "$fixtures/t5/translate.tsv" | tern translate -m "$work/t5.tern" --max-length 10 --batch 2)
check "the t5 model translates a batch of text as PyTorch does" test "$out" == "$(cut -f2 "$fixtures/t5/translate.tsv")"

# MarianMT from text: source.spm and target.spm beside the checkpoint, both numbered by the shared
# vocab.json (a map per side, format 1.9): PyTorch's greedy ids and their text through target.spm
# (tests/fixtures/checkpoints/marian/text/translate.tsv, by make_marian_text_fixture.py). The
# target side's pieces are not the source's, so decoding with the source model fails the text.
mkdir "$work/marian_text" && cp "$fixtures/marian/"{config.json,pytorch_model.bin} "$fixtures/marian/text/"{source.spm,target.spm,vocab.json} "$work/marian_text/"
notes=$(tern convert "$work/marian_text/pytorch_model.bin" --arch marian -o "$work/marian_text.tern" 2>&1 >/dev/null)
check "marian takes source.spm and target.spm with vocab.json" grep -qF "tokenizer: took $work/marian_text/source.spm (12 pieces) and $work/marian_text/target.spm (12 pieces): SentencePiece per side, ids from $work/marian_text/vocab.json" <<<"$notes"
check "inspect shows a map per side" grep -qF "tokenizer: SentencePiece per side mapped to model ids (format 1.9): source 12 pieces" <<<"$(tern inspect "$work/marian_text.tern")"
check "the marian text file is format 1.9" grep -qF "format 1.9" <<<"$(tern inspect "$work/marian_text.tern")"
while IFS=$'\t' read -r text want_ids want; do
  out=$(printf '%s\n' "$text" | tern translate -m "$work/marian_text.tern" --max-length 10)
  check "marian translates \"$text\" as PyTorch does" test "$out" == "$want"
  ids=$(printf '%s\n' "$text" | tern translate -m "$work/marian_text.tern" --max-length 10 --json | grep -o '"ids": \[[0-9, ]*\]')
  check "marian's ids for \"$text\" are PyTorch's" test "$ids" == "\"ids\": [$want_ids]"
done <"$fixtures/marian/text/translate.tsv"
cp -r "$work/marian_text" "$work/marian_novocab" && rm "$work/marian_novocab/vocab.json"
expect_error "marian's spm models without vocab.json" 1 \
  "$work/marian_novocab: --arch marian takes source.spm, target.spm and vocab.json together, and $work/marian_novocab/vocab.json does not exist (--no-tokenizer converts without a tokenizer)" \
  tern convert "$work/marian_novocab/pytorch_model.bin" --arch marian -o "$work/novocab.tern"
tern convert "$work/marian_novocab/pytorch_model.bin" --arch marian --no-tokenizer -o "$work/novocab.tern" --quiet
check "--no-tokenizer converts marian without its spm models" test -s "$work/novocab.tern"
mkdir "$work/marian_missing" && cp "$work/marian_text/"* "$work/marian_missing/"
grep -v '"▁fed"' "$work/marian_text/vocab.json" >"$work/marian_missing/vocab.json"
expect_error "a target piece missing from vocab.json" 1 \
  "$work/marian_missing/target.spm: piece \"▁fed\" (id 6) is not in $work/marian_missing/vocab.json" \
  tern convert "$work/marian_missing/pytorch_model.bin" --arch marian -o "$work/missing.tern"
check "no output after a missing piece" test ! -e "$work/missing.tern"

notes=$(tern convert "$fixtures/marian/pytorch_model.bin" --arch marian -o "$work/notes.tern" 2>&1 >/dev/null)
check "notes name the verified position table" grep -q "verified and dropped model.encoder.embed_positions.weight" <<<"$notes"
check "notes name the tied lm_head" grep -q "dropped lm_head.weight: tied to model.shared.weight" <<<"$notes"

# BART takes the tokenizer.json beside it (GPT-2's byte-level BPE, trained by
# tools/tokenizer/train_bpe.py bart) and translates text: "QZ" is <s> Q Z </s> = 0 52 61 2 (no
# merge joins Q and Z), so the text path gives what those ids give, not what Q Z </s> alone does.
notes=$(tern convert "$fixtures/bart/model.safetensors" --arch bart -o "$work/bart.tern" 2>&1 >/dev/null)
check "bart converts" test -s "$work/bart.tern"
check "bart takes the tokenizer.json beside it" grep -qF "tokenizer: took $fixtures/bart/tokenizer.json: byte-level BPE, 300 tokens" <<<"$notes"
text_ids=$(printf 'QZ\n' | tern translate -m "$work/bart.tern" --max-length 8 --json | grep -o '"ids": \[[0-9, ]*\]')
with_specials=$(printf '0 52 61 2\n' | tern translate -m "$work/bart.tern" --ids --max-length 8 --json | grep -o '"ids": \[[0-9, ]*\]')
without=$(printf '52 61 2\n' | tern translate -m "$work/bart.tern" --ids --max-length 8 --json | grep -o '"ids": \[[0-9, ]*\]')
check "bart translates text as <s> ... </s>" test -n "$text_ids" -a "$text_ids" = "$with_specials"
check "the fixture tells <s> ... </s> from the bare ids" test "$with_specials" != "$without"
out=$(printf 'The cat sat on the mat.\n' | tern translate -m "$work/bart.tern" --max-length 8)
check "bart writes text" test -n "$out"
# mBART-50 from text: sentencepiece.bpe.model beside the checkpoint with fairseq's offset rule,
# the language codes of tokenizer_config.json (MBart50Tokenizer), the source [src_lang] X </s>,
# the target code forced after </s>: PyTorch's greedy translations decoded
# (tests/fixtures/checkpoints/mbart/translate.tsv, by make_mbart50_text_fixture.py).
notes=$(tern convert "$fixtures/mbart/pytorch_model.bin" --arch mbart -o "$work/mbart_text.tern" 2>&1 >/dev/null)
check "mbart takes the sentencepiece.bpe.model beside it" grep -qF "tokenizer: took $fixtures/mbart/sentencepiece.bpe.model: SentencePiece, 66 pieces, both sides, ids offset as fairseq's dictionary" <<<"$notes"
check "mbart reads its language codes" grep -qF "52 language codes from $fixtures/mbart/tokenizer_config.json" <<<"$notes"
while IFS=$'\t' read -r src tgt text want_ids want; do
  out=$(printf '%s\n' "$text" | tern translate -m "$work/mbart_text.tern" --source-lang "$src" --target-lang "$tgt" --max-length 10)
  check "mbart translates \"$text\" ($src -> $tgt) as PyTorch does" test "$out" == "$want"
  ids=$(printf '%s\n' "$text" | tern translate -m "$work/mbart_text.tern" --source-lang "$src" --target-lang "$tgt" --max-length 10 --json | grep -o '"ids": \[[0-9, ]*\]')
  check "mbart's ids for \"$text\" ($src -> $tgt) are PyTorch's" test "$ids" == "\"ids\": [$want_ids]"
done <"$fixtures/mbart/translate.tsv"
while IFS=$'\t' read -r src text ids; do
  from_text=$(printf '%s\n' "$text" | tern translate -m "$work/mbart_text.tern" --source-lang "$src" --target-lang "$src" --max-length 11 --json | grep -o '"ids": \[[0-9, ]*\]')
  from_ids=$(printf '%s\n' "${ids#* }" | tern translate -m "$work/mbart_text.tern" --ids --source-lang "$src" --target-lang "$src" --max-length 11 --json | grep -o '"ids": \[[0-9, ]*\]')
  check "mbart: \"$text\" gives the ids the Hugging Face tokenizer gives" test -n "$from_text" -a "$from_text" == "$from_ids"
done <"$fixtures/mbart/translate_ids.tsv"
expect_error "an unknown mBART code names the nearest codes" 2 \
  'option --source-lang: unknown language code "en_US"; nearest known: en_XX, ' \
  tern translate -m "$work/mbart_text.tern" --source-lang en_US --target-lang ro_RO
# Without tokenizer_config.json: fairseq's mBART-50 list after the 66 pieces (120 = 66 + 2 + 52).
mkdir "$work/mbart50_nocfg" && cp "$fixtures/mbart/"{config.json,pytorch_model.bin,sentencepiece.bpe.model} "$work/mbart50_nocfg/"
notes=$(tern convert "$work/mbart50_nocfg/pytorch_model.bin" --arch mbart -o "$work/mbart50_nocfg.tern" 2>&1 >/dev/null)
check "mbart without tokenizer_config.json takes fairseq's list" grep -qF "52 mBART-50 language codes (fairseq's list, ids 67..118; vocab_size 120 = 66 pieces of $work/mbart50_nocfg/sentencepiece.bpe.model + 2 + 52 codes)" <<<"$notes"
check "fairseq's list gives tokenizer_config.json's table" test "$(tern inspect "$work/mbart50_nocfg.tern" | grep '^languages')" == "$(tern inspect "$work/mbart_text.tern" | grep '^languages')"
check "the table has en_XX=70 ro_RO=86" grep -qF " en_XX=70 " <<<"$(tern inspect "$work/mbart_text.tern" | grep '^languages')"
check "the table has ro_RO=86" grep -qF " ro_RO=86 " <<<"$(tern inspect "$work/mbart_text.tern" | grep '^languages')"
# mBART cc25 / en-ro (MBartTokenizer: source X </s> [src_lang], decoding from the target code):
# its text path is refused; ids convert with --no-tokenizer.
mkdir "$work/mbart_cc25" && cp "$fixtures/mbart/"{config.json,pytorch_model.bin,sentencepiece.bpe.model} "$work/mbart_cc25/"
sed 's/"MBart50Tokenizer"/"MBartTokenizer"/' "$fixtures/mbart/tokenizer_config.json" >"$work/mbart_cc25/tokenizer_config.json"
expect_error "mbart cc25's tokenizer is refused" 1 \
  "$work/mbart_cc25/sentencepiece.bpe.model: $work/mbart_cc25/tokenizer_config.json: tokenizer_class MBartTokenizer is mBART cc25's convention (source X </s> [src_lang_code], decoding from the target code), which tern translate does not apply (it takes mBART-50's [src_lang_code] X </s>); convert with --no-tokenizer and translate with --ids" \
  tern convert "$work/mbart_cc25/pytorch_model.bin" --arch mbart -o "$work/cc25.tern"
check "no cc25 output after the refusal" test ! -e "$work/cc25.tern"
tern convert "$work/mbart_cc25/pytorch_model.bin" --arch mbart --no-tokenizer -o "$work/cc25.tern" --quiet
check "cc25 converts with --no-tokenizer, no language table" test -s "$work/cc25.tern" -a -z "$(tern inspect "$work/cc25.tern" | grep '^languages')"
check "cc25 translates ids" test -n "$(printf '5 9 12 2\n' | tern translate -m "$work/cc25.tern" --ids --max-length 10)"
# (cc25 told by the piece count, without tokenizer_config.json: tests/converter/architectures/
# language_codes_test.cc.)
tern convert "$fixtures/mbart/pytorch_model.bin" --arch mbart --no-tokenizer -o "$work/mbart.tern" --quiet
out=$(printf '5 9 12 2\n' | tern translate -m "$work/mbart.tern" --ids --max-length 10)
check "the mbart model translates ids" test -n "$out"
tern convert "$fixtures/mbart/pytorch_model.bin" --arch mbart --tokenizer "$all_fixtures/tokenizer/src37.model" -o "$work/mbart_spm.tern" --quiet
check "mbart takes a named SentencePiece model (--tokenizer) with the offset rule" grep -qF "tokenizer: SentencePiece, 37 pieces mapped to model ids (format 1.8)" <<<"$(tern inspect "$work/mbart_spm.tern")"
# mBART-50's target language: a token forced first (--forced-bos), the decoder's input after the
# start token; not printed.
out=$(printf '5 9 12 2\n' | tern translate -m "$work/mbart.tern" --ids --max-length 10 --forced-bos 119)
plain=$(printf '5 9 12 2\n' | tern translate -m "$work/mbart.tern" --ids --max-length 10)
check "--forced-bos changes the translation and is not printed" \
  test "${out%% *}" != 119 -a -n "$out" -a "$out" != "$plain"
expect_error "--forced-bos outside the vocabulary" 2 "option --forced-bos must be between 0 and 119, got 120" \
  tern translate -m "$work/mbart.tern" --ids --forced-bos 120

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
expect_error "unknown arch" 1 'unknown --arch "xlnet"' tern convert "$fixtures/marian/pytorch_model.bin" --arch xlnet -o "$work/x.tern"
expect_error "bad --set" 2 "expected KEY=VALUE" \
  tern convert "$fixtures/annotated/model.pt" --arch annotated --set heads -o "$work/x.tern"
check "convert --help exits 0" eval "tern convert --help >/dev/null"
check "convert --help lists t5 and mt5" grep -q "t5 (Hugging Face T5 v1.0 / v1.1" <<<"$(tern convert --help)"
check "convert --help lists mt5" grep -q "mt5 (mT5: the T5 layout)" <<<"$(tern convert --help)"
check "convert --help lists m2m100 and nllb" grep -q "m2m100 and nllb" <<<"$(tern convert --help)"
check "convert --help lists fairseq" grep -q "fairseq (fairseq" <<<"$(tern convert --help)"
# A fairseq training checkpoint (meters and optimizer state beside the weights) converts from
# the command line with --arch fairseq alone (the state key "model" is its default).
# One dictionary + sentencepiece.bpe.model beside: stored with its dict.txt map, so text works.
notes=$(tern convert "$fixtures/fairseq_cfg/checkpoint_best.pt" --arch fairseq -o "$work/fairseq_cfg.tern" 2>&1 >/dev/null)
check "convert --arch fairseq with its SentencePiece model" grep -qF "tokenizer: took $fixtures/fairseq_cfg/sentencepiece.bpe.model: SentencePiece, 96 pieces, both sides, ids from $fixtures/fairseq_cfg/dict.de.txt" <<<"$notes"
check "translate text with the fairseq model" test -n "$(echo 'hallo welt' | tern translate -m "$work/fairseq_cfg.tern")"
check "convert --arch fairseq" eval "tern convert '$fixtures/fairseq/checkpoint_best.pt' --arch fairseq -o '$work/fairseq.tern' >/dev/null 2>&1"

# Outputs (converter/output_file.h): never in place, never a device, never the input; a symlink's
# target is replaced; exclusive creation without --force; errors carry the reason.
pre=$all_fixtures/parity/pre_gelu.safetensors
conv() { tern convert "$pre" --skip-prefix expected. --quiet "$@"; }
out_dir=$work/out
mkdir "$out_dir"
expect_error "-o '' is a usage error" 2 "--output is empty" conv -o ''
expect_error "a device as output is refused, even with --force" 1 \
  "/dev/full exists and is not a regular file (a device, fifo or directory); refusing to replace it" conv -o /dev/full --force
check "the device is still a character device" test -c /dev/full
cp "$pre" "$out_dir/in.safetensors"
expect_error "the input as output is refused, even with --force" 1 \
  "$out_dir/in.safetensors is the input file $out_dir/in.safetensors; refusing to overwrite it" \
  tern convert "$out_dir/in.safetensors" --skip-prefix expected. --quiet -o "$out_dir/in.safetensors" --force
ln "$out_dir/in.safetensors" "$out_dir/hardlink"
expect_error "a hard link to the input is the input" 1 "is the input file" \
  tern convert "$out_dir/in.safetensors" --skip-prefix expected. --quiet -o "$out_dir/hardlink" --force
check "the input is unchanged" cmp -s "$pre" "$out_dir/in.safetensors"
rm "$out_dir/in.safetensors" "$out_dir/hardlink"
conv -o "$out_dir/v1.tern"
ln -s v1.tern "$out_dir/current.tern"
conv -o "$out_dir/current.tern" --force --dtype int8
check "a symlink output stays a link" test -L "$out_dir/current.tern"
check "its target was replaced (int8 now)" grep -q '"i8"' <<<"$(tern inspect "$out_dir/v1.tern" --json)"
ln -s missing.tern "$out_dir/dangling.tern"
expect_error "a dangling symlink is refused" 1 "a symbolic link whose target cannot be resolved" \
  conv -o "$out_dir/dangling.tern" --force
rm "$out_dir/dangling.tern" "$out_dir/current.tern" "$out_dir/v1.tern"
expect_error "a missing directory" 1 "$out_dir/nodir/x.tern: the directory $out_dir/nodir does not exist" \
  conv -o "$out_dir/nodir/x.tern"
if [ "$(id -u)" -eq 0 ] && [ -d /proc/self ]; then
  expect_error "an unwritable place: the temporary file and the reason" 1 \
    "cannot create the temporary file (No such file or directory)" conv -o /proc/x.tern
fi
# Two concurrent converts to one new path: exactly one writes it, the other says it exists.
conv -o "$out_dir/race.tern" 2>"$work/race1" & p1=$!
conv -o "$out_dir/race.tern" 2>"$work/race2" & p2=$!
wait $p1; r1=$?
wait $p2; r2=$?
check "concurrent converts: exactly one succeeds" test "$((r1 + r2))" -eq 1
check "concurrent converts: the other says the file exists" \
  grep -q "race.tern exists; pass --force to overwrite it" "$work/race1" "$work/race2"
check "concurrent converts: the winner's file loads" eval 'tern inspect "$out_dir/race.tern" >/dev/null'
rm "$out_dir/race.tern"
check "no temporary file is left behind" test -z "$(ls -A "$out_dir")"

# Inputs that are not regular files are refused at once (a fifo would block open() forever).
mkfifo "$work/fifo"
expect_error "inspect refuses a fifo" 1 "fifo is not a regular file (a fifo, device or directory cannot be mapped)" \
  timeout 20 "${emulator[@]}" "$tern_bin" inspect "$work/fifo"
expect_error "convert refuses a fifo" 1 "fifo: not a regular file (a fifo, device or directory cannot be read)" \
  timeout 20 "${emulator[@]}" "$tern_bin" convert "$work/fifo" -o "$work/x.tern"
expect_error "convert refuses a fifo as --config" 1 "fifo: not a regular file" \
  timeout 20 "${emulator[@]}" "$tern_bin" convert "$pre" --skip-prefix expected. --config "$work/fifo" -o "$work/x.tern"

# --tokenizer is loaded (by SentencePiece, or as a tokenizer.json) at convert time: anything
# else is refused, no output.
: >"$work/empty.model"
echo '{"model": "not sentencepiece"}' >"$work/tok.json"
expect_error "an empty tokenizer" 1 "empty.model (--tokenizer): empty file, not a SentencePiece model" \
  conv -o "$work/x.tern" --tokenizer "$work/empty.model"
expect_error "/dev/null as tokenizer" 1 "/dev/null: not a regular file" conv -o "$work/x.tern" --tokenizer /dev/null
# A name ending in .json is a Hugging Face tokenizer.json (docs/tokenizers.md); any other name
# is SentencePiece's.
expect_error "a JSON file that is not a tokenizer.json" 1 "tok.json: model: expected an object, found string" \
  conv -o "$work/x.tern" --tokenizer "$work/tok.json"
cp "$work/tok.json" "$work/tok.model"
expect_error "JSON as a SentencePiece model" 1 "tok.model (--tokenizer): not a SentencePiece model" \
  conv -o "$work/x.tern" --tokenizer "$work/tok.model"
expect_error "an ELF binary as tokenizer" 1 "(--target-tokenizer): not a SentencePiece model" \
  conv -o "$work/x.tern" --tokenizer "$all_fixtures/tokenizer/src37.model" --target-tokenizer "$tern_bin"
expect_error "a tokenizer larger than the vocabulary" 1 \
  "tgt41.model (--tokenizer): 41 pieces, more than the model's src_vocab_size = 37" \
  conv -o "$work/x.tern" --tokenizer "$all_fixtures/tokenizer/tgt41.model" --target-tokenizer "$all_fixtures/tokenizer/tgt41.model"
check "no output after a refused tokenizer" test ! -e "$work/x.tern"

# Every config value is checked against the runtime's bounds before anything is sized from it,
# whatever its source (--set, config.json, safetensors metadata), and the converter's memory
# stays bounded: each hostile value below runs under a 600 MB address-space limit (ulimit -v;
# not in sanitizer builds or under qemu, which reserve more than that for themselves).
limited() {
  if [ -z "${TERN_SANITIZED:-}" ] && [ ${#emulator[@]} -eq 0 ]; then
    (ulimit -v 600000 && exec timeout 60 "$tern_bin" "$@")
  else
    timeout 120 "${emulator[@]}" "$tern_bin" "$@"
  fi
}
check "the fixture converts under the memory limit" limited convert "$pre" --skip-prefix expected. --quiet -o "$work/limited.tern"
for spec in d_model:1:65536 heads:1:65536 encoder_layers:0:1024 decoder_layers:0:1024 d_ff:1:262144 \
  src_vocab_size:0:4194304 tgt_vocab_size:1:4194304 vocab_size:0:4194304 max_positions:1:1048576 \
  universal_steps:0:1024 relative_max_distance:1:1048576 relative_buckets:1:1024 rotary_dim:0:65536 \
  eos_id:0:4194303 pad_id:0:4194303; do
  IFS=: read -r field lo hi <<<"$spec"
  for value in 1000000000 -1 $((hi + 1)); do
    [ "$value" -ge "$lo" ] && [ "$value" -le "$hi" ] && continue
    expect_error "--set $field=$value names the field and the bound" 1 \
      "--set: config \"$field\" = $value is outside the runtime's bounds [$lo, $hi]" \
      limited convert "$pre" --skip-prefix expected. --quiet -o "$work/x.tern" --force --set "$field=$value"
  done
  # At the bound itself: refused by the tensors' shapes (or accepted), within the memory limit.
  limited convert "$pre" --skip-prefix expected. --quiet -o "$work/x.tern" --force --set "$field=$hi" 2>"$work/err"
  rc=$?
  check "--set $field=$hi: a clean result under the memory limit (rc $rc)" test "$rc" -le 1 -a "$(wc -l <"$work/err")" -le 1
  rm -f "$work/x.tern"
done
rm -f "$work/x.tern"
check "max_positions 0 is refused, not turned into 1024" grep -q 'outside the runtime' \
  <<<"$(limited convert "$pre" --skip-prefix expected. --quiet -o "$work/x.tern" --set max_positions=0 2>&1)"
# The same bounds in a config.json given with --config.
printf '{"d_model": 24, "heads": 3, "encoder_layers": 1000000000, "d_ff": 40, "vocab_size": 37}' >"$work/huge.json"
expect_error "config.json: encoder_layers = 10^9 names the file, field and bound" 1 \
  "huge.json: config \"encoder_layers\" = 1000000000 is outside the runtime's bounds [0, 1024]" \
  limited convert "$pre" --skip-prefix expected. --quiet -o "$work/x.tern" --config "$work/huge.json"
check "no output after refused configs" test ! -e "$work/x.tern"

# The vocabulary shortlist (format 1.11, or 1.5 with --shortlist-ids 32): from parallel text, written as text, read back; bad
# corpora and K / F are refused with no output left behind.
sl() {
  tern convert "$pre" --skip-prefix expected. --quiet --tokenizer "$all_fixtures/tokenizer/src37.model" \
    --target-tokenizer "$all_fixtures/tokenizer/tgt41.model" "$@"
}
printf 'hello world\nabc\nhello abc\n' >"$work/sl.de"
printf 'hallo welt\nabd\nhallo abd\n' >"$work/sl.en"
sl -o "$work/sl.tern" --shortlist-corpus "$work/sl.de" "$work/sl.en" --shortlist-k 4 --shortlist-f 2 \
  --write-shortlist "$work/sl.txt"
check "shortlist: the model has it" grep -q "^shortlist: K 4, F 2" <(tern inspect "$work/sl.tern")
check "shortlist: inspect --json" grep -q '"worst_case_rows_per_sentence"' <(tern inspect --json "$work/sl.tern")
check "shortlist: its ids are 16-bit (format 1.11)" grep -q "^shortlist: K 4, F 2, [0-9]* ids of 2 bytes" \
  <(tern inspect "$work/sl.tern")
check "shortlist: its text form" grep -q "^tern-shortlist 2" "$work/sl.txt"
check "shortlist: its text form names the vocabularies" grep -qx "vocab [0-9]* [0-9]*" "$work/sl.txt"
sl -o "$work/sl2.tern" --shortlist "$work/sl.txt" --write-shortlist "$work/sl2.txt"
check "shortlist: read back from text, the same table" cmp -s "$work/sl.txt" "$work/sl2.txt"
check "shortlist: read back from text, the same inspect line" test \
  "$(tern inspect "$work/sl.tern" | grep ^shortlist)" == "$(tern inspect "$work/sl2.tern" | grep ^shortlist)"
check "shortlist: a file without one says so" grep -q "^shortlist: none" <(tern inspect "$work/qt.tern")
sl -o "$work/sl32.tern" --shortlist "$work/sl.txt" --shortlist-ids 32
check "shortlist: --shortlist-ids 32 stores 32-bit ids (format 1.5)" \
  grep -q "^shortlist: K 4, F 2, [0-9]* ids of 4 bytes" <(tern inspect "$work/sl32.tern")
check "shortlist: --shortlist-ids 32 is format 1.5" grep -q "format 1.5," <(tern inspect "$work/sl32.tern")
# Using it: translate with and without (--no-shortlist), and tern bench timing both.
printf 'hello world\nabc\n' >"$work/sl_in.de"
tern translate -m "$work/sl.tern" --max-length 6 --json "$work/sl_in.de" >"$work/sl_on.json"
tern translate -m "$work/sl.tern" --max-length 6 --json --no-shortlist "$work/sl_in.de" >"$work/sl_off.json"
check "shortlist: translate writes a line per source with and without it" test \
  "$(wc -l <"$work/sl_on.json") $(wc -l <"$work/sl_off.json")" == "2 2"
tern translate -m "$work/sl32.tern" --max-length 6 --json "$work/sl_in.de" >"$work/sl32_on.json"
check "shortlist: the 32-bit form translates as the 16-bit one" cmp -s "$work/sl_on.json" "$work/sl32_on.json"
check "shortlist: tern bench times with and without it" grep -q '"no_shortlist_decode_ms_per_token"' \
  <(tern bench -m "$work/sl.tern" --tokens 3 --repeat 1 --warmup 0 --source-length 4 --json)
tern bench -m "$work/sl.tern" --tokens 3 --repeat 1 --warmup 0 --source-length 4 --json \
  --no-shortlist >"$work/sl_bench_off.json"
check "shortlist: tern bench --no-shortlist times the full vocabulary" \
  grep -q '"decode_ms_per_token"' "$work/sl_bench_off.json"
check "shortlist: tern bench --no-shortlist times it once" \
  test "$(grep -c no_shortlist_decode "$work/sl_bench_off.json")" == "0"
printf 'hallo welt\nabd\n' >"$work/short.en"
expect_error "shortlist: line counts differ" 1 "has 3 lines" \
  sl -o "$work/x.tern" --shortlist-corpus "$work/sl.de" "$work/short.en"
: >"$work/empty.de"
: >"$work/empty.en"
expect_error "shortlist: an empty corpus" 1 "shortlist corpus is empty" \
  sl -o "$work/x.tern" --shortlist-corpus "$work/empty.de" "$work/empty.en" --shortlist-k 4 --shortlist-f 2
expect_error "shortlist: K = 0 and F = 0" 2 "--shortlist-k 0 with --shortlist-f 0" \
  sl -o "$work/x.tern" --shortlist-corpus "$work/sl.de" "$work/sl.en" --shortlist-k 0 --shortlist-f 0
expect_error "shortlist: K above the vocabulary" 1 "must not exceed tgt_vocab_size" \
  sl -o "$work/x.tern" --shortlist-corpus "$work/sl.de" "$work/sl.en" --shortlist-k 100000
expect_error "shortlist: F above the vocabulary" 1 "must not exceed tgt_vocab_size" \
  sl -o "$work/x.tern" --shortlist-corpus "$work/sl.de" "$work/sl.en" --shortlist-f 100000
expect_error "shortlist: a corpus needs the tokenizer" 1 "needs the model's SentencePiece tokenizer" \
  conv -o "$work/x.tern" --shortlist-corpus "$work/sl.de" "$work/sl.en"
expect_error "shortlist: -k without a corpus" 2 "--shortlist-k needs --shortlist-corpus" \
  conv -o "$work/x.tern" --shortlist-k 3
expect_error "shortlist: --shortlist-ids other than 16 or 32" 2 "--shortlist-ids must be 16 or 32, not '8'" \
  sl -o "$work/x.tern" --shortlist "$work/sl.txt" --shortlist-ids 8
expect_error "shortlist: --shortlist-ids without a shortlist" 2 "--shortlist-ids needs --shortlist-corpus" \
  conv -o "$work/x.tern" --shortlist-ids 32
printf 'tern-shortlist 1\nk 2\nfrequent 1000\n' >"$work/bad.txt"
expect_error "shortlist: a bad text file names the line" 1 "bad.txt:3: id 1000 is outside" \
  sl -o "$work/x.tern" --shortlist "$work/bad.txt"
sed '2s/^vocab [0-9]* /vocab 7 /' "$work/sl.txt" >"$work/othervocab.txt"
expect_error "shortlist: one built for another vocabulary is refused" 1 \
  "othervocab.txt:2: built for vocabularies of 7 source" sl -o "$work/x.tern" --shortlist "$work/othervocab.txt"
check "no output after refused shortlists" test ! -e "$work/x.tern"

echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
