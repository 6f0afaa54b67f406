#include "runtime/kernels/reference/linear.h"

namespace tern::ref {

namespace {

// One dot product per output: accumulate in float in k order, the order a vectorizing
// compiler keeps with -O2 (no -ffast-math), so results are reproducible across builds.
float DotF32(const float* a, const float* b, int64_t k) {
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void Linear(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
            float* y, int64_t ldy) {
  const int64_t n = w.rows;
  const int64_t k = w.cols;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    float* yi = y + i * ldy;
    for (int64_t j = 0; j < n; ++j) {
      float sum;
      if (w.dtype == DType::kF32) {
        sum = DotF32(xi, reinterpret_cast<const float*>(w.row(j)), k);
      } else {
        sum = 0.0f;
        for (int64_t c = 0; c < k; ++c) sum += xi[c] * WeightAt(w, j, c);
      }
      yi[j] = bias ? sum + bias[j] : sum;
    }
  }
}

}  // namespace tern::ref
