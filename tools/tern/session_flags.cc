#include "tools/tern/session_flags.h"

#include <sys/resource.h>
#include <unistd.h>

#include <climits>
#include <stdexcept>
#include <string>
#include <utility>

namespace tern::cli {

Limits ParseLimits(const Args& args, const ModelConfig& config) {
  Limits limits;
  const long long positions = config.max_positions;
  const long long length = positions < kDefaultLength ? positions : kDefaultLength;
  limits.max_batch = static_cast<int32_t>(args.get_int("batch", 1, 1, kMaxBatch));
  limits.beam_size = static_cast<int32_t>(args.get_int("beam", 1, 1, kMaxBeam));
  limits.max_source_length = static_cast<int32_t>(args.get_int("max-source", length, 1, positions));
  limits.max_target_length = static_cast<int32_t>(args.get_int("max-length", length, 1, positions));
  limits.threads = static_cast<int32_t>(args.get_int("threads", 1, 1, kMaxThreads));
  limits.max_batch_tokens = static_cast<int32_t>(args.get_int("batch-tokens", 0, 0, INT32_MAX));
  if (limits.max_batch_tokens > 0 && limits.max_batch_tokens < limits.max_source_length) {
    // Any single sentence must fit: a budget below the longest source would have no batch
    // for it.
    throw UsageError("option --batch-tokens must be 0 (off) or at least --max-source (" +
                     std::to_string(limits.max_source_length) + "), got " +
                     std::to_string(limits.max_batch_tokens));
  }
  limits.max_target_tokens = static_cast<int32_t>(args.get_int("target-tokens", 0, 0, INT32_MAX));
  if (limits.max_target_tokens > 0 && limits.max_target_tokens < limits.max_target_length) {
    throw UsageError("option --target-tokens must be 0 (off) or at least --max-length (" +
                     std::to_string(limits.max_target_length) + "), got " +
                     std::to_string(limits.max_target_tokens));
  }
  const std::string cache = args.get("kv-cache", "fp32");
  if (cache == "fp32") {
    limits.kv_cache = CacheType::kFloat32;
  } else if (cache == "fp16") {
    limits.kv_cache = CacheType::kFloat16;
  } else {
    throw UsageError("option --kv-cache must be fp32 or fp16, got \"" + cache + "\"");
  }
  const std::string backend = args.get("backend", "auto");
  if (backend == "auto") {
    limits.backend = Backend::kAuto;
  } else if (backend == "xnnpack") {
    limits.backend = Backend::kXnnpack;
  } else if (backend == "reference") {
    limits.backend = Backend::kReference;
  } else {
    throw UsageError("option --backend must be auto, xnnpack or reference, got \"" + backend +
                     "\"");
  }
  return limits;
}

size_t MemoryLimitBytes(std::string* source) {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  size_t limit = SIZE_MAX;
  *source = "no known limit";
  if (pages > 0 && page_size > 0) {
    const unsigned long long phys =
        static_cast<unsigned long long>(pages) * static_cast<unsigned long long>(page_size);
    limit = phys > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(phys);
    *source = "physical memory";
  }
  struct rlimit as;
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY && as.rlim_cur < limit) {
    limit = static_cast<size_t>(as.rlim_cur);
    *source = "RLIMIT_AS (ulimit -v)";
  }
  return limit;
}

void CheckArenaFits(size_t arena_bytes) {
  std::string source;
  const size_t limit = MemoryLimitBytes(&source);
  if (arena_bytes > limit) {
    throw std::runtime_error("the arena needs " + std::to_string(arena_bytes) +
                             " bytes, more than this machine's limit of " + std::to_string(limit) +
                             " bytes (" + source +
                             "); lower --batch, --beam, --max-source or --max-length");
  }
}

posix::ArenaMemory AllocateArena(size_t bytes) {
  auto memory = posix::ArenaMemory::Allocate(bytes);
  if (!memory.ok()) throw std::runtime_error(memory.status().message());
  return std::move(memory.value());
}

}  // namespace tern::cli
