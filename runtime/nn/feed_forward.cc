#include "runtime/nn/feed_forward.h"

#include "runtime/kernels/ops.h"

namespace tern {

void FeedForward(const ModelConfig& config, const FeedForwardWeights& w, const float* x,
                 int64_t rows, float* hidden, float* out) {
  ops::Linear(x, rows, config.d_model, w.fc1.weight, w.fc1.bias, hidden, config.d_ff);
  ops::Activate(config.activation, hidden, rows * config.d_ff);
  ops::Linear(hidden, rows, config.d_ff, w.fc2.weight, w.fc2.bias, out, config.d_model);
}

}  // namespace tern
