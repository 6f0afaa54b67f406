#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds a consumer against it twice: with
# find_package(tern) and with pkg-config, and runs both; both also compile the C++ header.
# usage: install_test.sh BUILD_DIR SOURCE_DIR TOOLCHAIN_FILE C_COMPILER [EMULATOR;ARGS]
set -euo pipefail
build=$1 source=$2 toolchain=$3
IFS=';' read -ra emulator <<<"${5:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/tern/tern.h"
test -f "$work/prefix/include/tern/tern.hpp"
# The public C++ header needs no internal model class (the consumer compiles it, api_header.cc).
if find "$work/prefix/include" -path '*runtime/models*' | grep -q .; then
  echo "runtime/models/ headers were installed" >&2
  exit 1
fi
# libtern.so exports the C API and nothing else: every defined dynamic symbol is a tern_*
# function declared in tern.h, and every function tern.h declares is exported. (readelf reads
# any target's ELF, so this runs in the cross configurations too.)
lib=$(find "$work/prefix" -name 'libtern.so.*' -type f | head -1)
exported=$(readelf --dyn-syms -W "$lib" |
  awk 'NR > 3 && $7 != "UND" && ($4 == "FUNC" || $4 == "OBJECT") { sub(/@.*/, "", $8); print $8 }' | sort -u)
declared=$(grep -o 'tern_[a-z0-9_]* *(' "$work/prefix/include/tern/tern.h" | tr -d ' (' | sort -u)
if [[ "$exported" != "$declared" ]]; then
  echo "libtern.so exports differ from tern.h's functions (< exported only, > declared only):" >&2
  diff <(echo "$exported") <(echo "$declared") >&2 || true
  exit 1
fi
pcdir=$(dirname "$(find "$work/prefix" -name tern.pc)")
cmake -S "$source/tests/install" -B "$work/consumer" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
  -Dtern_DIR="$(dirname "$(find "$work/prefix" -name ternConfig.cmake)")" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/consumer" >/dev/null
"${emulator[@]}" "$work/consumer/consumer" | grep -q '^tern '
PKG_CONFIG_PATH="$pcdir" cmake -S "$source/tests/install" -B "$work/pc-consumer" -G Ninja \
  -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DUSE_PKG_CONFIG=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/pc-consumer" >/dev/null
"${emulator[@]}" "$work/pc-consumer/consumer" | grep -q '^tern '
echo "1 passed, 0 failed"
