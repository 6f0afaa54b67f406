// Residual connection + LayerNorm around a sub-layer (paper section 3.1), in both placements:
//   post-LN (the paper):  x = LayerNorm(x + SubLayer(x))
//   pre-LN:               x = x + SubLayer(LayerNorm(x))
// A layer calls SubLayerInput before the sub-layer and AddResidual after it.
#pragma once

#include <cstdint>

#include "runtime/kernels/ops.h"
#include "runtime/model/config.h"
#include "runtime/nn/weights.h"

namespace tern {

// The sub-layer's input: x itself (post-LN) or LayerNorm(x) written to scratch (pre-LN).
const float* SubLayerInput(const ModelConfig& config, const ops::Kernels& kernels,
                           const NormWeights& norm, const float* x, int64_t rows, float* scratch);

// x += y, then (post-LN) x = LayerNorm(x).
void AddResidual(const ModelConfig& config, const ops::Kernels& kernels, const NormWeights& norm,
                 float* x, const float* y, int64_t rows);

// BART's layernorm_embedding: LayerNorm(embeddings + positions) in place, before the first
// layer (no-op without config.layernorm_embedding).
void EmbeddingNorm(const ModelConfig& config, const ops::Kernels& kernels, const NormWeights& norm,
                   float* x, int64_t rows);

// The final LayerNorm of a pre-LN stack (no-op for post-LN).
void FinalNorm(const ModelConfig& config, const ops::Kernels& kernels, const NormWeights& norm,
               float* x, int64_t rows);

}  // namespace tern
