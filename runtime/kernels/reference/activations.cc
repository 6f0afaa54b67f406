#include "runtime/kernels/reference/activations.h"

#include <cmath>

namespace tern::ref {

void Relu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void Gelu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
}

void GeluTanh(float* x, int64_t n) {
  const float k = 0.79788456080286536f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

void Swish(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void Activate(Activation act, float* x, int64_t n) {
  switch (act) {
    case Activation::kReLU:
      Relu(x, n);
      return;
    case Activation::kGELU:
      Gelu(x, n);
      return;
    case Activation::kSwish:
    case Activation::kSwiGLU:
      Swish(x, n);
      return;
    case Activation::kGELUTanh:
    case Activation::kGeGLU:
      GeluTanh(x, n);
      return;
  }
}

void Multiply(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= y[i];
}

}  // namespace tern::ref
