// What both `tern bench` modes (translation: bench.cc, language models: bench_lm.cc) measure
// with: wall and CPU clocks, medians, the process's memory, deterministic ids.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"

namespace tern::cli::bench {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b);

// CPU time of the whole process (all threads), ms: on a shared machine, less disturbed than
// wall time by other processes taking the CPU (not by their use of caches and memory).
double CpuMs();

double Median(std::vector<double> v);

// `batch` rows of `length` ids each (row 0 is the batch-1 input): row b's id[i] = 4 + ((b *
// length + i) * 7919 + 17) mod (vocab - 4), the same formula bench/peers use; the last id of a
// row is `last` when it is >= 0.
std::vector<int32_t> BenchIds(int32_t length, int32_t batch, int32_t vocab, int32_t last);

// Peak resident set (VmHWM) and the current anonymous / file-backed parts, in bytes.
struct Memory {
  long long peak = 0, anon = 0, file = 0;
};
Memory ReadMemory();

// Throws std::runtime_error("what: message") unless s is ok.
void Check(const Status& s, const char* what);

}  // namespace tern::cli::bench
