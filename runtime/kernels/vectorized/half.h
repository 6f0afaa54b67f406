// fp16 <-> float for the vectorizable loops (fp16 K/V caches, Limits::kv_cache): written so that
// a loop of them vectorizes: AArch64's fcvtl / fcvtn, x86's F16C vcvtps2ph for Narrow (AVX2
// clones), and branch-free integer arithmetic for Widen elsewhere.
// Exact both ways: Widen gives the value of the half (ref's Fp16ToFp32), Narrow rounds to
// nearest even as Fp32ToFp16 does (NaN payloads aside), so the loops and the reference agree.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/fp16.h"

namespace tern::vec {

inline float Widen(Half h) {
#if defined(__aarch64__)
  __fp16 f;
  std::memcpy(&f, &h, sizeof f);
  return static_cast<float>(f);
#else
  // Branch-free (Maratos' FP16 library): normals and inf/NaN by rebiasing the exponent with a
  // multiply by 2^-112, subnormals through a magic number. GCC 12 does not vectorize x86's
  // _Float16 -> float conversions (each became a vpinsrw + vcvtph2ps), these integer and float
  // operations it does (AVX2 in the x86-64-v3 clones, SSE2 otherwise).
  const uint32_t w = static_cast<uint32_t>(h.bits) << 16;
  const uint32_t two_w = w + w;
  const uint32_t normal_bits = (two_w >> 4) + (0xE0u << 23);
  const uint32_t subnormal_bits = (two_w >> 17) | (126u << 23);
  float normal, subnormal;
  std::memcpy(&normal, &normal_bits, sizeof normal);
  std::memcpy(&subnormal, &subnormal_bits, sizeof subnormal);
  normal *= 0x1.0p-112f;
  subnormal -= 0.5f;
  uint32_t n, s;
  std::memcpy(&n, &normal, sizeof n);
  std::memcpy(&s, &subnormal, sizeof s);
  const uint32_t bits = (w & 0x80000000u) | (two_w < (1u << 27) ? s : n);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

inline float Widen(float x) { return x; }  // for loops templated on the K/V element type

inline Half Narrow(float x) {
#if defined(__x86_64__) && defined(__FLT16_MAX__) && defined(__GNUC__) && !defined(__clang__)
  const _Float16 f = static_cast<_Float16>(x);
  Half h;
  std::memcpy(&h, &f, sizeof h);
  return h;
#elif defined(__aarch64__)
  const __fp16 f = static_cast<__fp16>(x);
  Half h;
  std::memcpy(&h, &f, sizeof h);
  return h;
#else
  return ToHalf(x);
#endif
}

// y[0, n) = x[0, n) widened: one row of an fp16 cache, in a loop of its own (vectorized).
__attribute__((always_inline)) inline void WidenRow(const Half* x, int64_t n, float* y) {
#if defined(__aarch64__)
  typedef __fp16 __attribute__((may_alias)) F16;
  const F16* h = reinterpret_cast<const F16*>(x);
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(h[i]);
#else
  for (int64_t i = 0; i < n; ++i) y[i] = Widen(x[i]);
#endif
}

// The largest finite half: values beyond it are stored as it (saturated), not as infinity, so
// that an outlier in K or V cannot turn a softmax into NaN. NaN stays NaN.
inline float Saturate(float x) {
  x = x > 65504.0f ? 65504.0f : x;
  return x < -65504.0f ? -65504.0f : x;
}

// y[i] = x[i] saturated to fp16's range and rounded to fp16, i < n: a K/V row on its way into a
// cache.
void ToHalf(const float* x, int64_t n, Half* y);

}  // namespace tern::vec
