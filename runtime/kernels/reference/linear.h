// Linear layer y = x W^T + b (the projections W^Q, W^K, W^V, W^O, the FFN's W1 and W2, and the
// output projection). W is [n, k] (out, in) in any weight dtype; x is [m, k] f32 with row
// stride ldx; y is [m, n] with row stride ldy.
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::ref {

void Linear(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
            float* y, int64_t ldy);

}  // namespace tern::ref
