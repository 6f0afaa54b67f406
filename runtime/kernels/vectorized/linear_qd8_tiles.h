// The tile loops every integer-loops width shares (linear_qd8.h): rows of x in tiles, each
// row's quantization parameters over its whole width, then chunks of 1024 columns whose partial
// sums go to y; and the per-row epilogue. Internal to runtime/kernels/vectorized.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/core/tensor.h"
#include "runtime/kernels/vectorized/qd8.h"

namespace tern::vec::qd8_loops {

constexpr int64_t kTile = 8;      // rows of x quantized together, sharing each unpacked weight row
constexpr int64_t kChunk = 1024;  // columns quantized at a time: the tile takes 16 KiB of stack

inline int64_t BlockOf(const WeightView& w) { return w.group_size > 0 ? w.group_size : w.cols; }

// One scale per row: the loops keep each output's exact int32 sum (in y's memory, as bits) over
// the chunks, and the epilogue scales it as XNNPACK's qd8_f32_qc8w / qc4w GEMMs do (Qd8Output),
// so such a layer gives those operators' bits where their kernels are wrong (kernel_check.h),
// and the shortlist's row kernel (LinearRowsQd8) gives its candidates the same logits.
inline bool PerRow(const WeightView& w) { return w.groups_per_row() == 1; }

// The bytes [p, p + n) prefetched a share per step: the 64-byte lines of step s of `steps`.
// (For weights a loop reads several rows of side by side, which the hardware prefetchers do
// not run ahead of.)
inline void PrefetchShare(const uint8_t* p, int64_t n, int64_t s, int64_t steps) {
  const int64_t lines = (n + 63) / 64, per = (lines + steps - 1) / steps;
  for (int64_t l = s * per; l < std::min(lines, (s + 1) * per); ++l) __builtin_prefetch(p + 64 * l);
}

// The bytes of int4 weight rows [r, r + rows) from column c0 on, up to the weight's end: what a
// loop prefetches ahead of the rows it reads (PrefetchShare); none when rows <= 0.
struct RowsAhead {
  const uint8_t* p = nullptr;
  int64_t bytes = 0;
};
inline RowsAhead RowsAheadOf(const WeightView& w, int64_t r, int64_t rows, int64_t c0) {
  if (rows <= 0) return {w.row(0), 0};
  const uint8_t* p = w.row(r) + c0 / 2;
  return {p, std::min<int64_t>(rows * static_cast<int64_t>(w.row_bytes()), w.row(w.rows) - p)};
}

// Adds a chunk's int32 sum to the one y holds (c0 == 0: stores it).
inline void AddSum(float* out, int64_t c0, int32_t sum) {
  if (c0 != 0) {
    int32_t held;
    std::memcpy(&held, out, sizeof held);
    sum += held;
  }
  std::memcpy(out, &sum, sizeof sum);
}

// The part of the loops both versions share: tiles of rows, each row's quantization parameters
// over its whole width, then chunks of kColumns columns. chunk(c0, c1, tile, y of the tile) adds
// each row's partial sums over [c0, c1) to y (the first chunk stores them); the epilogue multiplies
// by the row's dequantization scale and adds the bias. The loops of a width may bring their own
// params(x, k) -> Qd8Row (the same values as Qd8Params) and per-row epilogue(y row, inv_scale,
// bias) (the same bits as Qd8Output).
struct ScalarRows {
  Qd8Row params(const float* x, int64_t k) const { return Qd8Params(x, k); }
  void epilogue(const WeightView& w, float* yi, float inv_scale, const float* bias) const {
    const bool fused = Qd8EpilogueFused();
    for (int64_t r = 0; r < w.rows; ++r) {
      int32_t sum;
      std::memcpy(&sum, yi + r, sizeof sum);  // k == 0: the 0.0f of Tiles, 0 as bits
      yi[r] = Qd8Output(sum, inv_scale, w.scales[r], bias != nullptr ? bias + r : nullptr, fused);
    }
  }
};

template <int64_t kRows = kTile, int64_t kColumns = kChunk, typename Quantize, typename Chunk,
          typename Rows = ScalarRows>
__attribute__((always_inline)) inline void Tiles(const float* x, int64_t m, int64_t ldx,
                                                 const WeightView& w, const float* bias, float* y,
                                                 int64_t ldy, Quantize quantize, Chunk chunk,
                                                 Rows rows = Rows()) {
  const int64_t n = w.rows, k = w.cols;
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    const int64_t tile = std::min(kRows, m - i0);
    if (k == 0) {  // no chunks: the sums are empty
      for (int64_t t = 0; t < tile; ++t) std::fill_n(y + (i0 + t) * ldy, n, 0.0f);
    }
    Qd8Row p[kRows];
    for (int64_t t = 0; t < tile; ++t) p[t] = rows.params(x + (i0 + t) * ldx, k);
    for (int64_t c0 = 0; c0 < k; c0 += kColumns) {
      const int64_t c1 = std::min(k, c0 + kColumns);
      for (int64_t t = 0; t < tile; ++t) quantize(t, x + (i0 + t) * ldx + c0, p[t], c1 - c0);
      chunk(c0, c1, tile, y + i0 * ldy);
    }
    for (int64_t t = 0; t < tile; ++t) {
      float* yi = y + (i0 + t) * ldy;
      const float inv_scale = p[t].inv_scale;
      if (PerRow(w)) {
        rows.epilogue(w, yi, inv_scale, bias);
        continue;
      }
      for (int64_t r = 0; r < n; ++r) {
        const float v = yi[r] * inv_scale;
        yi[r] = bias != nullptr ? v + bias[r] : v;
      }
    }
  }
}

}  // namespace tern::vec::qd8_loops
