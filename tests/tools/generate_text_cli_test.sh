#!/usr/bin/env bash
# End-to-end test of `tern generate` with text prompts: a GPT-2 checkpoint with the bpe_gpt2
# tokenizer.json beside it and a LLaMA checkpoint with the spm_llama SentencePiece
# tokenizer.model (both written by tests/tools/make_lm_checkpoint.py, converted by the CLI,
# which says which tokenizer it took). Checks --prompt, stdin prompts, --json (text, ids,
# log-probs equal to the id path's), streaming equal to --json's text, stop strings, EOS and
# --ignore-eos, BOS from the tokenizer (and --no-special-tokens), output that is always valid
# UTF-8, and the error paths.
# usage: generate_text_cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
set -uo pipefail
tern_bin=$1
fixtures=$2
shift 2
IFS=';' read -ra emulator <<<"${1:-}"
tern() { "${emulator[@]}" "$tern_bin" "$@"; }
here=$(cd "$(dirname "$0")" && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
pass=0
check() {
  local name=$1
  shift
  if "$@"; then pass=$((pass + 1)); else echo "FAILED: $name"; failures=$((failures + 1)); fi
}
expect_error() {  # expect_error NAME STATUS PATTERN COMMAND...
  local name=$1 status=$2 pattern=$3
  shift 3
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne "$status" ] || [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -qF -- "$pattern" <<<"$err"; then
    echo "FAILED: $name (exit $rc): $err"
    failures=$((failures + 1))
    return
  fi
  pass=$((pass + 1))
}
json() {  # json FIELD: the field of the JSON object on stdin, as JSON
  python3 -c 'import json, sys; print(json.dumps(json.loads(sys.stdin.read())[sys.argv[1]], ensure_ascii=False))' "$1"
}
# same_text JSON FILE: FILE holds exactly the "text" of the JSON object, then a newline, and is
# valid UTF-8 (files and python: the text may hold NUL bytes, which bash drops).
same_text() {
  python3 -c '
import json, sys
data = open(sys.argv[2], "rb").read()
sys.exit(data.decode("utf-8") != json.loads(sys.argv[1])["text"] + "\n")' "$1" "$2"
}
valid_utf8() { python3 -c 'import sys; sys.stdin.buffer.read().decode("utf-8")'; }

# --- byte-level BPE (tokenizer.json beside a GPT-2 checkpoint)
python3 "$here/make_lm_checkpoint.py" gpt2 "$work/gpt2" 1500
cp "$fixtures/tokenizer/bpe_gpt2/tokenizer.json" "$work/gpt2/"
tern convert "$work/gpt2/model.safetensors" --arch gpt2 -o "$work/gpt2.tern" --quiet
m=$work/gpt2.tern

j=$(tern generate -m "$m" --prompt "Der Bahnhof" --max-new-tokens 16 --ignore-eos --json)
check "--json has prompt, prompt_ids, text, ids, log_probs, finish" python3 -c '
import json, sys
o = json.loads(sys.argv[1])
assert list(o) == ["prompt", "prompt_ids", "text", "ids", "log_probs", "finish"], list(o)
assert o["prompt"] == "Der Bahnhof" and len(o["ids"]) == 16 and len(o["log_probs"]) == 16
assert all(p <= 0 for p in o["log_probs"]) and o["finish"] == "length"' "$j"
prompt_ids=$(json prompt_ids <<<"$j" | tr -d '[],')
ids=$(json ids <<<"$j")
# The id path with the prompt's ids: the same ids and log-probs.
k=$(tern generate -m "$m" --ids "$prompt_ids" --max-new-tokens 16 --ignore-eos --json)
check "text and id prompts give the same ids" test "$(json ids <<<"$k")" == "$ids"
check "and the same log-probs" test "$(json log_probs <<<"$k")" == "$(json log_probs <<<"$j")"
# Streaming prints exactly --json's text, then a newline; always valid UTF-8.
tern generate -m "$m" --prompt "Der Bahnhof" --max-new-tokens 16 --ignore-eos >"$work/out"
check "the streamed text is --json's text, valid UTF-8" same_text "$j" "$work/out"
tern generate -m "$m" --prompt "日本語 🙂" --max-new-tokens 30 --ignore-eos >"$work/out"
check "a CJK prompt's output is valid UTF-8 too" valid_utf8 <"$work/out"

# Prompts on stdin, one per line: one JSON object (or output line) each.
out=$(printf 'Der Bahnhof\nHello world\n' | tern generate -m "$m" --max-new-tokens 16 --ignore-eos --json)
check "stdin: one result per line" test "$(wc -l <<<"$out")" -eq 2
check "stdin: the first line's result equals --prompt's" test "$(head -n 1 <<<"$out")" == "$j"
check "stdin: the second line is its own prompt" test "$(tail -n 1 <<<"$out" | json prompt)" == '"Hello world"'

# Stop strings: three characters of the text after its start; what precedes them is printed.
# (Three characters without NUL or backslash, so the shell can pass them.)
stop=$(python3 -c '
import json, sys
t = json.loads(sys.argv[1])["text"]
for i in range(2, len(t) - 3):
    if "\0" not in t[i:i + 3] and "\\" not in t[i:i + 3]:
        sys.stdout.write(t[i:i + 3])
        break' "$j")
check "a stop string was found in the text" test -n "$stop"
s=$(tern generate -m "$m" --prompt "Der Bahnhof" --max-new-tokens 16 --ignore-eos --stop "$stop" --json)
check "--stop: the text ends before the stop string" python3 -c '
import json, sys
t, s, stop = json.loads(sys.argv[1])["text"], json.loads(sys.argv[2])["text"], sys.argv[3]
sys.exit(s != t[:t.find(stop)])' "$j" "$s" "$stop"
check "--stop: finish is stop" test "$(json finish <<<"$s")" == '"stop"'
tern generate -m "$m" --prompt "Der Bahnhof" --max-new-tokens 16 --ignore-eos --stop "$stop" --stop "zzzz" >"$work/out"
check "--stop: streamed the same, then a newline" same_text "$s" "$work/out"
s=$(tern generate -m "$m" --prompt "Der Bahnhof" --max-new-tokens 16 --ignore-eos --stop "q\\nq" --json)
check "--stop with an escape that never matches: the whole text" \
  test "$(json text <<<"$s")" == "$(json text <<<"$j")"

# EOS: the same weights with EOS = the third new token: generation ends before it.
third=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])[2])' "$ids")
first_two=$(python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[:2]))' "$ids")
python3 "$here/make_lm_checkpoint.py" gpt2 "$work/gpt2eos" 1500 "$third"
cp "$fixtures/tokenizer/bpe_gpt2/tokenizer.json" "$work/gpt2eos/"
tern convert "$work/gpt2eos/model.safetensors" --arch gpt2 -o "$work/eos.tern" --quiet
if python3 -c 'import json, sys; ids = json.loads(sys.argv[1]); sys.exit(ids[2] in ids[:2])' "$ids"; then
  e=$(tern generate -m "$work/eos.tern" --prompt "Der Bahnhof" --max-new-tokens 16 --json)
  check "EOS ends generation, not in the ids" test "$(json ids <<<"$e")" == "$first_two"
  check "EOS: finish is eos" test "$(json finish <<<"$e")" == '"eos"'
  e=$(tern generate -m "$work/eos.tern" --prompt "Der Bahnhof" --max-new-tokens 16 --ignore-eos --json)
  check "--ignore-eos goes on" test "$(json ids <<<"$e")" == "$ids"
