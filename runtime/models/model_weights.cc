#include "runtime/models/model_weights.h"

#include <cstring>
#include <new>

#include "runtime/models/architectures.h"

namespace tern {

namespace {

bool HasEncoder(const ModelConfig& c) { return c.architecture != Architecture::kDecoderOnly; }

// Universal Transformer ACT: "<stack>.halting.weight" [1, d] and ".bias" [1], f32 (a quantized
// halting unit could flip halting decisions; it is d + 1 numbers).
Status DescribeHalting(const ModelConfig& c, const char* stack, WeightVisitor& v,
                       HaltingWeights* h) {
  TensorName name;
  TERN_RETURN_IF_ERROR(v.Table(name(stack, "halting.weight"), 1, c.d_model, &h->weight));
  return v.Vector(name(stack, "halting.bias"), 1, true, &h->bias);
}

// An f32 tensor's data (read as floats directly by the kernels); `what` names the kind of
// tensor in the refusal.
Status RequireF32(const Model& model, const char* name, int rank, const int64_t* dims,
                  const char* what, const float** out) {
  TensorInfo info;
  TERN_RETURN_IF_ERROR(model.Require(name, rank, dims, &info));
  if (info.dtype != DType::kF32) {
    return Status::Error(StatusCode::kDTypeMismatch, "tensor \"%s\" is %s; %s must be f32", name,
                         DTypeName(info.dtype), what);
  }
  *out = static_cast<const float*>(info.data);
  return Status::Ok();
}

}  // namespace

// The configuration checks of the Transformer stacks beyond the format's bounds (layer counts,
// T5 buckets, what a Universal Transformer or a decoder-only model supports).
Status CheckArchitectureConfig(const ModelConfig& c) {
  if (c.architecture == Architecture::kDecoderOnly) {
    // Relative positions (Shaw, T5 bias) would need their terms in the cached decode-step
    // attention, which this model does not compute.
    if (c.position == PositionKind::kRelative) {
      return Status::Error(
          StatusCode::kNotSupported,
          "config.position = relative: decoder-only models support learned, sinusoidal, rotary "
          "or no positions, not relative ones (yet)");
    }
    if (c.layernorm_embedding) {
      return Status::Error(StatusCode::kNotSupported,
                           "config.layernorm_embedding: decoder-only models do not support a "
                           "LayerNorm on the embeddings (yet)");
    }
    if (c.position != PositionKind::kLearned && c.position != PositionKind::kSinusoidal &&
        c.position != PositionKind::kRotary && c.position != PositionKind::kNone) {
      return Status::Error(StatusCode::kNotSupported,
                           "config.position = %d is not a position kind decoder-only models know",
                           static_cast<int>(c.position));
    }
    return Status::Ok();
  }
  if (c.position == PositionKind::kRelative && c.relative_attention == RelativeAttention::kT5Bias) {
    // T5's buckets: the encoder's bidirectional half (buckets / 2) again splits into exact
    // (buckets / 4) and log-spaced buckets; the log needs max_distance beyond the exact ones.
    if (c.relative_buckets < 4 || c.relative_buckets % 2 != 0 ||
        c.relative_max_distance <= c.relative_buckets / 2) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "T5 relative attention needs an even relative_buckets >= 4 and relative_max_distance > "
          "relative_buckets / 2 (got %d buckets, max distance %d)",
          c.relative_buckets, c.relative_max_distance);
    }
  }
  if (c.encoder_layers < 1 || c.decoder_layers < 1) {
    return Status::Error(
        StatusCode::kInvalidConfig,
        "an encoder-decoder model needs at least one encoder and one decoder layer");
  }
  if (c.architecture == Architecture::kUniversal) {
    // One shared block per stack, stored once as layer 0 (docs/CONVENTIONS.md).
    if (c.encoder_layers != 1 || c.decoder_layers != 1) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "a universal transformer stores one shared block per stack: config.encoder_layers = %d "
          "and config.decoder_layers = %d must both be 1",
          c.encoder_layers, c.decoder_layers);
    }
    if (c.position != PositionKind::kSinusoidal) {
      // The coordinate embedding adds the sinusoid table's position and step rows every step.
      return Status::Error(
          StatusCode::kNotSupported,
          "a universal transformer's coordinate embedding is sinusoidal (config.position = %d)",
          static_cast<int>(c.position));
    }
    if (c.layernorm_embedding) {
      // The coordinate embedding is added before every step: where the norm would go is open.
      return Status::Error(StatusCode::kNotSupported,
                           "config.layernorm_embedding: a universal transformer does not support "
                           "a LayerNorm on the embeddings");
    }
    if (c.universal_steps < 1) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "config.universal_steps = %d; a universal transformer applies its block at least once",
          c.universal_steps);
    }
  }
  return Status::Ok();
}

