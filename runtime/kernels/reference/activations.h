// Element-wise activations of the position-wise FFN (paper eq. 2 uses ReLU; later models GELU
// and Swish/SiLU). In place over n values. SwiGLU (Shazeer 2020, "GLU Variants Improve
// Transformer"; LLaMA's FFN) is gated: FFN(x) = W2 (silu(W1 x) * (W3 x)); Activate applies its
// gate's nonlinearity (Swish) and the FFN multiplies by the up projection (Multiply).
#pragma once

#include <cstdint>

namespace tern::ref {

// kGeGLU (Shazeer 2020; Gemma's FFN): W2 (gelu_tanh(W1 x) * (W3 x)), the tanh GELU as gate.
enum class Activation : uint8_t {
  kReLU = 0,
  kGELU = 1,
  kSwish = 2,
  kGELUTanh = 3,
  kSwiGLU = 4,
  kGeGLU = 5
};

// Whether the FFN is gated (a third linear fc3, the up projection, multiplies the activation).
inline bool IsGated(Activation act) {
  return act == Activation::kSwiGLU || act == Activation::kGeGLU;
}

void Relu(float* x, int64_t n);
void Gelu(float* x, int64_t n);                      // x * Phi(x), exact erf form.
void GeluTanh(float* x, int64_t n);                  // tanh approximation (GPT-2).
void Swish(float* x, int64_t n);                     // x * sigmoid(x).
void Activate(Activation act, float* x, int64_t n);  // kSwiGLU: Swish, kGeGLU: GeluTanh (gates)
// x[i] *= y[i]: SwiGLU's gate times its up projection.
void Multiply(float* x, const float* y, int64_t n);

}  // namespace tern::ref
