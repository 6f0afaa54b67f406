#include "runtime/kernels/reference/relative_position.h"

#include <cmath>

namespace tern::ref {

int32_t T5RelativePositionBucket(int64_t relative_position, bool bidirectional, int32_t num_buckets,
                                 int32_t max_distance) {
  int32_t bucket = 0;
  int64_t n;  // the distance, >= 0
  if (bidirectional) {
    num_buckets /= 2;
    if (relative_position > 0) bucket += num_buckets;  // keys to the right: the upper half
    n = relative_position < 0 ? -relative_position : relative_position;
  } else {
    n = relative_position < 0 ? -relative_position : 0;  // keys to the right share bucket 0
  }
  const int32_t max_exact = num_buckets / 2;
  if (n < max_exact) return bucket + static_cast<int32_t>(n);
  // max_exact + log(n / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact),
  // in float32 like T5's torch.log on a float tensor, truncated by .to(torch.long).
  const float ratio = std::log(static_cast<float>(n) / static_cast<float>(max_exact));
  const float denominator =
      static_cast<float>(std::log(static_cast<double>(max_distance) / max_exact));
  const float scaled = ratio / denominator * static_cast<float>(num_buckets - max_exact);
  int64_t large = max_exact + static_cast<int64_t>(scaled);
  if (large > num_buckets - 1) large = num_buckets - 1;
  return bucket + static_cast<int32_t>(large);
}

void T5BiasByDistance(const float* table, int64_t heads, int32_t num_buckets, int32_t max_distance,
                      bool bidirectional, int64_t max_length, float* out) {
  const int64_t span = 2 * max_length - 1;
  for (int64_t delta = -(max_length - 1); delta <= max_length - 1; ++delta) {
    const int32_t bucket =
        T5RelativePositionBucket(delta, bidirectional, num_buckets, max_distance);
    for (int64_t h = 0; h < heads; ++h)
      out[h * span + delta + max_length - 1] = table[bucket * heads + h];
  }
}

}  // namespace tern::ref
