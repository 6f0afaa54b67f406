#include "runtime/kernels/reference/timing_signal.h"

namespace tern::ref {

void AddTimingSignal(float* x, int64_t batch, int64_t seq, int64_t d_model, const float* positions,
                     const float* step_signal) {
  // Position first, then step: the order the PyTorch reference adds them in
  // (tools/model/universal_torch.py), so float rounding follows the same path.
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < seq; ++i) {
      float* row = x + (b * seq + i) * d_model;
      const float* pe = positions + i * d_model;
      for (int64_t j = 0; j < d_model; ++j) row[j] = (row[j] + pe[j]) + step_signal[j];
    }
  }
}

}  // namespace tern::ref
