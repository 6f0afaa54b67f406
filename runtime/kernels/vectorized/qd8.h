// Rows of activations quantized to int8 as XNNPACK's qd8 fully-connected paths quantize them
// (XNNPACK 2024-11: xnn_f32_qd8_asymmetric_quantization_params and the f32-qs8-vcvt kernels), for
// the kernels that compute what those paths compute without an XNNPACK operator: the shortlist's
// row-indexed projection (linear_rows.h) and the layers XNNPACK has no operator for
// (linear_qd8.h).
#pragma once

#include <cmath>
#include <cstdint>

namespace tern::vec {

// A row's parameters: min and max of the row widened to include 0, a multiplier of
// 255 / (max - min) taken through its inverse and back as XNNPACK does, the zero point rounded
// to nearest even.
struct Qd8Row {
  int32_t zero_point = 0;
  float inv_scale = 1.0f;  // the dequantization scale the GEMM multiplies by
};

// The parameters of the k values at x.
Qd8Row Qd8Params(const float* x, int64_t k);

// The parameters of values whose minimum and maximum, each widened to include 0 as Qd8Params
// widens them (x < lo ? x : lo from lo = 0, so a NaN never enters), are lo and hi: for loops
// that find the range their own way.
Qd8Row Qd8ParamsOfRange(float lo, float hi);

// Writes q - zero_point (in [-255, 255]) for each of the count values at x into xq, where
// q = clamp(rint(x * multiplier) + zero point, -128, 127): a row quantized a piece at a time
// gives the same values as all at once.
void QuantizeQd8(const float* x, Qd8Row p, int64_t count, int16_t* xq);

// Both: the parameters of the k values at x, and the values quantized into xq.
Qd8Row QuantizeQd8(const float* x, int64_t k, int16_t* xq);

// One output of XNNPACK's qd8_f32_qc8w / qc4w GEMMs from the exact sum of a row of xq times a
// weight row: as their epilogue computes it, the sum times the row's dequantization scale (one
// rounding), then times the weight row's scale plus the bias, with one rounding where the
// epilogue fuses them (fused: Qd8EpilogueFused(), asked once per call by the caller) or two.
// bias: null for none. Inline: it runs per output of the shortlist's rows and the loops.
inline float Qd8Output(int32_t sum, float inv_scale, float row_scale, const float* bias,
                       bool fused) {
  const float scaled = static_cast<float>(sum) * inv_scale;
  if (bias == nullptr) return scaled * row_scale;
  if (fused) return std::fma(scaled, row_scale, *bias);
  volatile float product = scaled * row_scale;  // volatile: never contracted into an fma
  return product + *bias;
}

// Whether XNNPACK's qd8 GEMM epilogue fuses `scaled * row scale + bias` (one rounding) on this
// CPU: its AVX2 / AVX-512 / AVX-VNNI kernels and its aarch64 NEON C kernels do (vfmadd,
// vfmaq_f32); its SSE, armv7 NEON (vmlaq_f32) and scalar kernels multiply and add with two
// roundings. Without a bias both give the same bits. Not matched: the aarch64 / aarch32
// assembly kernels for dot-product CPUs without i8mm (4x16c4 neondot ld128 and cortex_a55),
// which XNNPACK runs for several rows and which fold the two scales into one product first:
// there XNNPACK's several-row calls agree with Qd8Output to rounding, not bitwise.
bool Qd8EpilogueFused();

}  // namespace tern::vec