else
  echo "FAILED: the third token repeats an earlier one; pick another prompt"
  failures=$((failures + 1))
fi

# --- SentencePiece (tokenizer.model beside a LLaMA checkpoint; a tokenizer.json there too)
python3 "$here/make_lm_checkpoint.py" llama "$work/llama" 1000
cp "$fixtures/tokenizer/spm_llama.model" "$work/llama/tokenizer.model"
cp "$fixtures/tokenizer/bpe_gpt2/tokenizer.json" "$work/llama/"
notes=$(tern convert "$work/llama/model.safetensors" --arch llama -o "$work/llama.tern" 2>&1 >/dev/null)
check "convert says it took tokenizer.model, not tokenizer.json" \
  grep -qF "tokenizer: took $work/llama/tokenizer.model: SentencePiece, 1000 pieces, BOS 1 added before a prompt ($work/llama/tokenizer.json not used)" <<<"$notes"
check "inspect shows the SentencePiece tokenizer" grep -q "tokenizer: SentencePiece" <<<"$(tern inspect "$work/llama.tern")"
p=$(tern generate -m "$work/llama.tern" --prompt "Der Bahnhof ꙮ" --max-new-tokens 24 --ignore-eos --json)
check "SentencePiece: BOS, then the pieces (byte pieces for ꙮ)" \
  test "$(json prompt_ids <<<"$p")" == "[1, 345, 259, 354, 712, 718, 709, 718, 511, 706, 237, 156, 177]"
