#include "runtime/kernels/reference/embedding.h"

namespace tern::ref {

void Embedding(const WeightView& table, const int32_t* ids, int64_t count, float scale,
               float* out) {
  const int64_t d = table.cols;
  for (int64_t t = 0; t < count; ++t) {
    float* row = out + t * d;
    DequantizeRow(table, ids[t], row);
    if (scale != 1.0f) {
      for (int64_t c = 0; c < d; ++c) row[c] *= scale;
    }
  }
}

}  // namespace tern::ref
