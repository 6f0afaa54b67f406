#include "runtime/nn/residual.h"

#include "runtime/kernels/ops.h"

namespace tern {

const float* SubLayerInput(const ModelConfig& config, const ops::Kernels& kernels,
                           const NormWeights& norm, const float* x, int64_t rows, float* scratch) {
  if (config.norm_placement == NormPlacement::kPost) return x;
  ops::LayerNorm(kernels, x, rows, config.d_model, norm.gamma, norm.beta, config.layer_norm_eps,
                 config.norm_kind, scratch);
  return scratch;
}

void AddResidual(const ModelConfig& config, const ops::Kernels& kernels, const NormWeights& norm,
                 float* x, const float* y, int64_t rows) {
  ops::AddRows(kernels, x, y, rows, config.d_model);
  if (config.norm_placement == NormPlacement::kPost) {
    ops::LayerNorm(kernels, x, rows, config.d_model, norm.gamma, norm.beta, config.layer_norm_eps,
                   config.norm_kind, x);
  }
}

void EmbeddingNorm(const ModelConfig& config, const ops::Kernels& kernels, const NormWeights& norm,
                   float* x, int64_t rows) {
  if (config.layernorm_embedding) {
    ops::LayerNorm(kernels, x, rows, config.d_model, norm.gamma, norm.beta, config.layer_norm_eps,
                   config.norm_kind, x);
  }
}

void FinalNorm(const ModelConfig& config, const ops::Kernels& kernels, const NormWeights& norm,
               float* x, int64_t rows) {
  if (config.has_final_norm()) {
    ops::LayerNorm(kernels, x, rows, config.d_model, norm.gamma, norm.beta, config.layer_norm_eps,
                   config.norm_kind, x);
  }
}

}  // namespace tern
