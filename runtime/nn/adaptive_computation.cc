#include "runtime/nn/adaptive_computation.h"

#include <cmath>
#include <cstring>

namespace tern {

void ActBegin(const ActState& state, int64_t rows, int64_t d_model) {
  std::memset(state.acc, 0, static_cast<size_t>(rows) * sizeof(float));
  std::memset(state.out, 0, static_cast<size_t>(rows * d_model) * sizeof(float));
}

int64_t ActHaltingStep(const HaltingWeights& halting, const float* s, int64_t rows, int64_t d_model,
                       float threshold, bool last_step, const ActState& state) {
  int64_t running = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float& acc = state.acc[r];
    if (acc >= 1.0f) {  // halted at an earlier step
      state.weights[r] = 0.0f;
      continue;
    }
    // A dot product of d_model terms per row and step: too small to be worth an XNNPACK
    // operator, and kept in double so the halting decision is as exact as the reference's.
    const float* x = s + r * d_model;
    double z = static_cast<double>(halting.bias[0]);
    for (int64_t j = 0; j < d_model; ++j) z += static_cast<double>(halting.weight[j]) * x[j];
    const float p = static_cast<float>(1.0 / (1.0 + std::exp(-z)));
    if (last_step || acc + p > threshold) {
      state.weights[r] = 1.0f - acc;
      acc = 1.0f;
    } else {
      state.weights[r] = p;
      acc += p;
      ++running;
    }
  }
  return running;
}

void ActAccumulate(const ActState& state, const float* h, int64_t rows, int64_t d_model) {
  for (int64_t r = 0; r < rows; ++r) {
    const float w = state.weights[r];
    if (w == 0.0f) continue;
    float* out = state.out + r * d_model;
    const float* x = h + r * d_model;
    for (int64_t j = 0; j < d_model; ++j) out[j] += w * x[j];
  }
}

bool ActAnyRunning(const ActState& state, int64_t batch, int64_t seq, const int32_t* lengths) {
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < lengths[b]; ++i) {
      if (state.acc[b * seq + i] < 1.0f) return true;
    }
  }
  return false;
}

}  // namespace tern
