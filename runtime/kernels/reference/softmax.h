// Row-wise softmax, numerically stable (subtract the row maximum before exp). Rows whose every
// entry is -inf (fully masked) become all zeros instead of NaN.
#pragma once

#include <cstdint>

namespace tern::ref {

void SoftmaxRows(float* x, int64_t rows, int64_t cols);

}  // namespace tern::ref
