#include "runtime/kernels/xnnpack/allocator.h"

#include <xnnpack.h>

#include <cstdlib>
#include <cstring>

namespace tern::xnn {

namespace {

constexpr uint32_t kMagic = 0x74726E78u;  // "xnrt"
enum class Origin : uint32_t { kHeap = 1, kArena = 2 };

// Sits right before every block handed to XNNPACK.
struct alignas(kBlockAlignment) Header {
  uint32_t magic;
  Origin origin;
  size_t size;       // bytes the caller asked for
  void* heap_start;  // what to pass to free() (heap blocks)
};
static_assert(sizeof(Header) == kBlockAlignment, "header must keep blocks aligned");

enum class Mode { kNone, kArena, kMeasure };
struct Current {
  Mode mode = Mode::kNone;
  ArenaScope* arena = nullptr;
  MeasureScope* measure = nullptr;
};
thread_local Current t_current;

size_t RoundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

Header* HeaderOf(void* p) {
  return reinterpret_cast<Header*>(static_cast<uint8_t*>(p) - sizeof(Header));
}

void* HeapAllocate(size_t size, size_t alignment) {
  if (alignment < kBlockAlignment) alignment = kBlockAlignment;
  if (size > SIZE_MAX / 2) return nullptr;
  const size_t total = alignment + RoundUp(size, kBlockAlignment);
  void* start = std::malloc(total + alignment);
  if (start == nullptr) return nullptr;
  const uintptr_t raw = reinterpret_cast<uintptr_t>(start) + sizeof(Header);
  uint8_t* block = reinterpret_cast<uint8_t*>(RoundUp(raw, alignment));
  Header* h = HeaderOf(block);
  h->magic = kMagic;
  h->origin = Origin::kHeap;
  h->size = size;
  h->heap_start = start;
  return block;
}

void* Allocate(size_t size, size_t alignment) {
  switch (t_current.mode) {
    case Mode::kArena:
      return t_current.arena->Allocate(size, alignment);
    case Mode::kMeasure:
      return t_current.measure->Allocate(size, alignment);
    case Mode::kNone:
      break;
  }
  return HeapAllocate(size, alignment);
}

void Release(void* p) {
  if (p == nullptr) return;
  Header* h = HeaderOf(p);
  if (h->magic != kMagic) return;  // Not ours: never free what we cannot identify.
  if (h->origin == Origin::kHeap) {
    h->magic = 0;
    std::free(h->heap_start);
  }
  // Arena blocks: the region is released with its session.
}

void* Reallocate(void* p, size_t size) {
  if (p == nullptr) return Allocate(size, kBlockAlignment);
  Header* h = HeaderOf(p);
  if (h->magic != kMagic) return nullptr;
  void* fresh = Allocate(size, kBlockAlignment);
  if (fresh == nullptr) return nullptr;  // The old block stays valid, as realloc promises.
  std::memcpy(fresh, p, h->size < size ? h->size : size);
  Release(p);
  return fresh;
}

void* XnnAllocate(void*, size_t size) { return Allocate(size, kBlockAlignment); }
void* XnnReallocate(void*, void* p, size_t size) { return Reallocate(p, size); }
void XnnDeallocate(void*, void* p) { Release(p); }
void* XnnAlignedAllocate(void*, size_t alignment, size_t size) { return Allocate(size, alignment); }
void XnnAlignedDeallocate(void*, void* p) { Release(p); }

const xnn_allocator kAllocator = {nullptr,       XnnAllocate,        XnnReallocate,
                                  XnnDeallocate, XnnAlignedAllocate, XnnAlignedDeallocate};

Status InitializeOnce() {
  const xnn_status status = xnn_initialize(&kAllocator);
  if (status != xnn_status_success) {
    return Status::Error(StatusCode::kNotSupported, "xnn_initialize failed (status %d)%s",
                         static_cast<int>(status),
                         status == xnn_status_unsupported_hardware ? ": unsupported CPU" : "");
  }
  // XNNPACK keeps the first allocator it is given: check that ours is the one.
  MeasureScope probe;
  xnn_operator_t op = nullptr;
  const xnn_status created = xnn_create_convert_nc_f32_qd8(0, &op);
  const int seen = probe.requests();
  if (created == xnn_status_success) xnn_delete_operator(op);
  if (seen == 0) {
    return Status::Error(StatusCode::kNotSupported,
                         "XNNPACK was initialized before tern without tern's allocator; its memory "
                         "cannot come from the arena");
  }
  return Status::Ok();
}

}  // namespace

size_t Footprint(size_t size, size_t alignment) {
  const size_t lead = alignment > kBlockAlignment ? alignment : kBlockAlignment;
  if (size > SIZE_MAX / 2) return SIZE_MAX;
  return lead + RoundUp(size, kBlockAlignment);
}

Status Initialize() {
  static const Status status = InitializeOnce();
  return status;
}

static_assert(sizeof(Current) <= 3 * sizeof(void*), "saved_ holds a Current");

ArenaScope::ArenaScope(void* begin, size_t bytes)
    : begin_(static_cast<uint8_t*>(begin)), capacity_(bytes) {
  std::memcpy(saved_, &t_current, sizeof(Current));
  t_current.mode = Mode::kArena;
  t_current.arena = this;
  t_current.measure = nullptr;
}

ArenaScope::~ArenaScope() { std::memcpy(&t_current, saved_, sizeof(Current)); }

void* ArenaScope::Allocate(size_t size, size_t alignment) {
  const size_t need = Footprint(size, alignment);
  if (need == SIZE_MAX || need > capacity_ - used_) {
    overflowed_ = true;
    return nullptr;
  }
  // begin_ + used_ is 64-aligned; the block starts at the next `alignment` boundary that leaves
  // room for the header. Footprint reserved enough for the worst case.
  const size_t lead = alignment > kBlockAlignment ? alignment : kBlockAlignment;
  const uintptr_t start = reinterpret_cast<uintptr_t>(begin_ + used_) + sizeof(Header);
  uint8_t* block = reinterpret_cast<uint8_t*>(RoundUp(start, lead));
  used_ += need;
  Header* h = HeaderOf(block);
  h->magic = kMagic;
  h->origin = Origin::kArena;
  h->size = size;
  h->heap_start = nullptr;
  return block;
}

void* AllocateInArenaScope(size_t size, size_t alignment) {
  return t_current.mode == Mode::kArena ? t_current.arena->Allocate(size, alignment) : nullptr;
}

MeasureScope::MeasureScope(size_t refuse_above) : refuse_above_(refuse_above) {
  std::memcpy(saved_, &t_current, sizeof(Current));
  t_current.mode = Mode::kMeasure;
  t_current.arena = nullptr;
  t_current.measure = this;
}

MeasureScope::~MeasureScope() { std::memcpy(&t_current, saved_, sizeof(Current)); }

void* MeasureScope::Allocate(size_t size, size_t alignment) {
  ++requests_;
  const size_t need = Footprint(size, alignment);
  bytes_ = need > SIZE_MAX - bytes_ ? SIZE_MAX : bytes_ + need;
  if (refused_) return nullptr;
  if (size > refuse_above_) {
    refused_ = true;
    return nullptr;
  }
  return HeapAllocate(size, alignment);
}

}  // namespace tern::xnn
