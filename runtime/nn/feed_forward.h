// Position-wise feed-forward network (paper eq. 2): FFN(x) = act(x W1 + b1) W2 + b2; with
// SwiGLU (Shazeer 2020): FFN(x) = (silu(x W1 + b1) * (x W3 + b3)) W2 + b2.
#pragma once

#include <cstdint>

#include "runtime/kernels/ops.h"
#include "runtime/model/config.h"
#include "runtime/nn/weights.h"

namespace tern {

// x: [rows, d_model]; hidden, up: scratch [rows, d_ff] (up: SwiGLU only); out: [rows, d_model].
void FeedForward(const ModelConfig& config, const ops::Kernels& kernels,
                 const FeedForwardWeights& w, const float* x, int64_t rows, float* hidden,
                 float* up, float* out);

}  // namespace tern
