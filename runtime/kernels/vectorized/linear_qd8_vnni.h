// AVX-512 VNNI loops of vec::LinearQd8 (linear_qd8.h) for int4 with one scale per row, and the
// pieces the AMX loops (linear_qd8_amx.h) share with them. x86-64 only; internal.
#pragma once

#if defined(__x86_64__)
#include <cstdint>

#include "runtime/core/tensor.h"
#include "runtime/kernels/vectorized/linear_qd8_tiles.h"
#include "runtime/kernels/vectorized/qd8.h"

#define TERN_VNNI_TARGET "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma"

namespace tern::vec::qd8_loops {

constexpr int64_t kVnniStep = 64;  // columns per vpdpbusd

// Qd8Params and QuantizeQd8's epilogue in 16 lanes, for rows of whole steps of 64 columns.
struct VnniRowsOps {
  __attribute__((target(TERN_VNNI_TARGET))) Qd8Row params(const float* x, int64_t k) const;
  __attribute__((target(TERN_VNNI_TARGET))) void epilogue(const WeightView& w, float* yi,
                                                          float inv_scale, const float* bias) const;
};

// count values of a row (a whole number of steps) quantized as QuantizeQd8 quantizes them, as q
// (int8) in VNNI's order (per 64 columns: the 32 even ones, then the 32 odd); returns their sum.
__attribute__((target(TERN_VNNI_TARGET))) int32_t QuantizeVnni(const float* x, Qd8Row p,
                                                               int64_t count, int8_t* out);

// The tile's exact sums of (q - zp) w over [c0, c1) for weight rows [r, rows), added to the
// int32 y holds (c0 == 0: stored); xq in QuantizeVnni's order (row t at xq + t * ldxq, from
// column c0), qsum its sums, zp the rows' zero points.
void VnniChunk(const WeightView& w, int64_t c0, int64_t c1, const int8_t* xq, int64_t ldxq,
               const int32_t* qsum, const int32_t* zp, int64_t tile, float* y, int64_t ldy,
               int64_t r = 0);

// One row of x (a batch-1 decode step) no wider than the tile's room (kTile x kChunk columns):
// quantized whole and summed as one chunk, so that each weight row is read in one pass. The tile
// loops read a row wider than kChunk a piece per pass, each pass a strided walk over all rows:
// 576 x 1536 int4 (a SmolLM-shaped FFN's W2) streamed at 10.2 GB/s against 12.3 for the layers
// one chunk covers. The same exact int32 sums, so the same bits. False (nothing done): not such
// a call.
bool VnniOneRow(const float* x, int64_t m, const WeightView& w, const float* bias, float* y);

// vec::LinearQd8 on these loops (int4 per row, rows of whole steps).
void VnniLoops(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
               float* y, int64_t ldy);

}  // namespace tern::vec::qd8_loops
#endif
