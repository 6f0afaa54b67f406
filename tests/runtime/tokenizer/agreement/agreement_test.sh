#!/usr/bin/env bash
# tern's byte-level BPE tokenizer against an independent implementation, Hugging Face's
# JavaScript tokenizers (npm @huggingface/tokenizers 0.2.0, js/package-lock.json): for every
# committed tokenizer.json fixture (tests/fixtures/tokenizer/bpe_*/tokenizer.json), the ids of
# every text of tests/fixtures/tokenizer/corpus.txt (its lines, and blocks of lines) must be
# identical, and decode back to the text exactly (js/agreement.mjs, bpe_encode.cc); also for
# 4000 seeded random texts of the corpus's code points and special tokens.
# Registered in tests/CMakeLists.txt (x86-64 native configuration). Needs node and the package:
# `make test` installs both (tools/setup-host.sh test, then npm ci here); without them this test
# fails, it never skips.
# usage: agreement_test.sh BPE_ENCODE FIXTURES_DIR
set -uo pipefail
encode=$1
fixtures=$2
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null; then
  echo "FAILED: node is not installed (tools/setup-host.sh test installs nodejs)"
  exit 1
fi
if [[ ! -f $here/js/node_modules/@huggingface/tokenizers/package.json ]]; then
  echo "FAILED: @huggingface/tokenizers is not installed: (cd $here/js && npm ci)" \
       "(make test does this)"
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node "$here/js/agreement.mjs" texts "$fixtures/tokenizer/corpus.txt" "$work/texts.jsonl" || exit 1
failed=0
count=0
for tokenizer in "$fixtures"/tokenizer/bpe_*/tokenizer.json; do
  count=$((count + 1))
  if ! "$encode" "$tokenizer" "$work/texts.jsonl" >"$work/tern.jsonl"; then
    echo "FAILED: $tokenizer: tern's encoder failed"
    failed=$((failed + 1))
    continue
  fi
  node "$here/js/agreement.mjs" compare "$tokenizer" "$work/texts.jsonl" "$work/tern.jsonl" ||
    failed=$((failed + 1))
done
if ((count < 5)); then
  echo "FAILED: $count tokenizer fixtures found, expected the 5 of tools/tokenizer/README.md"
  exit 1
fi
echo "$((count - failed)) passed, $failed failed"
((failed == 0))
