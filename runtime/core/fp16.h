// IEEE 754 binary16 <-> binary32 conversion in portable C++ (no F16C / NEON needed), exact for
// every value: round-to-nearest-even, subnormals, infinities and NaN preserved.
#pragma once

#include <cstdint>
#include <cstring>

namespace tern {

inline float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // Subnormal: normalize.
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3FFu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

inline uint16_t Fp32ToFp16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // Inf or NaN (keep NaN quiet).
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // Rounds to inf.
  if (abs < 0x38800000u) {               // Result is subnormal or zero.
    if (abs < 0x33000000u) return sign;  // Below half the smallest subnormal.
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 14..24
    uint32_t value = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (value & 1u))) ++value;
    return static_cast<uint16_t>(sign | value);
  }
  uint32_t value = abs - 0x38000000u;  // Rebias exponent 127 -> 15.
  const uint32_t rest = value & 0x1FFFu;
  value >>= 13;
  if (rest > 0x1000u || (rest == 0x1000u && (value & 1u))) ++value;
  return static_cast<uint16_t>(sign | value);
}

// An fp16 value in memory (the K/V caches' element with Limits::kv_cache = kFloat16): a type of
// its own, so that a cache of halves cannot be passed where floats are expected.
struct Half {
  uint16_t bits;
};

inline float ToFloat(Half h) { return Fp16ToFp32(h.bits); }
inline float ToFloat(float x) { return x; }  // for kernels templated on the element type
inline Half ToHalf(float f) { return Half{Fp32ToFp16(f)}; }

}  // namespace tern
