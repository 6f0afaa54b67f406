#include "runtime/kernels/vectorized/activations.h"

#include "runtime/kernels/vectorized/denormals.h"
#include "runtime/kernels/vectorized/vector_math.h"

namespace tern::vec {

namespace {

TERN_VECTOR_CLONES
void Gelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + Erf(x[i] * 0.70710678118654752f));
}

TERN_VECTOR_CLONES
void GeluTanh(float* x, int64_t n) {
  const float k = 0.79788456080286536f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = k * (v + 0.044715f * v * v * v);
    // 1 + tanh(u) = 2 - 2 / (e^(2u) + 1)
    x[i] = 0.5f * v * (2.0f - 2.0f / (Exp(2.0f * u) + 1.0f));
  }
}

TERN_VECTOR_CLONES
void Swish(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + Exp(-x[i]));
}

}  // namespace

void Activate(ref::Activation act, float* x, int64_t n) {
  const FlushDenormals flushed;  // Swish and the tanh GELU: see denormals.h
  switch (act) {
    case ref::Activation::kReLU:
      ref::Relu(x, n);
      return;
    case ref::Activation::kGELU:
      Gelu(x, n);
      return;
    case ref::Activation::kSwish:
    case ref::Activation::kSwiGLU:  // the gate; the FFN multiplies by the up projection
      Swish(x, n);
      return;
    case ref::Activation::kGELUTanh:
    case ref::Activation::kGeGLU:  // the gate, as SwiGLU's
      GeluTanh(x, n);
      return;
  }
}

}  // namespace tern::vec
