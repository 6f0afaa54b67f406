#include "runtime/nn/feed_forward.h"

#include "runtime/kernels/ops.h"
#include "runtime/nn/weights.h"

namespace tern {

void FeedForward(const ModelConfig& config, const ops::Kernels& kernels,
                 const FeedForwardWeights& w, const float* x, int64_t rows, float* hidden,
                 float* up, float* out) {
  if (ref::IsGated(config.activation)) {  // act(x W1) * (x W3)
    Linears(x, rows, config.d_model, {{&w.fc1, hidden, config.d_ff}, {&w.fc3, up, config.d_ff}});
    ops::Activate(kernels, config.activation, hidden, rows * config.d_ff);
    ops::Multiply(hidden, up, rows * config.d_ff);
  } else {
    Linear(x, rows, config.d_model, w.fc1, hidden, config.d_ff);
    ops::Activate(kernels, config.activation, hidden, rows * config.d_ff);
  }
  Linear(hidden, rows, config.d_ff, w.fc2, out, config.d_model);
  // Not a tail call: with this frame gone, profilers (bench/profile.py) counted fc2's time as
  // the attention projections' of the layer that called us. (An empty asm costs nothing.)
  asm volatile("" ::: "memory");
}

}  // namespace tern
