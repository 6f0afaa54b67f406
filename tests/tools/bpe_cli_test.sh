#!/usr/bin/env bash
# tern convert and tern inspect with a byte-level BPE tokenizer: a Hugging Face GPT-2 checkpoint
# directory (config.json, model.safetensors with random weights, written here by python3) with
# the bpe_gpt2 fixture's tokenizer.json beside it. Convert takes it and says so; inspect shows
# the kind and sizes (text and --json, format 1.4); --no-tokenizer leaves it out (format 1.2);
# an unsupported or too large tokenizer.json is one line on stderr and exit 1, and no output.
# usage: bpe_cli_test.sh TERN_BINARY FIXTURES_DIR [EMULATOR...]
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
expect_error() {  # expect_error NAME PATTERN COMMAND...
  local name=$1 pattern=$2
  shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l <<<"$err")" -ne 1 ] || ! grep -qF -- "$pattern" <<<"$err"; then
    echo "FAILED: $name (exit $rc): $err"
    failures=$((failures + 1))
    return
  fi
  pass=$((pass + 1))
}

# A GPT-2 checkpoint of VOCAB tokens: d 8, 2 heads, 1 layer, 16 positions.
make_checkpoint() {  # make_checkpoint DIR VOCAB
  mkdir -p "$1"
  python3 - "$1" "$2" <<'PY'
import json, math, struct, sys
out, vocab = sys.argv[1], int(sys.argv[2])
d, ff, positions = 8, 32, 16
shapes = {"wte.weight": [vocab, d], "wpe.weight": [positions, d], "ln_f.weight": [d],
          "ln_f.bias": [d], "h.0.ln_1.weight": [d], "h.0.ln_1.bias": [d],
          "h.0.attn.c_attn.weight": [d, 3 * d], "h.0.attn.c_attn.bias": [3 * d],
          "h.0.attn.c_proj.weight": [d, d], "h.0.attn.c_proj.bias": [d],
          "h.0.ln_2.weight": [d], "h.0.ln_2.bias": [d], "h.0.mlp.c_fc.weight": [d, ff],
          "h.0.mlp.c_fc.bias": [ff], "h.0.mlp.c_proj.weight": [ff, d], "h.0.mlp.c_proj.bias": [d]}
header, data, x = {}, b"", 0.0
for name, shape in sorted(shapes.items()):
    n = math.prod(shape)
    values = [0.2 * math.sin(x + 0.37 * i) for i in range(n)]
    x += 1.0
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + 4 * n]}
    data += struct.pack("<%df" % n, *values)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(out + "/model.safetensors", "wb").write(struct.pack("<Q", len(text)) + text + data)
json.dump({"model_type": "gpt2", "vocab_size": vocab, "n_positions": positions, "n_embd": d,
           "n_head": 2, "n_layer": 1, "n_inner": ff, "activation_function": "gelu_new",
           "layer_norm_epsilon": 1e-5, "bos_token_id": vocab - 1, "eos_token_id": vocab - 1,
           "tie_word_embeddings": True}, open(out + "/config.json", "w"))
PY
}

make_checkpoint "$work/gpt2" 1500
cp "$fixtures/tokenizer/bpe_gpt2/tokenizer.json" "$work/gpt2/"
notes=$(tern convert "$work/gpt2/model.safetensors" --arch gpt2 -o "$work/m.tern" 2>&1 >/dev/null)
check "convert writes the model" test -s "$work/m.tern"
check "convert says it took tokenizer.json" \
  grep -qF "note: tokenizer: took $work/gpt2/tokenizer.json: byte-level BPE, 1500 tokens (1 added), 1243 merges, pre-tokenizer Split(GPT-2 pattern)" <<<"$notes"
text=$(tern inspect "$work/m.tern")
check "inspect shows the format version" grep -q "tern model, format 1.4" <<<"$text"
check "inspect shows the kind and sizes" \
  grep -q "^tokenizer: byte-level BPE, 1500 tokens (1 added), 1243 merges, [0-9]* bytes of tokens; pre-tokenizer Split(GPT-2 pattern); adds \[\] before and \[\] after a text$" <<<"$text"
json=$(tern inspect "$work/m.tern" --json)
check "inspect --json: the tokenizer" python3 -c '
import json, sys
t = json.loads(sys.argv[1])["tokenizer"]
assert t["kind"] == "byte-level-bpe" and t["tokens"] == 1500 and t["added_tokens"] == 1, t
assert t["merges"] == 1243 and t["pre_tokenizer"] == ["Split(GPT-2 pattern)"], t
assert t["ignore_merges"] is False and t["source_bytes"] == 0, t
' "$json"
out=$(printf '1 2 3\n' | tern generate -m "$work/m.tern" --ids - --max-new-tokens 2)
check "the model generates" test -n "$out"

tern convert "$work/gpt2/model.safetensors" --arch gpt2 -o "$work/none.tern" --no-tokenizer --quiet
check "--no-tokenizer: no tokenizer" grep -q "^tokenizer: none" <<<"$(tern inspect "$work/none.tern")"
check "--no-tokenizer: format 1.2" grep -q "format 1.2" <<<"$(tern inspect "$work/none.tern")"
err=$(tern convert "$work/gpt2/model.safetensors" --arch gpt2 -o "$work/x.tern" --no-tokenizer \
  --tokenizer a.json 2>&1)
check "--no-tokenizer with --tokenizer is a usage error (exit 2)" test $? -eq 2
check "... that says so" grep -qF -- "--no-tokenizer excludes --tokenizer" <<<"$err"

make_checkpoint "$work/small" 1000
cp "$fixtures/tokenizer/bpe_gpt2/tokenizer.json" "$work/small/"
expect_error "a tokenizer larger than the vocabulary" \
  "1500 tokens, more than the model's tgt_vocab_size = 1000 (found beside the checkpoint; --no-tokenizer converts without it)" \
  tern convert "$work/small/model.safetensors" --arch gpt2 -o "$work/small.tern"
check "no output after the refusal" test ! -e "$work/small.tern"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
j["normalizer"] = {"type": "NFKC"}
json.dump(j, open(sys.argv[1], "w"))' "$work/gpt2/tokenizer.json"
expect_error "an unsupported normalizer is refused by name" \
  "tokenizer.json: normalizer.type: \"NFKC\" is not implemented" \
  tern convert "$work/gpt2/model.safetensors" --arch gpt2 -o "$work/nfkc.tern"
check "no output after the refusal" test ! -e "$work/nfkc.tern"

echo "$pass passed, $failures failed"
((failures == 0))
