#include "runtime/kernels/vectorized/log_sum_exp.h"

#include <cmath>
#include <cstring>
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
int32_t ArgMax(const float* x, int64_t n) {
  // One pass: every lane keeps its largest value and where it first saw it (a compare and two
  // blends per vector; the row is read once, mostly from L3: the output projection has just
  // written it). GCC's vector types, because its vectorizer leaves this loop scalar when it is
  // written with arrays. NaN compares false, so it never enters a lane.
  // 8 lanes: one AVX2 register (two SSE ones); 16 made GCC spill the blends to the stack.
  constexpr int kWidth = 8;
  typedef float Floats __attribute__((vector_size(kWidth * sizeof(float))));
  typedef int32_t Ints __attribute__((vector_size(kWidth * sizeof(int32_t))));
  Floats lanes;
  Ints where, at;
  for (int l = 0; l < kWidth; ++l) {
    lanes[l] = kNegInf;
    where[l] = 0;
    at[l] = l;
  }
  const int32_t count = static_cast<int32_t>(n);
  int32_t i = 0;
  for (; i + kWidth <= count; i += kWidth) {
    Floats v;
    std::memcpy(&v, x + i, sizeof(v));
    const Ints larger = v > lanes;
    lanes = larger ? v : lanes;
    where = larger ? at : where;
    at += kWidth;
  }
  float max = kNegInf;
  int32_t best = count;
  for (int l = 0; l < kWidth; ++l) {  // equal maxima: the lowest index
    if (lanes[l] > max || (lanes[l] == max && max != kNegInf && where[l] < best)) {
      max = lanes[l];
      best = where[l];
    }
  }
  for (; i < count; ++i) {
    if (x[i] > max) {
      max = x[i];
      best = i;
    }
  }
  if (max != kNegInf) return best;
  // Nothing above -inf (a fully masked row, or NaNs): the first -inf, else 0.
  for (i = 0; i < count; ++i) {
    if (x[i] == kNegInf) return i;
  }
  return 0;
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
