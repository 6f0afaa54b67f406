#!/usr/bin/env bash
# setup-npm.sh -- install the npm packages the test suite runs (`make test` calls it after
# tools/setup-host.sh test, which installs node and npm): `npm ci` from the committed
# package-lock.json in
#   tests/runtime/tokenizer/agreement/js   @huggingface/tokenizers, the independent byte-level
#                                          BPE tokenizer of the agreement test
# Does nothing for a directory whose node_modules is newer than its lock file.
set -euo pipefail
cd "$(dirname "$0")/.."
for dir in tests/runtime/tokenizer/agreement/js; do
  installed=$dir/node_modules/.package-lock.json
  if [[ -f $installed && $installed -nt $dir/package-lock.json ]]; then
    echo "setup-npm: $dir is up to date"
    continue
  fi
  echo "setup-npm: npm ci in $dir"
  (cd "$dir" && npm ci --no-audit --no-fund)
done
