// Element-wise activations of the position-wise FFN (paper eq. 2 uses ReLU; later models GELU
// and Swish/SiLU). In place over n values.
#pragma once

#include <cstdint>

namespace tern::ref {

enum class Activation : uint8_t { kReLU = 0, kGELU = 1, kSwish = 2, kGELUTanh = 3 };

void Relu(float* x, int64_t n);
void Gelu(float* x, int64_t n);      // x * Phi(x), exact erf form.
void GeluTanh(float* x, int64_t n);  // tanh approximation (GPT-2).
void Swish(float* x, int64_t n);     // x * sigmoid(x).
void Activate(Activation act, float* x, int64_t n);

}  // namespace tern::ref