q=$(tern generate -m "$work/llama.tern" --prompt "Der Bahnhof ꙮ" --max-new-tokens 24 --ignore-eos --json --no-special-tokens)
check "--no-special-tokens: no BOS" \
  test "$(json prompt_ids <<<"$q")" == "[345, 259, 354, 712, 718, 709, 718, 511, 706, 237, 156, 177]"
tern generate -m "$work/llama.tern" --prompt "Der Bahnhof ꙮ" --max-new-tokens 24 --ignore-eos >"$work/out"
check "SentencePiece: the streamed text is --json's text, valid UTF-8" same_text "$p" "$work/out"
tern convert "$work/llama/model.safetensors" --arch llama -o "$work/bare.tern" --no-tokenizer --quiet
expect_error "--no-tokenizer: no text prompts" 1 "has no tokenizer" \
  tern generate -m "$work/bare.tern" --prompt "x"
tern convert "$work/llama/model.safetensors" --arch llama -o "$work/named.tern" --quiet \
  --tokenizer "$fixtures/tokenizer/spm_llama.model"
check "--tokenizer X.model names it" \
  test "$(tern generate -m "$work/named.tern" --prompt "Der Bahnhof ꙮ" --max-new-tokens 24 --ignore-eos --json)" == "$p"

# --- errors
expect_error "--prompt and --ids" 2 "give --prompt or --ids, not both" \
  tern generate -m "$m" --prompt "x" --ids "3"
expect_error "--stop with --ids" 2 "are for text prompts" tern generate -m "$m" --ids "3" --stop x
expect_error "an empty --stop" 2 "--stop needs a non-empty string" tern generate -m "$m" --prompt x --stop ""
expect_error "an unknown escape" 2 'unknown escape \q' tern generate -m "$m" --prompt x --stop '\q'
expect_error "a prompt longer than --max-length" 1 "--prompt:" \
  tern generate -m "$m" --prompt "$(printf 'word %.0s' {1..40})" --max-length 8
expect_error "invalid UTF-8 in a prompt" 1 "not valid UTF-8" \
  tern generate -m "$m" --prompt "$(printf 'a\xff')"
out=$(printf 'ok\n\xff\nok\n' | tern generate -m "$m" --max-new-tokens 2 --json 2>"$work/err")
check "stdin: a bad line is an error line and an empty output line; the rest go on" \
  test "$(wc -l <<<"$out")" -eq 3 -a -z "$(sed -n 2p <<<"$out")" -a "$(wc -l <"$work/err")" -eq 1

echo "$pass passed, $failures failed"
[ "$failures" -eq 0 ]
