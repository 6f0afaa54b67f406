#!/usr/bin/env bash
# The include rules of the layering (issue 14), checked on the source tree so that a new
# back-edge fails a test instead of waiting for a reviewer:
#   - nothing in runtime/ includes platforms/ (the C API reaches files through the hook in
#     runtime/api/platform.h, implemented in platforms/ and chosen at link time);
#   - the loader and what is below it (runtime/model, core, memory, kernels) include nothing from
#     the tiers above (models, nn, api, decoding, tokenizer): Model::Load checks the format only;
#   - the network (runtime/nn, runtime/models) includes nothing from decoding, the API or the
#     tokenizer: a model owns the network's buffers, and the decoding algorithm's state comes to
#     its arena plan as requests from the API layer (runtime/decoding/state.h).
# (That tern.hpp needs no runtime/models header is checked by the install test, which compiles
# it against the installed headers alone.)
# usage: layering_test.sh SOURCE_DIR
set -euo pipefail
cd "$1"
failed=0
check() {  # check DESCRIPTION PATTERN DIR...
  local what=$1 pattern=$2
  shift 2
  local hits
  hits=$(grep -rnE --include='*.h' --include='*.hpp' --include='*.cc' "$pattern" "$@" || true)
  if [[ -n $hits ]]; then
    echo "FAILED: $what:" >&2
    echo "$hits" >&2
    failed=$((failed + 1))
  fi
}
check "runtime/ includes platforms/" '^#include "platforms/' runtime
check "the loader or a tier below it includes a tier above" \
  '^#include "runtime/(models|nn|api|decoding|tokenizer)/' \
  runtime/model runtime/core runtime/memory runtime/kernels
check "the network tiers include decoding, the API or the tokenizer" \
  '^#include "runtime/(api|decoding|tokenizer)/' runtime/nn runtime/models
# The rules must see the files they are about (a moved tree would pass vacuously).
test -f runtime/model/model.cc && test -f runtime/api/c_api.cc && test -f runtime/api/platform.h
test -f runtime/models/encoder_decoder.cc && test -f runtime/decoding/state.h
if ((failed)); then
  echo "$((3 - failed)) passed, $failed failed"
  exit 1
fi
echo "3 passed, 0 failed"
