// tern bench on a decoder-only model (bench_lm.cc): prompt prefill and decode speed.
#pragma once

#include <string>

#include "tools/tern/args.h"
#include "tools/tern/bench_util.h"
#include "tools/tern/load.h"

namespace tern::cli {

struct LmBenchSettings {
  std::string path;
  int32_t threads = 1, prompt_length = 128, tokens = 128, batch = 1;
  int repeat = 5, warmup = 1;
  Backend backend = Backend::kAuto;
  CacheType kv_cache = CacheType::kFloat32;
  bool json = false;
};

// Measures `loaded` (decoder-only; loaded at t_load) and prints the report; returns the exit
// status. Throws std::runtime_error on a failed run.
int BenchLanguageModel(const LmBenchSettings& s, LoadedModel& loaded,
                       bench::Clock::time_point t_load);

}  // namespace tern::cli
