// A layer's linear map y = x W^T + b through the kernel prepare chose for it (ops::Linear).
#pragma once

#include <cstdint>

#include "runtime/kernels/ops.h"
#include "runtime/nn/weights.h"

namespace tern {

inline void Linear(const float* x, int64_t m, int64_t ldx, const LinearWeights& w, float* y,
                   int64_t ldy) {
  ops::Linear(x, m, ldx, w.weight, w.bias, w.kernel, y, ldy);
}

}  // namespace tern
