#!/usr/bin/env bash
# tools/fuzz/make_seeds.sh -- regenerate the committed seed corpora tests/fuzz/corpus/<target>/.
# The .tern and canonical safetensors seeds come from the converter (build/fuzz/make_fuzz_seeds,
# tests/fuzz/make_seeds.cc); the .pt, .pkl, .npz, .npy, text and decode seeds from Debian's
# python3-torch and python3-numpy (tools/fuzz/make_seeds.py). Both are deterministic: rerunning
# rewrites the same bytes (check with git status).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=build/fuzz
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/tools/fuzz/clang-x86_64.cmake" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" -j "${FUZZ_JOBS:-2}" --target make_fuzz_seeds
mkdir -p tests/fuzz/corpus/{load,safetensors,torch,pickle,zip,npz,text,decode}
ASAN_OPTIONS=detect_leaks=0 "$build/make_fuzz_seeds" tests/fuzz/corpus
/usr/bin/python3 tools/fuzz/make_seeds.py tests/fuzz/corpus
