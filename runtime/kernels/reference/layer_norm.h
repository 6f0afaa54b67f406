// Layer normalization over the last dimension (Ba et al. 2016), as the paper's sub-layers use
// it: y = (x - mean) / sqrt(var + eps) * gamma + beta, biased variance. Also the Annotated
// Transformer's variant (divides by unbiased std + eps) and RMSNorm (LLaMA).
#pragma once

#include <cstdint>

namespace tern::ref {

enum class NormKind : uint8_t { kLayerNorm = 0, kLayerNormStdEps = 1, kRMSNorm = 2 };

// x and y are [m, d]; y may alias x. beta may be null (RMSNorm has none).
void LayerNorm(const float* x, int64_t m, int64_t d, const float* gamma, const float* beta,
               float eps, NormKind kind, float* y);

}  // namespace tern::ref
