#include "runtime/kernels/xnnpack/weights_cache.h"

namespace tern::xnn {

namespace {

constexpr size_t kAlign = 64;
size_t Up(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
size_t TableBytes(int32_t layers) { return Up(static_cast<size_t>(layers) * sizeof(SharedEntry)); }

}  // namespace

size_t SharedRegion::RequiredBytes(int32_t layers, size_t packed_bytes) {
  if (layers == 0 && packed_bytes == 0) return 0;  // nothing to share (every layer unpacked)
  return kAlign - 1 + TableBytes(layers) + packed_bytes;
}

Status SharedRegion::Bind(void* memory, size_t bytes) {
  if (state_.load() == kPacking) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "shared weights: a session is packing into them");
  }
  if (memory == nullptr && bytes > 0) {
    return Status::Error(StatusCode::kInvalidArgument, "shared weights: memory is null");
  }
  const uintptr_t at = reinterpret_cast<uintptr_t>(memory);
  const size_t skip = (kAlign - at % kAlign) % kAlign;
  const bool empty = memory == nullptr || bytes <= skip;
  base_ = empty ? nullptr : static_cast<uint8_t*>(memory) + skip;
  capacity_ = empty ? 0 : bytes - skip;
  entries_ = nullptr;
  max_entries_ = count_ = 0;
  used_ = 0;
  model_ = nullptr;
  state_.store(kEmpty);
  return Status::Ok();
}

bool SharedRegion::Claim(const void* model, int32_t layers, int32_t cut) {
  int expected = kEmpty;
  if (base_ == nullptr || !state_.compare_exchange_strong(expected, kPacking)) return false;
  const size_t table = TableBytes(layers);
  if (table > capacity_) {
    state_.store(kEmpty);
    return false;
  }
  entries_ = reinterpret_cast<SharedEntry*>(base_);
  max_entries_ = layers;
  count_ = 0;
  used_ = table;
  model_ = model;
  cut_ = cut;
  return true;
}

void SharedRegion::Abandon() {
  count_ = 0;
  used_ = 0;
  model_ = nullptr;
  state_.store(kEmpty, std::memory_order_release);
}

void* SharedRegion::Reserve(size_t bytes) {
  if (count_ >= max_entries_ || Up(bytes) > capacity_ - used_) return nullptr;
  return base_ + used_;
}

size_t SharedRegion::Insert(uint32_t seed, const void* packed, size_t bytes) {
  const size_t offset = static_cast<size_t>(static_cast<const uint8_t*>(packed) - base_);
  // XNNPACK inserts what Reserve handed out, right away; anything else is refused.
  if (count_ >= max_entries_ || offset != used_ || Up(bytes) > capacity_ - used_) return SIZE_MAX;
  entries_[count_++] = SharedEntry{seed, offset, bytes};
  used_ += Up(bytes);
  return offset;
}

size_t SharedRegion::LookUp(int32_t index, uint32_t seed) const {
  if (index < 0 || index >= count_ || entries_[index].seed != seed) return SIZE_MAX;
  return static_cast<size_t>(entries_[index].offset);
}

const void* WeightsCache::Copy(int32_t index, const void* data, size_t bytes, uint32_t seed,
                               Fill fill) {
  if (mode_ == Mode::kPack) {
    void* at = region_->Reserve(bytes);
    if (at == nullptr || region_->layers() != index) return nullptr;
    fill(at, data);
    return region_->Insert(seed, at, bytes) == SIZE_MAX ? nullptr : at;
  }
  if (mode_ == Mode::kReuse) {
    const size_t offset = region_->LookUp(index, seed);
    if (offset == SIZE_MAX) {
      mismatch_ = true;
      return nullptr;
    }
    return region_->Address(offset);
  }
  return nullptr;
}

WeightsCache::WeightsCache() {
  provider_.context = this;
  provider_.look_up = LookUpFn;
  provider_.reserve_space = ReserveFn;
  provider_.look_up_or_insert = LookUpOrInsertFn;
  provider_.is_finalized = IsFinalizedFn;
  provider_.offset_to_addr = OffsetToAddrFn;
  provider_.delete_cache = DeleteFn;
}

void WeightsCache::Start(Mode mode, SharedRegion* region) {
  mode_ = mode;
  region_ = region;
  index_ = 0;
  measured_ = 0;
  mismatch_ = false;
}

size_t WeightsCache::LookUpFn(void* context, const xnn_weights_cache_look_up_key* key) {
  WeightsCache& c = *static_cast<WeightsCache*>(context);
  if (c.mode_ != Mode::kReuse) return SIZE_MAX;  // XNN_CACHE_NOT_FOUND
  const size_t offset = c.region_->LookUp(c.index_, key->seed);
  if (offset == SIZE_MAX) c.mismatch_ = true;
  return offset;
}

void* WeightsCache::ReserveFn(void* context, size_t n) {
  WeightsCache& c = *static_cast<WeightsCache*>(context);
  switch (c.mode_) {
    case Mode::kMeasure:
      c.measured_ = n;  // recorded and refused: the operator gives up before packing
      return nullptr;
    case Mode::kPack:
      return c.region_->Reserve(n);
    default:
      return nullptr;  // kReuse: a layer the region lacks (mismatch_ says so)
  }
}

size_t WeightsCache::LookUpOrInsertFn(void* context, const xnn_weights_cache_look_up_key* key,
                                      void* ptr, size_t size) {
  WeightsCache& c = *static_cast<WeightsCache*>(context);
  if (c.mode_ != Mode::kPack) return SIZE_MAX;
  return c.region_->Insert(key->seed, ptr, size);
}

bool WeightsCache::IsFinalizedFn(void* context) {
  const WeightsCache& c = *static_cast<const WeightsCache*>(context);
  return c.region_ != nullptr && c.region_->ready();
}

void* WeightsCache::OffsetToAddrFn(void* context, size_t offset) {
  return static_cast<WeightsCache*>(context)->region_->Address(offset);
}

xnn_status WeightsCache::DeleteFn(void*) { return xnn_status_success; }  // the caller's memory

}  // namespace tern::xnn