Status DescribeModel(const ModelConfig& c, const ModelCalls& calls, WeightVisitor& v,
                     ModelWeights* w, const ModelLayers& layers) {
  const int64_t d = c.d_model;
  const bool encoder = HasEncoder(c);
  if (encoder) {
    TERN_RETURN_IF_ERROR(
        v.Matrix("encoder.embed_tokens.weight", c.src_vocab_size, d, &w->src_embed));
  }
  if (encoder && c.shared_embeddings) {
    w->tgt_embed = w->src_embed;
  } else {
    TERN_RETURN_IF_ERROR(
        v.Matrix("decoder.embed_tokens.weight", c.tgt_vocab_size, d, &w->tgt_embed));
  }
  if (c.tied_output) w->output.weight = w->tgt_embed;
  TERN_RETURN_IF_ERROR(
      v.Linear("output_projection", c.tgt_vocab_size, d, calls.output, c.tied_output, &w->output));
  if (c.position == PositionKind::kLearned) {
    // Looked up like token embeddings (int8 rows allowed).
    if (encoder) {
      TERN_RETURN_IF_ERROR(
          v.Matrix("encoder.embed_positions.weight", c.max_positions, d, &w->encoder_learned));
    }
    TERN_RETURN_IF_ERROR(
        v.Matrix("decoder.embed_positions.weight", c.max_positions, d, &w->decoder_learned));
  }
  if (encoder && c.position == PositionKind::kRelative &&
      c.relative_attention == RelativeAttention::kT5Bias) {
    // T5: one [buckets, heads] bias table per stack, shared by its layers.
    TERN_RETURN_IF_ERROR(v.Table("encoder.relative_attention_bias.weight", c.relative_buckets,
                                 c.heads, &w->encoder_t5));
    TERN_RETURN_IF_ERROR(v.Table("decoder.relative_attention_bias.weight", c.relative_buckets,
                                 c.heads, &w->decoder_t5));
  }
  if (c.layernorm_embedding) {
    // BART: LayerNorm(embeddings + positions) before each stack's first layer.
    if (encoder) {
      TERN_RETURN_IF_ERROR(
          DescribeNorm(c, "encoder.layernorm_embedding", v, &w->encoder_embed_norm));
    }
    TERN_RETURN_IF_ERROR(DescribeNorm(c, "decoder.layernorm_embedding", v, &w->decoder_embed_norm));
  }
  // Each record is constructed in the caller's array (arena bytes) as it is described.
  LayerWeights scratch;
  DecoderLayerWeights decoder_scratch;
  for (int i = 0; encoder && i < c.encoder_layers; ++i) {
    LayerWeights* layer = layers.encoder ? new (&layers.encoder[i]) LayerWeights() : &scratch;
    TERN_RETURN_IF_ERROR(DescribeLayer(c, "encoder", i, calls.encoder, v, layer, nullptr));
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    if (encoder) {
      DecoderLayerWeights* layer =
          layers.decoder ? new (&layers.decoder[i]) DecoderLayerWeights() : &decoder_scratch;
      TERN_RETURN_IF_ERROR(
          DescribeLayer(c, "decoder", i, calls.decoder, v, &layer->layer, &layer->cross));
    } else {
      LayerWeights* layer =
          layers.decoder_only ? new (&layers.decoder_only[i]) LayerWeights() : &scratch;
      TERN_RETURN_IF_ERROR(DescribeLayer(c, "decoder", i, calls.decoder, v, layer, nullptr));
    }
  }
  if (c.has_final_norm()) {
    if (encoder) TERN_RETURN_IF_ERROR(DescribeNorm(c, "encoder.layer_norm", v, &w->encoder_norm));
    TERN_RETURN_IF_ERROR(DescribeNorm(c, "decoder.layer_norm", v, &w->decoder_norm));
  }
  if (c.architecture == Architecture::kUniversal && c.act_threshold > 0.0f) {
    TERN_RETURN_IF_ERROR(DescribeHalting(c, "encoder", v, &w->encoder_halting));
    TERN_RETURN_IF_ERROR(DescribeHalting(c, "decoder", v, &w->decoder_halting));
  }
  return Status::Ok();
}

