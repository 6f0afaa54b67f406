// A GreedyPlanner whose buffers know where their pointers go: each Add names a buffer, its
// element count, its lifetime and the pointer Place sets to it (whose type gives the element
// size), so a model declares a buffer once instead of keeping an id from planning until Prepare.
// RequiredArenaBytes and Prepare run the same Adds; only Place writes the pointers.
//
// BufferRequests are the buffers a model's caller needs in the same arena (the decoding
// algorithm's state: runtime/decoding/state.h). The caller lists them, the model plans them with
// its own buffers in the phase they are used in, so they share bytes with what is dead by then,
// and RequiredArenaBytes counts them: the model knows their sizes, not what they hold.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/memory/planner.h"

namespace tern {

// Where Place writes a buffer's address: a T* of the caller's, set through a function made for
// that T (no pointer is reinterpreted as a pointer of another type).
struct BufferBinding {
  void* at = nullptr;
  void (*point)(void* at, uint8_t* bytes) = nullptr;

  template <class T>
  static BufferBinding To(T** at) {
    return BufferBinding{at, [](void* p, uint8_t* bytes) {
                           *static_cast<T**>(p) = static_cast<T*>(static_cast<void*>(bytes));
                         }};
  }
};

class BufferRequests {
 public:
  static constexpr int kMax = 4;
  struct Request {
    const char* name;
    size_t bytes;
    BufferBinding binding;
  };

  // Asks for `count` T (64-byte aligned, as every planned buffer); Prepare sets *at.
  template <class T>
  void Add(const char* name, size_t count, T** at) {
    if (count_ < kMax) {
      requests_[count_] = Request{name, CheckedMul(count, sizeof(T)), BufferBinding::To(at)};
    } else {
      overflow_ = true;  // ArenaPlan turns this into a failed plan
    }
    ++count_;
  }
  int count() const { return count_ < kMax ? count_ : kMax; }
  const Request& request(int i) const { return requests_[i]; }
  bool overflow() const { return overflow_; }

 private:
  Request requests_[kMax] = {};
  int count_ = 0;
  bool overflow_ = false;
};

class ArenaPlan {
 public:
  // Adds a buffer of `count` T (bytes saturate: CheckedMul) alive in phases [first, last]; Place
  // points *at to it. when false: no buffer (an optional one, e.g. SwiGLU's up projection), and
  // Place sets *at to null.
  template <class T>
  void Add(const char* name, size_t count, int first, int last, T** at, bool when = true) {
    const int id = when ? planner_.Add(name, CheckedMul(count, sizeof(T)), first, last) : -1;
    Bind(id, BufferBinding::To(at));
  }
  // The caller's requests, each alive in [first, last].
  void Add(const BufferRequests& requests, int first, int last);

  Status Plan();
  // Places the plan in the caller's arena (*base: its aligned start) and sets every pointer.
  Status Place(void* arena, size_t bytes, uint8_t** base) const;

  // For the buffers planned by id (the backend's) and for inspection.
  GreedyPlanner& planner() { return planner_; }
  const GreedyPlanner& planner() const { return planner_; }

 private:
  void Bind(int id, const BufferBinding& binding);

  GreedyPlanner planner_;
  int ids_[GreedyPlanner::kMaxBuffers] = {};
  BufferBinding bindings_[GreedyPlanner::kMaxBuffers];
  int count_ = 0;
  bool failed_ = false;
};

}  // namespace tern
