// Branch-free float math of the vectorizable loops (kernels/vectorized/), written so compilers
// vectorize the loops that call it (no library calls, no data-dependent branches).
#pragma once

#include <cstdint>
#include <cstring>

// On x86-64 the calling loops are compiled for the baseline and for AVX2 (x86-64-v3), picked
// at load time; elsewhere for the target's own vector unit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define TERN_VECTOR_CLONES __attribute__((target_clones("default", "arch=x86-64-v3")))
#else
#define TERN_VECTOR_CLONES
#endif

namespace tern::vec {

// The two signed nibbles of a packed int4 byte (low first, as Int4At reads them), without
// branches: the sign comes from the arithmetic shift. Forced inline so each target_clones copy
// of a calling loop gets its own.
__attribute__((always_inline)) inline int Int4Low(uint8_t b) {
  return static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4;
}
__attribute__((always_inline)) inline int Int4High(uint8_t b) {
  return static_cast<int8_t>(b) >> 4;
}

// e^y, relative error about 1e-7 (Cephes' expf polynomial after y = n ln2 + r, |r| <= ln2/2).
// y is clamped to [-87, 88], so the result is a finite normal float (e^-87 ~ 1.6e-38 stands in
// for smaller values, e^88 ~ 1.7e38 for larger ones).
inline float Exp(float y) {
  y = y > -87.0f ? y : -87.0f;
  y = y < 88.0f ? y : 88.0f;
  const float k = (y * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = (y - k * 0.693359375f) + k * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(k) + 127) * (1 << 23);
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// erf(x), absolute error below 1e-6: a rational minimax approximation on [-4, 4] (the one
// Eigen and TensorFlow use); |x| > 4 gives +-1 to float precision.
inline float Erf(float x) {
  x = x < 4.0f ? x : 4.0f;
  x = x > -4.0f ? x : -4.0f;
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  p = p * x;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return p / q;
}

}  // namespace tern::vec
