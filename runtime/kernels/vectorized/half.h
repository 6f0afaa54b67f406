// fp16 <-> float for the vectorizable loops (fp16 K/V caches, Limits::kv_cache): written so that
// a loop of them compiles to the CPU's conversion instructions (x86 F16C vcvtph2ps / vcvtps2ph in
// the AVX2 clones, AArch64 fcvtl / fcvtn) and elsewhere to branch-free integer arithmetic.
// Exact both ways: Widen gives the value of the half (ref's Fp16ToFp32), Narrow rounds to
// nearest even as Fp32ToFp16 does (NaN payloads aside), so the loops and the reference agree.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/fp16.h"

namespace tern::vec {

inline float Widen(Half h) {
#if defined(__x86_64__) && defined(__FLT16_MAX__) && defined(__GNUC__) && !defined(__clang__)
  _Float16 f;  // GCC 12+: F16C where the clone has it, libgcc's exact __extendhfsf2 otherwise
  std::memcpy(&f, &h, sizeof f);
  return static_cast<float>(f);
#elif defined(__aarch64__)
  __fp16 f;
  std::memcpy(&f, &h, sizeof f);
  return static_cast<float>(f);
#else
  // Branch-free (Maratos' FP16 library): normals and inf/NaN by rebiasing the exponent with a
  // multiply by 2^-112, subnormals through a magic number.
  const uint32_t two_w = (static_cast<uint32_t>(h.bits) << 16) * 2u;
  const uint32_t sign = (static_cast<uint32_t>(h.bits) << 16) & 0x80000000u;
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
  const uint32_t bits = sign | (two_w < (1u << 27) ? s : n);
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

// y[i] = x[i] rounded to fp16, i < n: a K/V row on its way into a cache.
void ToHalf(const float* x, int64_t n, Half* y);

}  // namespace tern::vec
