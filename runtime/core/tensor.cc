#include "runtime/core/tensor.h"

#include <cstring>

namespace tern {

void DequantizeRow(const WeightView& w, int64_t r, float* out) {
  if (w.dtype == DType::kF32) {
    std::memcpy(out, w.row(r), static_cast<size_t>(w.cols) * sizeof(float));
    return;
  }
  for (int64_t c = 0; c < w.cols; ++c) out[c] = WeightAt(w, r, c);
}

}  // namespace tern
