// The whole model described once: the blocks of nn/describe.h composed into an encoder-decoder
// or a decoder-only Transformer, with the tensors outside the layers (embeddings, positions,
// output projection, final norms, the Universal Transformer's halting units). This one walk is
// the model's layout for every consumer: the loader's checks, Prepare's weight resolution, the
// backend's measuring and creation (each linear layer handed on), and the converter's expected
// tensors (converter/architectures/layout.cc). Every failure is a Status naming the tensor.
#pragma once

#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/kernels/backend.h"
#include "runtime/model/model.h"
#include "runtime/nn/adaptive_computation.h"
#include "runtime/nn/describe.h"
#include "tern/limits.h"

namespace tern {

struct ModelWeights {
  WeightView src_embed, tgt_embed;  // decoder-only: tgt_embed only
  LinearWeights output;             // tied: weight = tgt_embed
  NormWeights encoder_norm, decoder_norm;
  NormWeights encoder_embed_norm, decoder_embed_norm;  // layernorm_embedding (BART)
  WeightView encoder_learned, decoder_learned;  // learned positions: [max_positions, d_model]
  const float* encoder_t5 = nullptr;            // T5 relative bias: [buckets, heads]
  const float* decoder_t5 = nullptr;
  HaltingWeights encoder_halting, decoder_halting;  // Universal Transformer with ACT
};

// Where the layers' weight records go (arena bytes for config.encoder_layers / decoder_layers
// records, constructed there by DescribeModel); a null array: each layer is described into one
// scratch record (checks, measuring).
struct ModelLayers {
  LayerWeights* encoder = nullptr;
  DecoderLayerWeights* decoder = nullptr;  // encoder-decoder
  LayerWeights* decoder_only = nullptr;    // decoder-only
};

// How the model's stacks call their linear layers (rows and strides follow from the limits).
struct ModelCalls {
  LayerCalls encoder, decoder;
  LinearCall output;
};

// Encoder-decoder or decoder-only per config.architecture; the order is fixed (the backend
// creates its operators in it): embeddings, output projection, positions, embedding norms,
// encoder layers, decoder layers, final norms, halting units.
Status DescribeModel(const ModelConfig& c, const ModelCalls& calls, WeightVisitor& v,
                     ModelWeights* w, const ModelLayers& layers);

// The description resolved against a loaded model: each tensor looked up by name, its shape and
// dtype checked, its view stored; each linear layer then handed to the backend, if one is given:
// measured (RequiredArenaBytes' dry run) or its operator created (Prepare), in the same order.
class ModelResolver final : public WeightVisitor {
 public:
  explicit ModelResolver(const Model& model, BackendPlan* measure = nullptr,
                         BackendSession* create = nullptr)
      : model_(model), measure_(measure), create_(create) {}
  Status Matrix(const char* name, int64_t rows, int64_t cols, WeightView* out) override;
  Status Linear(const char* prefix, int64_t out, int64_t in, const LinearCall& call, bool tied,
                LinearWeights* w) override;
  Status Vector(const char* name, int64_t size, bool required, const float** out) override;
  Status Table(const char* name, int64_t rows, int64_t cols, const float** out) override;

 private:
  const Model& model_;
  BackendPlan* measure_;
  BackendSession* create_;
};

}  // namespace tern
