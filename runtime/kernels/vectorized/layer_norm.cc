#include "runtime/kernels/vectorized/layer_norm.h"

#include <cmath>

#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int kLanes = 16;

// sum over c of (x[c] - shift)^power for power 1 or 2, in lanes, combined in double.
template <int kPower>
inline double SumPower(const float* x, int64_t n, float shift) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float v = x[i + l] - shift;
      acc[l] += kPower == 1 ? v : v * v;
    }
  }
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  for (; i < n; ++i) {
    const float v = x[i] - shift;
    sum += kPower == 1 ? v : v * v;
  }
  return sum;
}

}  // namespace

TERN_VECTOR_CLONES
void LayerNorm(const float* x, int64_t m, int64_t d, const float* gamma, const float* beta,
               float eps, ref::NormKind kind, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * d;
    float* yi = y + i * d;
    const float mean = kind == ref::NormKind::kRMSNorm
                           ? 0.0f
                           : static_cast<float>(SumPower<1>(xi, d, 0.0f) / static_cast<double>(d));
    const double squares = SumPower<2>(xi, d, mean);
    double inv;
    if (kind == ref::NormKind::kLayerNormStdEps) {
      const double std_unbiased = d > 1 ? std::sqrt(squares / static_cast<double>(d - 1)) : 0.0;
      inv = 1.0 / (std_unbiased + eps);
    } else {
      inv = 1.0 / std::sqrt(squares / static_cast<double>(d) + eps);
    }
    const float scale = static_cast<float>(inv);
    if (beta != nullptr) {
      for (int64_t c = 0; c < d; ++c) yi[c] = (xi[c] - mean) * scale * gamma[c] + beta[c];
    } else {
      for (int64_t c = 0; c < d; ++c) yi[c] = (xi[c] - mean) * scale * gamma[c];
    }
  }
}

}  // namespace tern::vec
