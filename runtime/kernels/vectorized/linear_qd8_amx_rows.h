// AMX loops of vec::LinearQd8Rows (linear_qd8.h): int4 with one scale per row, on rows of x
// quantized once into a caller's scratch. x86-64 only, on CPUs whose OS grants the tile state
// (AmxPermitted, linear_qd8_amx.h); internal.
#pragma once

#if defined(__x86_64__)
#include <cstdint>

#include "runtime/core/tensor.h"
#include "runtime/kernels/vectorized/linear_qd8.h"

namespace tern::vec::qd8_loops {

// vec::QuantizeQd8Rows and vec::LinearQd8Rows on these loops.
void AmxQuantizeRows(const float* x, int64_t ldx, int64_t i0, int64_t i1,
                     const QuantizedRows& rows);
void AmxRows(const QuantizedRows& x, const WeightView& w, const float* bias, float* y, int64_t ldy);

}  // namespace tern::vec::qd8_loops
#endif
