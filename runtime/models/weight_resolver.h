// Canonical tensor names (docs/CONVENTIONS.md) -> views into the model file, with the shape and
// dtype checks every model needs: weight matrices (any storage dtype), f32 vectors and tables,
// linear layers, norms, attention blocks and feed-forward blocks. The models
// (encoder_decoder.cc, decoder_only.cc) add their own layer and global layouts on top.
// Every failure is a Status naming the tensor.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/model/model.h"
#include "runtime/nn/weights.h"

namespace tern {

// snprintf into a name buffer. Names are bounded (layer indices < 1024); one helper keeps gcc's
// truncation analysis, which cannot see that bound, quiet.
void FormatName(char* buf, size_t size, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

class WeightResolver {
 public:
  static constexpr size_t kNameSize = 128;

  explicit WeightResolver(const Model& model) : model_(model), d_(model.config().d_model) {}

  // A [rows, cols] weight in any weight dtype (f32, f16, i8, i4).
  Status Matrix(const char* name, int64_t rows, int64_t cols, WeightView* out);
  // An f32 vector; absent and not required: *out = nullptr.
  Status Vector(const char* name, int64_t size, bool required, const float** out);
  // A small f32 matrix the kernels read directly (relative-position tables).
  Status Table(const char* name, int64_t rows, int64_t cols, const float** out);
  // "<prefix>.weight" [out, in] and the optional "<prefix>.bias" [out].
  Status Linear(const char* prefix, int64_t out_features, int64_t in_features, LinearWeights* w);
  // "<prefix>.weight" and, unless RMSNorm, "<prefix>.bias", both [d_model].
  Status Norm(const char* prefix, NormWeights* n);
  // q/k/v/out projections; self_attention: also Shaw's relative tables when the config uses
  // them (cross-attention has none).
  Status Attention(const char* prefix, bool self_attention, AttentionWeights* a);
  // "<layer>.fc1", "<layer>.fc2", and SwiGLU's "<layer>.fc3".
  Status FeedForward(const char* layer, FeedForwardWeights* f);

 protected:
  const ModelConfig& config() const { return model_.config(); }
  const Model& model_;
  int64_t d_;

 private:
  const char* Name(const char* prefix, const char* leaf);
  char name_[kNameSize];
};

}  // namespace tern
