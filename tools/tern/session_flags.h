// The session-size flags shared by translate, generate, inspect and bench: --batch, --beam,
// --max-source, --max-length, --threads and --backend have the same names, defaults and bounds
// in every command, and each is checked here, up front, with a message naming the flag (a usage
// error, exit 2) before anything is sized from it. --batch-tokens and --target-tokens are for
// translation models: translate and inspect take them here, generate does not. --kv-cache is
// for both kinds: translate, inspect and generate take it here, bench --kv-cache has the same
// values and message.
#pragma once

#include <cstddef>
#include <string>

#include "platforms/posix/arena_memory.h"
#include "runtime/model/config.h"
#include "tern/limits.h"
#include "tools/tern/args.h"

namespace tern::cli {

// The runtime's bounds (runtime/models/encoder_decoder.cc CheckLimits, xnnpack_linears.cc).
inline constexpr long long kMaxBatch = 4096;
inline constexpr long long kMaxBeam = 256;
inline constexpr long long kMaxThreads = 256;
// Default source and target length: min(kDefaultLength, the model's max_positions).
inline constexpr long long kDefaultLength = 256;

// The value names of the flags ParseLimits reads, for Args' `valued` set.
inline const char* const kLimitFlags[] = {"batch",        "beam",          "max-source",
                                          "max-length",   "threads",       "backend",
                                          "batch-tokens", "target-tokens", "kv-cache"};

// Reads the flags above (those present in args) into Limits for this model; UsageError for a
// value outside its bound (lengths: 1 to the model's max_positions; --batch-tokens, the source
// token budget Limits::max_batch_tokens: 0 or at least --max-source; --target-tokens,
// Limits::max_target_tokens: 0 or at least --max-length; --kv-cache: fp32 or fp16,
// Limits::kv_cache).
Limits ParseLimits(const Args& args, const ModelConfig& config);

// Refuses (std::runtime_error with both numbers) an arena larger than this machine can give:
// the physical memory (sysconf), or RLIMIT_AS when it is set and lower. Called before the
// arena is allocated, so a huge --batch fails at once instead of swapping for a minute.
void CheckArenaFits(size_t arena_bytes);

// Memory for an arena (or shared packed weights) of `bytes`: huge pages where the kernel
// offers them (platforms/posix/arena_memory.h says why). Throws std::runtime_error on failure.
posix::ArenaMemory AllocateArena(size_t bytes);

// The memory limit CheckArenaFits applies, in bytes, and where it comes from.
size_t MemoryLimitBytes(std::string* source);

}  // namespace tern::cli
