// Where XNNPACK's memory comes from. XNNPACK takes one process-wide allocator at xnn_initialize;
// tern installs one that routes every request by what the calling thread is doing:
//
//  - inside an ArenaScope (Session::Prepare creating operators): from that arena region, bump
//    style; freeing is a no-op (the region dies with the session). Running out returns NULL,
//    which XNNPACK reports as xnn_status_out_of_memory: Prepare fails, nothing crashes.
//  - inside a MeasureScope (the dry run of RequiredArenaBytes): every request is recorded as
//    the footprint it would take in an arena region. Small requests (operator structs) are
//    served from the heap; the first one above the cap (the packed weights) is recorded and
//    refused, so XNNPACK gives up before packing: measuring costs neither time nor memory.
//  - anywhere else: the heap. Nothing in tern calls XNNPACK that way after Prepare; the
//    allocation-counting test (tests/allocation) would see it if XNNPACK did.
//
// Every block carries a 64-byte header saying where it came from, so XNNPACK's frees and
// reallocs always do the right thing whichever scope (or none) they happen in.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"

namespace tern::xnn {

// Alignment of every block (XNNPACK asks for XNN_ALLOCATION_ALIGNMENT, 64 or less).
inline constexpr size_t kBlockAlignment = 64;

// Arena bytes one request takes: the header plus the size rounded up to 64, plus room to
// reach alignments above 64. A pure function, so measured totals equal prepared totals.
size_t Footprint(size_t size, size_t alignment);

// Calls xnn_initialize with tern's allocator once per process (thread-safe), then checks that
// XNNPACK really uses it (it keeps the first allocator it was given: another library may have
// initialized it before tern). Not ok: XNNPACK is unusable here; the message says why.
Status Initialize();

// Serves the calling thread's XNNPACK requests from [begin, begin + bytes) while alive.
// begin must be 64-byte aligned. Scopes nest: the innermost one serves.
class ArenaScope {
 public:
  ArenaScope(void* begin, size_t bytes);
  ~ArenaScope();
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

  size_t used() const { return used_; }
  // Some request did not fit (XNNPACK got NULL).
  bool overflowed() const { return overflowed_; }

  void* Allocate(size_t size, size_t alignment);

 private:
  uint8_t* begin_;
  size_t capacity_;
  void* saved_[3];
  size_t used_ = 0;
  bool overflowed_ = false;
};

// Memory for tern's own use from the calling thread's innermost ArenaScope (a block like
// XNNPACK's: Footprint(size, alignment) of the region); null outside one or when it does not fit.
void* AllocateInArenaScope(size_t size, size_t alignment);

// Records the calling thread's XNNPACK requests while alive (see the top of this file).
class MeasureScope {
 public:
  explicit MeasureScope(size_t refuse_above = 64 * 1024);
  ~MeasureScope();
  MeasureScope(const MeasureScope&) = delete;
  MeasureScope& operator=(const MeasureScope&) = delete;

  // Arena bytes the recorded requests would take.
  size_t bytes() const { return bytes_; }
  int requests() const { return requests_; }
  // A request was refused: the operator was not created, but its footprint is complete (in
  // this XNNPACK the packed weights are the last request of a fully-connected create).
  bool refused() const { return refused_; }

  void* Allocate(size_t size, size_t alignment);

 private:
  size_t refuse_above_;
  void* saved_[3];
  size_t bytes_ = 0;
  int requests_ = 0;
  bool refused_ = false;
};

}  // namespace tern::xnn