Status ModelResolver::Matrix(const char* name, int64_t rows, int64_t cols, WeightView* out) {
  TensorInfo info;
  const int64_t dims[2] = {rows, cols};
  TERN_RETURN_IF_ERROR(model_.Require(name, 2, dims, &info));
  if (info.dtype == DType::kI32) {
    return Status::Error(StatusCode::kDTypeMismatch,
                         "tensor \"%s\" is i32; weights must be f32, f16, i8 or i4", name);
  }
  *out = info.AsWeight();
  return Status::Ok();
}

Status ModelResolver::Linear(const char* prefix, int64_t out, int64_t in, const LinearCall& call,
                             bool tied, LinearWeights* w) {
  TensorName name;
  if (!tied) {
    TERN_RETURN_IF_ERROR(Matrix(name(prefix, "weight"), out, in, &w->weight));
  }
  TERN_RETURN_IF_ERROR(Vector(name(prefix, "bias"), out, false, &w->bias));
  w->kernel = nullptr;
  if (measure_ != nullptr) return measure_->MeasureLinear(w->weight, w->bias, call);
  if (create_ != nullptr) {
    // With a vocabulary shortlist every decoder step reads output projection rows from the
    // weight's view (kernels/vectorized/linear_rows.h): the model's, unless the layer's bytes
    // were copied into the arena; those pages stay resident.
    const bool rows_read =
        model_.shortlist().present() && std::strcmp(prefix, "output_projection") == 0;
    return create_->CreateLinear(&w->weight, w->bias, call, &w->kernel, &model_, rows_read);
  }
  return Status::Ok();
}

Status ModelResolver::Vector(const char* name, int64_t size, bool required, const float** out) {
  if (!required && !model_.Find(name, nullptr)) {
    *out = nullptr;
    return Status::Ok();
  }
  return RequireF32(model_, name, 1, &size, "biases and norms", out);
}

Status ModelResolver::Table(const char* name, int64_t rows, int64_t cols, const float** out) {
  const int64_t dims[2] = {rows, cols};
  return RequireF32(model_, name, 2, dims,
                    "tables the kernels read directly (relative positions, halting units)", out);
}

Status ValidateArchitecture(const Model& model) {
  const ModelConfig& c = model.config();
  if (c.architecture != Architecture::kEncoderDecoder &&
      c.architecture != Architecture::kDecoderOnly && c.architecture != Architecture::kUniversal) {
    return Status::Error(StatusCode::kInvalidConfig, "unknown architecture");
  }
  TERN_RETURN_IF_ERROR(CheckArchitectureConfig(c));
  ModelResolver resolve(model);
  ModelWeights weights;
  return DescribeModel(c, ModelCalls(), resolve, &weights, ModelLayers());
}

}  // namespace tern
