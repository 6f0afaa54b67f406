// y = x W^T + b for layers the XNNPACK backend has no operator for: int4 in blocks that are not
// a multiple of 32 dividing the row, int8 with several scales per row, and int4 blocks on CPUs
// where XNNPACK's blockwise GEMM is wrong (xnn::Qb4wTrusted). ref::Linear decodes every weight
// through WeightAt, one element at a time (0.1-0.2 GB/s of int4 on an AVX-512 machine): a
// paper-base model converted with --group-size 32 decoded a hundred times slower there than per
// row. These are float dot products with 16 partial sums in a fixed order (the weights
// unpacked a chunk at a time and shared by a tile of input rows).
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
