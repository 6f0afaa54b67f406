// Blocks that describe themselves: every block (attention, feed-forward, norm, a whole layer)
// lists its tensors once, with canonical name (docs/CONVENTIONS.md), shape and role, and each
// linear layer with the rows and strides it is called with. One walk over that description
// serves every consumer through a WeightVisitor:
//   - the loader's checks and Prepare's weight resolution (models/model_weights.h: each name
//     looked up in the file, shape and dtype checked, views stored in the block's weights);
//   - the backend's dry run (measure every linear layer's operator) and its creation at Prepare,
//     in the same order;
//   - the converter's expected layout (converter/architectures/*_layout.cc: names, shapes and
//     roles, no model needed).
// A new attention variant or layer kind is an edit here and in the forward pass, nothing else.
#pragma once

#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/kernels/backend.h"
#include "runtime/model/config.h"
#include "runtime/nn/weights.h"

namespace tern {

// What the description visits. Names are complete ("decoder.layers.0.self_attn.q_proj.weight"),
// except Linear's, which is the layer's prefix (".weight" and the optional ".bias" follow).
class WeightVisitor {
 public:
  // A [rows, cols] matrix read by rows (embeddings, learned position tables): any weight dtype.
  virtual Status Matrix(const char* name, int64_t rows, int64_t cols, WeightView* out) = 0;
  // "<prefix>.weight" [out, in] (any weight dtype) and the optional f32 "<prefix>.bias" [out].
  // tied: w->weight is already set (an output projection tied to the embedding); only the bias
  // is looked up.
  virtual Status Linear(const char* prefix, int64_t out, int64_t in, const LinearCall& call,
                        bool tied, LinearWeights* w) = 0;
  // An f32 vector [size] (norm gains and biases); absent and not required: *out = null.
  virtual Status Vector(const char* name, int64_t size, bool required, const float** out) = 0;
  // A small f32 table [rows, cols] the kernels read directly (relative positions, ACT halting).
  virtual Status Table(const char* name, int64_t rows, int64_t cols, const float** out) = 0;

 protected:
  ~WeightVisitor() = default;
};

// How a layer's linear layers are called in its stack.
struct LayerCalls {
  int64_t rows = 1;      // most rows of one call (queries, FFN)
  int64_t kv_rows = 1;   // most rows of the self-attention K/V projections
  int64_t kv_ldy = 0;    // their output stride (d_kv, or a cache's row stride)
  int64_t src_rows = 1;  // most rows of the cross-attention K/V projections (encoder output)
};

// "<prefix>.weight" and, unless RMSNorm, "<prefix>.bias", both [d_model].
Status DescribeNorm(const ModelConfig& c, const char* prefix, WeightVisitor& v, NormWeights* w);

// "<prefix>.{q,k,v,out}_proj": Q and K/V projections sized by heads and kv_heads; with Shaw's
// relative positions a self-attention also has "<prefix>.relative_{key,value}.weight".
Status DescribeAttention(const ModelConfig& c, const char* prefix, bool self_attention,
                         const LinearCall& q_call, const LinearCall& kv_call, WeightVisitor& v,
                         AttentionWeights* w);

// "<layer>.fc1", "<layer>.fc2" and SwiGLU's "<layer>.fc3".
Status DescribeFeedForward(const ModelConfig& c, const char* layer, int64_t rows, WeightVisitor& v,
                           FeedForwardWeights* w);

// A whole layer "<stack>.layers.<index>": self_attn (+ self_attn_layer_norm), encoder_attn
// (+ encoder_attn_layer_norm) when cross is not null, the FFN and final_layer_norm.
Status DescribeLayer(const ModelConfig& c, const char* stack, int index, const LayerCalls& calls,
                     WeightVisitor& v, LayerWeights* w, CrossAttentionWeights* cross);

// A canonical name built in a fixed buffer, where it is used: name(prefix, "q_proj") is
// "<prefix>.q_proj", valid until the next call. Names are bounded (layer indices < 1024); the one
// snprintf keeps gcc's truncation analysis, which cannot see that bound, quiet.
class TensorName {
 public:
  const char* operator()(const char* prefix, const char* part) {
    return Format("%s.%s", prefix, part);
  }
  const char* Format(const char* format, ...) __attribute__((format(printf, 2, 3)));

 private:
  char buf_[128];
};

}  // namespace tern
