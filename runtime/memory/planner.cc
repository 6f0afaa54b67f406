#include "runtime/memory/planner.h"

#include <cstdint>

namespace tern {

size_t CheckedMul(size_t a, size_t b) {
  if (a != 0 && b > SIZE_MAX / a) return SIZE_MAX;
  return a * b;
}

size_t CheckedMul(size_t a, size_t b, size_t c) { return CheckedMul(CheckedMul(a, b), c); }

size_t CheckedAdd(size_t a, size_t b) { return b > SIZE_MAX - a ? SIZE_MAX : a + b; }

namespace {

size_t AlignUp(size_t value, size_t alignment) {
  // Saturated stays saturated: rounding SIZE_MAX down would turn an overflow into a size.
  const size_t padded = CheckedAdd(value, alignment - 1);
  return padded == SIZE_MAX ? SIZE_MAX : padded / alignment * alignment;
}

}  // namespace

int GreedyPlanner::Add(const char* name, size_t bytes, int first_use, int last_use) {
  const size_t padded = AlignUp(CheckedAdd(bytes, kTailPadding), kAlignment);
  if (count_ >= kMaxBuffers || first_use > last_use || padded == SIZE_MAX) {
    failed_ = true;
    return -1;
  }
  names_[count_] = name;
  sizes_[count_] = padded;
  first_[count_] = first_use;
  last_[count_] = last_use;
  return count_++;
}

size_t GreedyPlanner::arena_bytes() const { return CheckedAdd(total_, kAlignment); }

Status GreedyPlanner::Place(void* arena, size_t bytes, uint8_t** base) const {
  const size_t required = arena_bytes();
  if (bytes < required) {
    return Status::Error(StatusCode::kArenaTooSmall, "arena has %zu bytes; these limits need %zu",
                         bytes, required);
  }
  const uintptr_t raw = reinterpret_cast<uintptr_t>(arena);
  *base = reinterpret_cast<uint8_t*>((raw + kAlignment - 1) & ~uintptr_t{kAlignment - 1});
  return Status::Ok();
}

Status GreedyPlanner::Plan() {
  if (failed_) {
    return Status::Error(StatusCode::kOutOfRange,
                         "memory plan is invalid: too many buffers or a size that overflows");
  }
  // Order: largest first, ties by id, so the plan is deterministic.
  int order[kMaxBuffers];
  for (int i = 0; i < count_; ++i) order[i] = i;
  for (int i = 1; i < count_; ++i) {
    const int v = order[i];
    int j = i - 1;
    while (j >= 0 &&
           (sizes_[order[j]] < sizes_[v] || (sizes_[order[j]] == sizes_[v] && order[j] > v))) {
      order[j + 1] = order[j];
      --j;
    }
    order[j + 1] = v;
  }
  bool placed[kMaxBuffers] = {};
  total_ = 0;
  for (int n = 0; n < count_; ++n) {
    const int id = order[n];
    // Candidate offsets: 0 and the end of every placed buffer alive at the same time; take the
    // lowest that collides with none of them.
    size_t best = SIZE_MAX;
    for (int c = -1; c < count_; ++c) {
      size_t candidate = 0;
      if (c >= 0) {
        if (!placed[c] || last_[c] < first_[id] || first_[c] > last_[id]) continue;
        candidate = CheckedAdd(offsets_[c], sizes_[c]);
      }
      if (candidate >= best) continue;
      bool fits = true;
      for (int o = 0; o < count_ && fits; ++o) {
        if (!placed[o] || last_[o] < first_[id] || first_[o] > last_[id]) continue;
        const size_t end = CheckedAdd(candidate, sizes_[id]);
        fits = end <= offsets_[o] || candidate >= CheckedAdd(offsets_[o], sizes_[o]);
      }
      if (fits) best = candidate;
    }
    offsets_[id] = best;
    placed[id] = true;
    const size_t end = CheckedAdd(best, sizes_[id]);
    if (end > total_) total_ = end;
  }
  if (total_ == SIZE_MAX) {
    return Status::Error(StatusCode::kOutOfRange, "memory plan overflows the address space");
  }
  return Status::Ok();
}

}  // namespace tern
