// The kernels the layers call. Today every op is the portable reference kernel; the XNNPACK
// backend (TERN_WITH_XNNPACK) replaces individual ops here with the same names and signatures,
// so layers never know which backend runs.
#pragma once

#include "runtime/kernels/reference/activations.h"
#include "runtime/kernels/reference/attention.h"
#include "runtime/kernels/reference/embedding.h"
#include "runtime/kernels/reference/layer_norm.h"
#include "runtime/kernels/reference/linear.h"
#include "runtime/kernels/reference/positions.h"
#include "runtime/kernels/reference/softmax.h"

namespace tern::ops {

using ref::Activate;
using ref::AddRows;
using ref::Embedding;
using ref::LayerNorm;
using ref::Linear;
using ref::MultiHeadAttention;
using ref::SinusoidalPositions;

}  // namespace tern::ops
