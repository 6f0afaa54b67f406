#include "runtime/kernels/reference/softmax.h"

#include <cmath>
#include <limits>

namespace tern::ref {

void SoftmaxRows(float* x, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * cols;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) max = row[c] > max ? row[c] : max;
    if (max == -std::numeric_limits<float>::infinity()) {
      for (int64_t c = 0; c < cols; ++c) row[c] = 0.0f;
      continue;
    }
    float sum = 0.0f;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = std::exp(row[c] - max);
      sum += row[c];
    }
    const float inv = 1.0f / sum;
    for (int64_t c = 0; c < cols; ++c) row[c] *= inv;
  }
}

}  // namespace tern::ref
