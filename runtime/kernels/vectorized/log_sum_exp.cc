#include "runtime/kernels/vectorized/log_sum_exp.h"

#include <cmath>
#include <limits>

#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

constexpr int kLanes = 16;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace

TERN_VECTOR_CLONES
float Max(const float* x, int64_t n) {
  float lanes[kLanes];
  for (float& l : lanes) l = kNegInf;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  }
  float max = kNegInf;
  for (float l : lanes) max = l > max ? l : max;
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

TERN_VECTOR_CLONES
float LogSumExp(const float* x, int64_t n) {
  const float max = Max(x, n);
  if (max == kNegInf) return kNegInf;
  // x_i - max <= 0; vec::Exp clamps below -87 to e^-87 ~ 1.6e-38, so -inf entries add at most
  // n * 1.6e-38 to a sum that is at least 1 (the maximum's own term): nothing at float
  // precision.
  // Float lanes over blocks of 16 terms each, flushed into double: the float partial sums
  // stay short (relative error ~16 roundings, not n / 16), the exps stay vectorized.
  constexpr int64_t kBlock = kLanes * 16;
  double sum = 0.0;
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float lanes[kLanes] = {};
    for (int64_t j = i; j < i + kBlock; j += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += Exp(x[j + l] - max);
    }
    for (float l : lanes) sum += l;
  }
  for (; i < n; ++i) sum += Exp(x[i] - max);
  return max + static_cast<float>(std::log(sum));
}

}  // namespace tern::vec
