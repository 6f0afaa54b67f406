#!/usr/bin/env bash
# tools/fuzz/run.sh [TARGET|all] [SECONDS]  -- build the libFuzzer targets and run them.
#
#   TARGET   load | safetensors | torch | pickle | zip | npz | text | decode | all (default)
#   SECONDS  run time per target (default 60)
#
# Builds into build/fuzz (clang-14 against the trixie sysroot, ASan + UBSan + coverage; see
# tests/fuzz/CMakeLists.txt), then runs each <target>_fuzzer for SECONDS on a copy of its seed
# corpus tests/fuzz/corpus/<target>/ in a temporary directory (the committed corpus never
# grows), with the dictionary tests/fuzz/dict/<target>.dict when there is one. Prints executions and coverage per target; a crash (ASan, UBSan, a leak, a broken
# invariant, a timeout, running out of memory) leaves its input in build/fuzz/artifacts/<target>/
# and makes the script exit 1. Logs: build/fuzz/logs/<target>.log. Results are also appended to
# build/fuzz/results.txt (date, target, seconds, executions, coverage).
#
# Environment: FUZZ_JOBS (build parallelism, default 2), FUZZ_ARGS (extra libFuzzer flags),
# FUZZ_SKIP_BUILD=1 (use the binaries already built).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

ALL=(load safetensors torch pickle zip npz text decode)
target=${1:-all}
seconds=${2:-60}
if [[ "$target" == all ]]; then
  targets=("${ALL[@]}")
else
  [[ " ${ALL[*]} " == *" $target "* ]] || { echo "run.sh: unknown target '$target' (${ALL[*]} or all)" >&2; exit 2; }
  targets=("$target")
fi
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "run.sh: SECONDS must be a whole number" >&2; exit 2; }

build=build/fuzz
if [[ "${FUZZ_SKIP_BUILD:-0}" != 1 ]]; then
  command -v clang++-14 >/dev/null || { echo "run.sh: clang++-14 missing: run tools/fuzz/setup.sh" >&2; exit 1; }
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S tests/fuzz -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/tools/fuzz/clang-x86_64.cmake" \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo
  fi
  names=()
  for t in "${targets[@]}"; do names+=("${t}_fuzzer"); done
  cmake --build "$build" -j "${FUZZ_JOBS:-2}" --target "${names[@]}"
fi

# Sanitizers: every UB report is fatal, leaks count, symbolized stacks.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
if command -v llvm-symbolizer-14 >/dev/null; then
  export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-14)}
fi

max_len() {
  case "$1" in
    load) echo 16384 ;;  # the seed models are 8-13 KB
    text) echo 1024 ;;
    *) echo 4096 ;;
  esac
}

mkdir -p "$build/logs"
failed=0
printf '\n%-12s %8s %12s %8s %8s %8s  %s\n' target seconds executions exec/s cov ft result
summary=()
for t in "${targets[@]}"; do
  bin="$build/${t}_fuzzer"
  [[ -x "$bin" ]] || { echo "run.sh: $bin not built" >&2; exit 1; }
  work=$(mktemp -d "${TMPDIR:-/tmp}/tern-fuzz-$t.XXXXXX")
  mkdir -p "$work/corpus" "$build/artifacts/$t"
  cp tests/fuzz/corpus/"$t"/* "$work/corpus/"
  log="$build/logs/$t.log"
  dict=()
  [[ -f tests/fuzz/dict/$t.dict ]] && dict=(-dict="tests/fuzz/dict/$t.dict")
  rc=0
  # -rss_limit_mb: a 2 GB ceiling turns runaway allocations into findings; -timeout: one input
  # may take at most 25 s; -close_fd_mask=1 keeps stdout quiet.
  "$bin" -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=25 -rss_limit_mb=2048 \
    -print_final_stats=1 -close_fd_mask=1 -artifact_prefix="$build/artifacts/$t/" "${dict[@]}" \
    ${FUZZ_ARGS:-} "$work/corpus" >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  if [[ $rc -eq 0 ]]; then
    result=ok
  else
    result="CRASH (rc $rc): $(ls -t "$build/artifacts/$t" | head -1) -- see $log"
    failed=1
  fi
  line=$(printf '%-12s %8s %12s %8s %8s %8s  %s' "$t" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result")
  echo "$line"
  summary+=("$line")
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $line" >>"$build/results.txt"
  rm -rf "$work"
done
if [[ $failed -ne 0 ]]; then
  echo
  echo "run.sh: crashes found; reproduce with: $build/<target>_fuzzer <artifact>" >&2
  exit 1
fi
