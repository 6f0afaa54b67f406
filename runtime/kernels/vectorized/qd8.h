// Rows of activations quantized to int8 as XNNPACK's qd8 fully-connected paths quantize them
// (XNNPACK 2024-11: xnn_f32_qd8_asymmetric_quantization_params and the f32-qs8-vcvt kernels), for
// the kernels that compute what those paths compute without an XNNPACK operator: the shortlist's
// row-indexed projection (linear_rows.h) and the layers XNNPACK has no operator for
// (linear_qd8.h).
#pragma once

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

// Writes q - zero_point (in [-255, 255]) for each of the count values at x into xq, where
// q = clamp(rint(x * multiplier) + zero point, -128, 127): a row quantized a piece at a time
// gives the same values as all at once.
void QuantizeQd8(const float* x, Qd8Row p, int64_t count, int16_t* xq);

// Both: the parameters of the k values at x, and the values quantized into xq.
Qd8Row QuantizeQd8(const float* x, int64_t k, int16_t* xq);

}  // namespace tern::vec
