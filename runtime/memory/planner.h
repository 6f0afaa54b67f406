// Offline placement of buffers in one arena, TFLite Micro's GreedyMemoryPlanner in spirit: every
// buffer has a size and a lifetime [first_use, last_use] in abstract time steps; buffers whose
// lifetimes overlap never share bytes, others may. Largest buffers are placed first, each at the
// lowest aligned offset that fits between the already placed buffers it overlaps in time.
// Fixed capacity and no allocation, so planning is allowed anywhere and is a pure function of
// its inputs: required_arena_bytes and prepare run the same plan and get the same answer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"

namespace tern {

class GreedyPlanner {
 public:
  static constexpr int kMaxBuffers = 64;
  static constexpr size_t kAlignment = 64;
  // XNNPACK (and our own vector loops) may read up to 16 bytes past a buffer's end.
  static constexpr size_t kTailPadding = 16;

  // Returns the buffer id, or -1 when the planner is full or the arguments are invalid (then
  // Plan() reports the error).
  int Add(const char* name, size_t bytes, int first_use, int last_use);
  Status Plan();

  size_t offset(int id) const { return offsets_[id]; }
  size_t size(int id) const { return sizes_[id]; }
  const char* name(int id) const { return names_[id]; }
  int count() const { return count_; }
  // Bytes from the first buffer's start to the end of the last one.
  size_t total_bytes() const { return total_; }
  // Bytes a caller's arena needs for this plan wherever it starts: the plan plus the slack to
  // align its start. RequiredArenaBytes reports it and Prepare checks it, so they agree.
  size_t arena_bytes() const;
  // Where offset 0 of the plan lies in a caller's arena of `bytes` bytes: its start rounded up
  // to kAlignment. kArenaTooSmall when bytes < arena_bytes().
  Status Place(void* arena, size_t bytes, uint8_t** base) const;

 private:
  int count_ = 0;
  bool failed_ = false;
  const char* names_[kMaxBuffers] = {};
  size_t sizes_[kMaxBuffers] = {};
  int first_[kMaxBuffers] = {};
  int last_[kMaxBuffers] = {};
  size_t offsets_[kMaxBuffers] = {};
  size_t total_ = 0;
};

// Checked size arithmetic for plans: a multiplication that would overflow saturates to
// SIZE_MAX, which then fails any arena size check instead of wrapping to a small number.
size_t CheckedMul(size_t a, size_t b);
size_t CheckedMul(size_t a, size_t b, size_t c);
size_t CheckedAdd(size_t a, size_t b);

}  // namespace tern
