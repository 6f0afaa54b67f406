#include "runtime/kernels/reference/layer_norm.h"

#include <cmath>

namespace tern::ref {

void LayerNorm(const float* x, int64_t m, int64_t d, const float* gamma, const float* beta,
               float eps, NormKind kind, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * d;
    float* yi = y + i * d;
    // Two passes in double: mean first, then centered squares, which avoids the cancellation
    // of E[x^2] - E[x]^2 for rows with a large mean.
    double mean = 0.0;
    if (kind != NormKind::kRMSNorm) {
      for (int64_t c = 0; c < d; ++c) mean += xi[c];
      mean /= static_cast<double>(d);
    }
    double squares = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      const double centered = xi[c] - mean;
      squares += centered * centered;
    }
    double inv;
    if (kind == NormKind::kLayerNormStdEps) {
      const double std_unbiased = d > 1 ? std::sqrt(squares / static_cast<double>(d - 1)) : 0.0;
      inv = 1.0 / (std_unbiased + eps);
    } else {
      inv = 1.0 / std::sqrt(squares / static_cast<double>(d) + eps);
    }
    for (int64_t c = 0; c < d; ++c) {
      const float normalized = static_cast<float>((xi[c] - mean) * inv);
      yi[c] = normalized * gamma[c] + (beta ? beta[c] : 0.0f);
    }
  }
}

}  // namespace tern::ref
