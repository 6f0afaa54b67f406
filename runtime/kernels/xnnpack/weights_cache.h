// Packed weights that several sessions of one model share, through XNNPACK's weights-cache
// interface (xnn_weights_cache_provider): an operator created with a cache asks it for the
// packed weights of (seed, kernel, bias) before packing, and packs into memory the cache gives
// only when it has none. tern implements the interface over caller memory:
//
//   SharedRegion   the caller's memory: a table of the packed layers, then their packed bytes,
//                  each block 64-byte aligned. Filled once (by the first session prepared with
//                  it), read-only afterwards: any number of sessions on any threads read it.
//   WeightsCache   one session's provider. Operators keep a pointer to it and ask it for the
//                  packed bytes' address at every call, so it lives as long as the session (in
//                  the BackendSession object). It keys entries by the layer's position in the
//                  creation order, not by XNNPACK's key pointers: a kernel repacked into the
//                  session's prepare scratch has a different address in every session. The
//                  seed (XNNPACK's hash of shape and micro-kernel) must match the packed entry,
//                  so a session whose layers or CPU paths differ is refused, never misread.
#pragma once

#include <xnnpack.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"

namespace tern::xnn {

// One packed layer in the region's table.
struct SharedEntry {
  uint32_t seed = 0;
  uint64_t offset = 0;  // from the region's base
  uint64_t bytes = 0;
};

class SharedRegion {
 public:
  // Region bytes for `layers` packed layers of `packed_bytes` in all (each a multiple of 64),
  // with the slack to align any caller pointer to 64.
  static size_t RequiredBytes(int32_t layers, size_t packed_bytes);

  // Binds the caller's memory (empty: nothing packed yet). Not thread-safe; before any session.
  Status Bind(void* memory, size_t bytes);

  // The packing session's claim: true for exactly one caller of an empty, bound region, which
  // must then call Finish (success) or Abandon.
  // cut: the operators each layer is cut into (xnn::CutParts of the sessions' thread count).
  bool Claim(const void* model, int32_t layers, int32_t cut = 1);
  void Finish() { state_.store(kReady, std::memory_order_release); }
  void Abandon();
  bool ready() const { return state_.load(std::memory_order_acquire) == kReady; }
  bool bound() const { return base_ != nullptr; }
  const void* model() const { return model_; }
  int32_t cut() const { return cut_; }
  int32_t layers() const { return count_; }
  size_t used_bytes() const { return used_; }
  size_t capacity() const { return capacity_; }

  // Packing: room for the next layer's packed bytes (null when they do not fit), then the entry.
  void* Reserve(size_t bytes);
  size_t Insert(uint32_t seed, const void* packed, size_t bytes);
  // Reuse: the offset of layer `index` when its seed matches, else SIZE_MAX.
  size_t LookUp(int32_t index, uint32_t seed) const;
  void* Address(size_t offset) const { return base_ + offset; }

 private:
  static constexpr int kEmpty = 0, kPacking = 1, kReady = 2;
  uint8_t* base_ = nullptr;  // 64-byte aligned
  size_t capacity_ = 0;
  SharedEntry* entries_ = nullptr;  // at base_
  int32_t max_entries_ = 0;
  int32_t count_ = 0;
  size_t used_ = 0;  // table + packed bytes so far
  const void* model_ = nullptr;
  int32_t cut_ = 1;
  std::atomic<int> state_{kEmpty};
};

class WeightsCache {
 public:
  enum class Mode : uint8_t {
    kOff,      // operators pack their own copy (no cache)
    kMeasure,  // dry run: records the packed bytes XNNPACK asks for and refuses them
    kPack,     // the first session: packs into the shared region
    kReuse,    // later sessions: every layer's packed bytes are in the region
  };

  WeightsCache();
  WeightsCache(const WeightsCache&) = delete;
  WeightsCache& operator=(const WeightsCache&) = delete;

  void Start(Mode mode, SharedRegion* region);
  Mode mode() const { return mode_; }
  // The provider handed to XNNPACK's create calls; null when the mode is kOff.
  xnn_weights_cache_t provider() { return mode_ == Mode::kOff ? nullptr : &provider_; }
  // The next operator created is packed layer `index` (creation order).
  void Expect(int32_t index) { index_ = index; }
  // A layer tern's own loops run, copied as its packed entry `index` (kPack: `bytes` bytes
  // written by fill(at, data): the rows as they are, or repacked for the loops; kReuse: the
  // entry found, when its seed matches): its address in the region, or null (it does not fit,
  // or the region's entry is another layer's: mismatch() then).
  using Fill = void (*)(void* at, const void* data);
  const void* Copy(int32_t index, const void* data, size_t bytes, uint32_t seed, Fill fill);
  // kMeasure: the bytes of the last refused request. kReuse: whether a layer's seed differed.
  size_t measured_bytes() const { return measured_; }
  bool mismatch() const { return mismatch_; }

 private:
  static size_t LookUpFn(void* context, const xnn_weights_cache_look_up_key* key);
  static void* ReserveFn(void* context, size_t n);
  static size_t LookUpOrInsertFn(void* context, const xnn_weights_cache_look_up_key* key, void* ptr,
                                 size_t size);
  static bool IsFinalizedFn(void* context);
  static void* OffsetToAddrFn(void* context, size_t offset);
  static xnn_status DeleteFn(void* context);

  xnn_weights_cache_provider provider_;
  SharedRegion* region_ = nullptr;
  Mode mode_ = Mode::kOff;
  int32_t index_ = 0;
  size_t measured_ = 0;
  bool mismatch_ = false;
};

}  // namespace tern::xnn
