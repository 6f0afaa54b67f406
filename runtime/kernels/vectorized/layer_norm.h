// LayerNorm as vectorizable float loops (XNNPACK has none; the XNNPACK backend runs these): the
// contract of ref::LayerNorm (runtime/kernels/reference/layer_norm.h), in float with 16-lane
// partial sums so it vectorizes; the reference accumulates in double. Agrees with it to float
// rounding for rows of ordinary magnitude.
#pragma once

#include <cstdint>

#include "runtime/kernels/reference/layer_norm.h"

namespace tern::vec {

void LayerNorm(const float* x, int64_t m, int64_t d, const float* gamma, const float* beta,
               float eps, ref::NormKind kind, float* y);

}  // namespace tern::vec
