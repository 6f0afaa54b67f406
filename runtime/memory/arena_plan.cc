#include "runtime/memory/arena_plan.h"

namespace tern {

void ArenaPlan::Bind(int id, const BufferBinding& binding) {
  if (count_ == GreedyPlanner::kMaxBuffers) {
    failed_ = true;
    return;
  }
  ids_[count_] = id;
  bindings_[count_] = binding;
  ++count_;
}

void ArenaPlan::Add(const BufferRequests& requests, int first, int last) {
  if (requests.overflow()) failed_ = true;
  for (int i = 0; i < requests.count(); ++i) {
    const BufferRequests::Request& r = requests.request(i);
    Bind(planner_.Add(r.name, r.bytes, first, last), r.binding);
  }
}

Status ArenaPlan::Plan() {
  if (failed_) {
    return Status::Error(StatusCode::kOutOfRange,
                         "memory plan is invalid: too many buffers or a size that overflows");
  }
  return planner_.Plan();
}

Status ArenaPlan::Place(void* arena, size_t bytes, uint8_t** base) const {
  TERN_RETURN_IF_ERROR(planner_.Place(arena, bytes, base));
  for (int i = 0; i < count_; ++i) {
    bindings_[i].point(bindings_[i].at, ids_[i] >= 0 ? *base + planner_.offset(ids_[i]) : nullptr);
  }
  return Status::Ok();
}

}  // namespace tern
