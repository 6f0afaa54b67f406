// The float loops between the linear layers (LayerNorm, residual adds, activations) split over
// the session's thread pool by rows, when their governor measures that faster.
//
// In the encoder every one of them runs over all the batch's tokens (512 rows x 512 or x 2048
// floats for 16 sentences of 32 tokens): on the calling thread that is time the pool's worker
// spends waiting, which the layers' cut and grouped operators no longer hide. Every row is
// computed by the same loop either way (an activation's elements: split at multiples of 64),
// so the bits do not depend on the choice.
#pragma once

#include <cstdint>

#include "runtime/kernels/xnnpack/pool_governor.h"

struct pthreadpool;

namespace tern::xnn {

enum class RowLoop : uint8_t { kLayerNorm = 0, kAdd = 1, kActivate = 2 };
inline constexpr int kRowLoops = 3;

// Per session (in the arena), with a pool.
struct RowLoops {
  pthreadpool* pool = nullptr;
  PoolBudget* budget = nullptr;  // the session's (xnn::Context's)
  RowClassGovernors governors[kRowLoops];
};

// Runs loop(context, begin, end) over rows [0, rows) of `units` units of work (elements): on the
// pool as one task per thread (consecutive rows each), or once on the calling thread, as
// loop's governor (by kind and row count) chooses. Returns false, having run nothing, without a
// pool or for a single row: the caller runs the loop itself.
bool ForRows(RowLoops& loops, RowLoop kind, int64_t rows, float units,
             void (*loop)(void* context, int64_t begin, int64_t end), void* context);

}  // namespace tern::xnn
