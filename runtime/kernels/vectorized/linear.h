// y = x W^T + b in float for float weights the XNNPACK backend has no operator for (a path
// switched off, or missing on a CPU), and the float model of what the integer layers compute:
// int8 / int4 layers without an XNNPACK operator run linear_qd8.h, with activations quantized
// as XNNPACK's. ref::Linear decodes every weight through WeightAt, one element at a time
// (0.1-0.2 GB/s of int4 on an AVX-512 machine); these are float dot products with 16 partial
// sums in a fixed order (the weights unpacked a chunk at a time and shared by a tile of input
// rows).
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace tern::vec {

// What ref::Linear computes, to rounding: y[i, :] = x[i, :] W^T + b for i < m (row strides ldx,
// ldy in elements; bias may be null). Every weight dtype (f32, f16, int8, int4; int32, which no
// linear layer has, as WeightAt reads it).
void Linear(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
            float* y, int64_t ldy);

}  // namespace tern::vec
