#include "runtime/kernels/vectorized/qd8.h"

#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

// Round to nearest even without a library call (rint is one on baseline x86-64): exact for
// |v| <= 2^22, and every value rounded here is within [-383, 383].
inline float RoundToEven(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  return (v + kMagic) - kMagic;
}

}  // namespace

TERN_VECTOR_CLONES Qd8Row Qd8Params(const float* x, int64_t k) {
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0
  for (int64_t c = 0; c < k; ++c) {
    lo = x[c] < lo ? x[c] : lo;
    hi = x[c] > hi ? x[c] : hi;
  }
  return Qd8ParamsOfRange(lo, hi);
}

Qd8Row Qd8ParamsOfRange(float lo, float hi) {
  // xnn_f32_qd8_asymmetric_quantization_params, step by step in float.
  const float qmin = -128.0f, qmax = 127.0f;
  const float scale = lo == hi ? 1.0f : (qmax - qmin) / (hi - lo);
  const float lo_scaled = lo * scale;
  const float hi_scaled = hi * scale;
  float zero_point =
      (qmin + lo_scaled) + (qmax + hi_scaled) > 0.0f ? qmin - lo_scaled : qmax - hi_scaled;
  // Written so that a NaN (a row with an infinity) clamps to qmin instead of reaching the
  // integer conversion.
  zero_point = zero_point >= qmin ? zero_point : qmin;
  zero_point = zero_point > qmax ? qmax : zero_point;
  Qd8Row p;
  p.zero_point = static_cast<int32_t>(RoundToEven(zero_point));
  p.inv_scale = 1.0f / scale;
  return p;
}

TERN_VECTOR_CLONES void QuantizeQd8(const float* x, Qd8Row p, int64_t count, int16_t* xq) {
  // The convert kernel multiplies by 1 / inv_scale (not the scale of Qd8Params: the round trip
  // can differ in the last bit), rounds to nearest even and saturates to int8.
  const float multiplier = 1.0f / p.inv_scale;
  const float max_less_zero_point = static_cast<float>(127 - p.zero_point);
  for (int64_t c = 0; c < count; ++c) {
    float v = x[c] * multiplier;
    v = v < max_less_zero_point ? v : max_less_zero_point;  // NaN too
    v = v > -383.0f ? v : -383.0f;                          // below -128 - zero point anyway
    int32_t q = static_cast<int32_t>(RoundToEven(v)) + p.zero_point;
    q = q < -128 ? -128 : q;
    xq[c] = static_cast<int16_t>(q - p.zero_point);
  }
}

Qd8Row QuantizeQd8(const float* x, int64_t k, int16_t* xq) {
  const Qd8Row p = Qd8Params(x, k);
  QuantizeQd8(x, p, k, xq);
  return p;
}

bool Qd8EpilogueFused() {
#if defined(__aarch64__)
  return true;
#elif defined(__x86_64__) || defined(__i386__)
  static const bool fused = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return fused;
#else
  return false;
#endif
}

}  // namespace tern::vec
