#include "runtime/core/tensor.h"

#include <cstring>

namespace tern {

void DequantizeRow(const WeightView& w, int64_t r, float* out) {
  if (w.dtype == DType::kF32) {
    std::memcpy(out, w.row(r), static_cast<size_t>(w.cols) * sizeof(float));
    return;
  }
  if (w.dtype == DType::kI8 || w.dtype == DType::kI4) {
    // WeightAt's value (scale * q, the same product) with the dtype and the scale decided once
    // per group instead of per element, so the int8 loop vectorizes: this is the embedding
    // lookup of every token of every decoder step.
    const uint8_t* row = w.row(r);
    const int64_t group = w.group_size > 0 ? w.group_size : w.cols;
    for (int64_t c0 = 0; c0 < w.cols; c0 += group) {
      const int64_t c1 = c0 + group < w.cols ? c0 + group : w.cols;
      const float scale = w.scale(r, c0);
      if (w.dtype == DType::kI8) {
        const int8_t* __restrict q = reinterpret_cast<const int8_t*>(row);
        float* __restrict y = out;
        for (int64_t c = c0; c < c1; ++c) y[c] = scale * static_cast<float>(q[c]);
      } else {
        for (int64_t c = c0; c < c1; ++c) out[c] = scale * static_cast<float>(Int4At(row, c));
      }
    }
    return;
  }
  for (int64_t c = 0; c < w.cols; ++c) out[c] = WeightAt(w, r, c);
}

}  // namespace tern
