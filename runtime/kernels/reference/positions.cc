#include "runtime/kernels/reference/positions.h"

#include <cmath>

namespace tern::ref {

void SinusoidalPositions(int64_t start, int64_t count, int64_t d_model, SinusoidLayout layout,
                         float* out) {
  for (int64_t t = 0; t < count; ++t) {
    const double pos = static_cast<double>(start + t);
    float* row = out + t * d_model;
    if (layout == SinusoidLayout::kInterleaved) {
      for (int64_t i = 0; 2 * i < d_model; ++i) {
        const double angle =
            pos / std::pow(10000.0, static_cast<double>(2 * i) / static_cast<double>(d_model));
        row[2 * i] = static_cast<float>(std::sin(angle));
        if (2 * i + 1 < d_model) row[2 * i + 1] = static_cast<float>(std::cos(angle));
      }
    } else if (layout == SinusoidLayout::kSplitHalves) {
      // transformers' MarianSinusoidalPositionalEmbedding: column j < ceil(d/2) is
      // sin(pos / 10000^(2j/d)), column ceil(d/2) + j is cos(pos / 10000^((2j+1 rounded down to
      // even)/d)) — the same frequencies as the paper, split into halves.
      const int64_t sentinel = (d_model + 1) / 2;
      for (int64_t j = 0; j < sentinel; ++j) {
        row[j] = static_cast<float>(std::sin(
            pos / std::pow(10000.0, static_cast<double>(2 * j) / static_cast<double>(d_model))));
      }
      for (int64_t j = 0; sentinel + j < d_model; ++j) {
        row[sentinel + j] = static_cast<float>(std::cos(
            pos / std::pow(10000.0, static_cast<double>(2 * j) / static_cast<double>(d_model))));
      }
    } else {
      const int64_t half = d_model / 2;
      const double step = half > 1 ? std::log(10000.0) / static_cast<double>(half - 1) : 0.0;
      for (int64_t i = 0; i < half; ++i) {
        const double angle = pos * std::exp(-step * static_cast<double>(i));
        row[i] = static_cast<float>(std::sin(angle));
        row[half + i] = static_cast<float>(std::cos(angle));
      }
      if (d_model % 2) row[d_model - 1] = 0.0f;
    }
  }
}

void AddRows(float* x, const float* rows, int64_t count, int64_t d_model) {
  const int64_t n = count * d_model;
  for (int64_t i = 0; i < n; ++i) x[i] += rows[i];
}

}  // namespace tern::ref
