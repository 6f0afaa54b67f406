#include "runtime/models/encoder_decoder.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/decoding/beam_search.h"
#include "runtime/kernels/ops.h"
#include "runtime/models/architectures.h"
#include "runtime/nn/residual.h"

namespace tern {

namespace {

// Time steps of the plan's lifetimes.
enum Phase : int { kEncoder = 0, kCrossKeysValues = 1, kDecoder = 2 };

// Tensor names are bounded (layer indices < 1024): vsnprintf through one helper keeps gcc's
// truncation analysis, which cannot see that bound, quiet.
void FormatName(char* buf, size_t size, const char* format, ...) __attribute__((format(printf, 3, 4)));
void FormatName(char* buf, size_t size, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, size, format, args);
  va_end(args);
}

class WeightResolver {
 public:
  explicit WeightResolver(const Model& model) : model_(model), d_(model.config().d_model) {}

  Status Matrix(const char* name, int64_t rows, int64_t cols, WeightView* out) {
    TensorInfo info;
    const int64_t dims[2] = {rows, cols};
    TERN_RETURN_IF_ERROR(model_.Require(name, 2, dims, &info));
    if (info.dtype == DType::kI32) {
      return Status::Error(StatusCode::kDTypeMismatch, "tensor \"%s\" is i32; weights must be f32, f16, i8 or i4",
                           name);
    }
    *out = info.AsWeight();
    return Status::Ok();
  }

  Status Vector(const char* name, int64_t size, bool required, const float** out) {
    if (!required && !model_.Find(name, nullptr)) {
      *out = nullptr;
      return Status::Ok();
    }
    TensorInfo info;
    TERN_RETURN_IF_ERROR(model_.Require(name, 1, &size, &info));
    if (info.dtype != DType::kF32) {
      return Status::Error(StatusCode::kDTypeMismatch, "tensor \"%s\" is %s; biases and norms must be f32",
                           name, DTypeName(info.dtype));
    }
    *out = static_cast<const float*>(info.data);
    return Status::Ok();
  }

  Status Linear(const char* prefix, int64_t out_features, int64_t in_features, LinearWeights* w) {
    TERN_RETURN_IF_ERROR(Matrix(Name(prefix, "weight"), out_features, in_features, &w->weight));
    return Vector(Name(prefix, "bias"), out_features, false, &w->bias);
  }

  Status Norm(const char* prefix, NormWeights* n) {
    TERN_RETURN_IF_ERROR(Vector(Name(prefix, "weight"), d_, true, &n->gamma));
    const bool has_beta = model_.config().norm_kind != ref::NormKind::kRMSNorm;
    return Vector(Name(prefix, "bias"), d_, has_beta, &n->beta);
  }

  Status Attention(const char* prefix, AttentionWeights* a) {
    char buf[kNameSize];
    const char* parts[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    LinearWeights* targets[] = {&a->q, &a->k, &a->v, &a->out};
    for (int i = 0; i < 4; ++i) {
      FormatName(buf, sizeof buf, "%s.%s", prefix, parts[i]);
      TERN_RETURN_IF_ERROR(Linear(buf, d_, d_, targets[i]));
    }
    return Status::Ok();
  }

  Status FeedForward(const char* layer, FeedForwardWeights* f) {
    char buf[kNameSize];
    FormatName(buf, sizeof buf, "%s.fc1", layer);
    TERN_RETURN_IF_ERROR(Linear(buf, model_.config().d_ff, d_, &f->fc1));
    FormatName(buf, sizeof buf, "%s.fc2", layer);
    return Linear(buf, d_, model_.config().d_ff, &f->fc2);
  }

  Status EncoderLayer(int i, EncoderLayerWeights* w) {
    char layer[kNameSize], buf[kNameSize];
    FormatName(layer, sizeof layer, "encoder.layers.%d", i);
    FormatName(buf, sizeof buf, "%s.self_attn", layer);
    TERN_RETURN_IF_ERROR(Attention(buf, &w->self_attn));
    FormatName(buf, sizeof buf, "%s.self_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(Norm(buf, &w->self_attn_norm));
    TERN_RETURN_IF_ERROR(FeedForward(layer, &w->ffn));
    FormatName(buf, sizeof buf, "%s.final_layer_norm", layer);
    return Norm(buf, &w->ffn_norm);
  }

  Status DecoderLayer(int i, DecoderLayerWeights* w) {
    char layer[kNameSize], buf[kNameSize];
    FormatName(layer, sizeof layer, "decoder.layers.%d", i);
    FormatName(buf, sizeof buf, "%s.self_attn", layer);
    TERN_RETURN_IF_ERROR(Attention(buf, &w->self_attn));
    FormatName(buf, sizeof buf, "%s.self_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(Norm(buf, &w->self_attn_norm));
    FormatName(buf, sizeof buf, "%s.encoder_attn", layer);
    TERN_RETURN_IF_ERROR(Attention(buf, &w->cross_attn));
    FormatName(buf, sizeof buf, "%s.encoder_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(Norm(buf, &w->cross_attn_norm));
    TERN_RETURN_IF_ERROR(FeedForward(layer, &w->ffn));
    FormatName(buf, sizeof buf, "%s.final_layer_norm", layer);
    return Norm(buf, &w->ffn_norm);
  }

  // Embeddings, output projection and the pre-LN final norms.
  Status Globals(WeightView* src, WeightView* tgt, LinearWeights* output, NormWeights* enc_norm,
                 NormWeights* dec_norm) {
    const ModelConfig& c = model_.config();
    TERN_RETURN_IF_ERROR(Matrix("encoder.embed_tokens.weight", c.src_vocab_size, d_, src));
    if (c.shared_embeddings) {
      *tgt = *src;
    } else {
      TERN_RETURN_IF_ERROR(Matrix("decoder.embed_tokens.weight", c.tgt_vocab_size, d_, tgt));
    }
    if (c.tied_output) {
      output->weight = *tgt;
    } else {
      TERN_RETURN_IF_ERROR(Matrix("output_projection.weight", c.tgt_vocab_size, d_, &output->weight));
    }
    TERN_RETURN_IF_ERROR(Vector("output_projection.bias", c.tgt_vocab_size, false, &output->bias));
    if (c.norm_placement == NormPlacement::kPre) {
      TERN_RETURN_IF_ERROR(Norm("encoder.layer_norm", enc_norm));
      TERN_RETURN_IF_ERROR(Norm("decoder.layer_norm", dec_norm));
    }
    return Status::Ok();
  }

 private:
  static constexpr size_t kNameSize = 128;
  const char* Name(const char* prefix, const char* leaf) {
    FormatName(name_, sizeof name_, "%s.%s", prefix, leaf);
    return name_;
  }

  const Model& model_;
  int64_t d_;
  char name_[kNameSize];
};

}  // namespace

struct EncoderDecoder::BufferIds {
  int encoder_layers, decoder_layers, positions, src_lengths;
  int enc_x, enc_q, enc_k, enc_v, enc_attn, enc_hidden, enc_scores;
  int cross_kv, self_kv;
  int dec_x, dec_q, dec_attn, dec_hidden, dec_scores, logits, tokens, beam_scratch, decoder_state;
};

Status ValidateArchitecture(const Model& model) {
  switch (model.config().architecture) {
    case Architecture::kEncoderDecoder: return EncoderDecoder::Validate(model);
    case Architecture::kDecoderOnly:
      return Status::Error(StatusCode::kNotSupported,
                           "architecture decoder_only is not supported by this runtime version");
    case Architecture::kUniversal:
      return Status::Error(StatusCode::kNotSupported,
                           "architecture universal is not supported by this runtime version");
  }
  return Status::Error(StatusCode::kInvalidConfig, "unknown architecture");
}

Status EncoderDecoder::Validate(const Model& model) {
  const ModelConfig& c = model.config();
  if (c.position != PositionKind::kSinusoidal) {
    return Status::Error(StatusCode::kNotSupported,
                         "encoder-decoder models support sinusoidal positions only (config.position = %d)",
                         static_cast<int>(c.position));
  }
  if (c.encoder_layers < 1 || c.decoder_layers < 1) {
    return Status::Error(StatusCode::kInvalidConfig,
                         "an encoder-decoder model needs at least one encoder and one decoder layer");
  }
  WeightResolver resolve(model);
  WeightView src, tgt;
  LinearWeights output;
  NormWeights enc_norm, dec_norm;
  TERN_RETURN_IF_ERROR(resolve.Globals(&src, &tgt, &output, &enc_norm, &dec_norm));
  for (int i = 0; i < c.encoder_layers; ++i) {
    EncoderLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.EncoderLayer(i, &layer));
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    DecoderLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.DecoderLayer(i, &layer));
  }
  return Status::Ok();
}

Status EncoderDecoder::CheckLimits(const Model& model, const Limits& limits) {
  const ModelConfig& c = model.config();
  if (limits.max_batch < 1 || limits.max_batch > 4096) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.max_batch = %d; 1 to 4096 allowed",
                         limits.max_batch);
  }
  if (limits.beam_size < 1 || limits.beam_size > 256) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.beam_size = %d; 1 to 256 allowed",
                         limits.beam_size);
  }
  if (limits.max_source_length < 1 || limits.max_source_length > c.max_positions) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_source_length = %d; 1 to the model's max_positions (%d) allowed",
                         limits.max_source_length, c.max_positions);
  }
  if (limits.max_target_length < 1 || limits.max_target_length > c.max_positions) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_target_length = %d; 1 to the model's max_positions (%d) allowed",
                         limits.max_target_length, c.max_positions);
  }
  return Status::Ok();
}

Status EncoderDecoder::Plan(const ModelConfig& c, const Limits& limits, GreedyPlanner* p,
                            BufferIds* ids) {
  const size_t f = sizeof(float);
  const size_t d = static_cast<size_t>(c.d_model);
  const size_t b = static_cast<size_t>(limits.max_batch);
  const size_t k = static_cast<size_t>(limits.beam_size);
  const size_t rows = b * k;  // decoder rows: every beam hypothesis of every sentence
  const size_t s = static_cast<size_t>(limits.max_source_length);
  const size_t t = static_cast<size_t>(limits.max_target_length);
  const size_t ff = static_cast<size_t>(c.d_ff);
  const size_t le = static_cast<size_t>(c.encoder_layers);
  const size_t ld = static_cast<size_t>(c.decoder_layers);
  const size_t positions = s > t ? s : t;
  const size_t keys = s > t ? s : t;
  // Weight tables and positions live for the whole session; encoder buffers only while
  // encoding (the encoder output also feeds the cross K/V step); decoder buffers while decoding.
  ids->encoder_layers = p->Add("encoder_layers", CheckedMul(le, sizeof(EncoderLayerWeights)), kEncoder, kDecoder);
  ids->decoder_layers = p->Add("decoder_layers", CheckedMul(ld, sizeof(DecoderLayerWeights)), kEncoder, kDecoder);
  ids->positions = p->Add("positions", CheckedMul(positions, d, f), kEncoder, kDecoder);
  ids->src_lengths = p->Add("src_lengths", CheckedMul(b, sizeof(int32_t)), kEncoder, kDecoder);
  ids->enc_x = p->Add("enc_x", CheckedMul(b * s, d, f), kEncoder, kCrossKeysValues);
  ids->enc_q = p->Add("enc_q", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_k = p->Add("enc_k", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_v = p->Add("enc_v", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_attn = p->Add("enc_attn", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_hidden = p->Add("enc_hidden", CheckedMul(b * s, ff, f), kEncoder, kEncoder);
  ids->enc_scores = p->Add("enc_scores", CheckedMul(s, s, f), kEncoder, kEncoder);
  ids->cross_kv = p->Add("cross_kv", CheckedMul(CheckedMul(ld, 2, b), CheckedMul(s, d, f)), kCrossKeysValues, kDecoder);
  ids->self_kv = p->Add("self_kv", CheckedMul(CheckedMul(ld, 2, rows), CheckedMul(t, d, f)), kDecoder, kDecoder);
  ids->dec_x = p->Add("dec_x", CheckedMul(rows, d, f), kDecoder, kDecoder);
  ids->dec_q = p->Add("dec_q", CheckedMul(rows, d, f), kDecoder, kDecoder);
  ids->dec_attn = p->Add("dec_attn", CheckedMul(rows, d, f), kDecoder, kDecoder);
  ids->dec_hidden = p->Add("dec_hidden", CheckedMul(rows, ff, f), kDecoder, kDecoder);
  ids->dec_scores = p->Add("dec_scores", CheckedMul(keys, f), kDecoder, kDecoder);
  ids->logits = p->Add("logits", CheckedMul(rows, static_cast<size_t>(c.tgt_vocab_size), f), kDecoder, kDecoder);
  ids->tokens = p->Add("tokens", CheckedMul(rows, sizeof(int32_t)), kDecoder, kDecoder);
  ids->beam_scratch = -1;
  if (k > 1) ids->beam_scratch = p->Add("beam_scratch", CheckedMul(k, t, CheckedMul(d, f)), kDecoder, kDecoder);
  ids->decoder_state = p->Add("decoder_state", DecoderStateBytes(c, limits), kDecoder, kDecoder);
  return p->Plan();
}

Result<size_t> EncoderDecoder::RequiredArenaBytes(const Model& model, const Limits& limits) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(Plan(model.config(), limits, &planner, &ids));
  // Slack to align an arbitrary caller pointer to the planner's alignment.
  return CheckedAdd(planner.total_bytes(), GreedyPlanner::kAlignment);
}

Status EncoderDecoder::ResolveWeights(const Model& model) {
  WeightResolver resolve(model);
  TERN_RETURN_IF_ERROR(resolve.Globals(&src_embed_, &tgt_embed_, &output_, &encoder_norm_, &decoder_norm_));
  for (int i = 0; i < config_.encoder_layers; ++i) {
    TERN_RETURN_IF_ERROR(resolve.EncoderLayer(i, &encoder_layers_[i]));
  }
  for (int i = 0; i < config_.decoder_layers; ++i) {
    TERN_RETURN_IF_ERROR(resolve.DecoderLayer(i, &decoder_layers_[i]));
  }
  return Status::Ok();
}

Status EncoderDecoder::Prepare(const Model& model, const Limits& limits, void* arena,
                               size_t arena_bytes) {
  encoded_ = false;
  if (model.schema() == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "model is not loaded");
  }
  if (arena == nullptr) return Status::Error(StatusCode::kInvalidArgument, "arena is null");
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(Plan(model.config(), limits, &planner, &ids));
  const size_t required = CheckedAdd(planner.total_bytes(), GreedyPlanner::kAlignment);
  if (arena_bytes < required) {
    return Status::Error(StatusCode::kArenaTooSmall, "arena has %zu bytes; these limits need %zu",
                         arena_bytes, required);
  }
  const uintptr_t raw = reinterpret_cast<uintptr_t>(arena);
  uint8_t* base = reinterpret_cast<uint8_t*>((raw + GreedyPlanner::kAlignment - 1) &
                                             ~uintptr_t{GreedyPlanner::kAlignment - 1});
  auto at = [&](int id) { return base + planner.offset(id); };
  config_ = model.config();
  limits_ = limits;
  arena_used_ = required;
  encoder_layers_ = reinterpret_cast<EncoderLayerWeights*>(at(ids.encoder_layers));
  decoder_layers_ = reinterpret_cast<DecoderLayerWeights*>(at(ids.decoder_layers));
  for (int i = 0; i < config_.encoder_layers; ++i) new (&encoder_layers_[i]) EncoderLayerWeights();
  for (int i = 0; i < config_.decoder_layers; ++i) new (&decoder_layers_[i]) DecoderLayerWeights();
  TERN_RETURN_IF_ERROR(ResolveWeights(model));

  positions_ = reinterpret_cast<float*>(at(ids.positions));
  position_rows_ = limits.max_source_length > limits.max_target_length ? limits.max_source_length
                                                                       : limits.max_target_length;
  ops::SinusoidalPositions(0, position_rows_, config_.d_model, config_.sinusoid_layout, positions_);
  src_lengths_ = reinterpret_cast<int32_t*>(at(ids.src_lengths));
  enc_x_ = reinterpret_cast<float*>(at(ids.enc_x));
  enc_scratch_.q = reinterpret_cast<float*>(at(ids.enc_q));
  enc_scratch_.k = reinterpret_cast<float*>(at(ids.enc_k));
  enc_scratch_.v = reinterpret_cast<float*>(at(ids.enc_v));
  enc_scratch_.attn = reinterpret_cast<float*>(at(ids.enc_attn));
  enc_scratch_.hidden = reinterpret_cast<float*>(at(ids.enc_hidden));
  enc_scratch_.scores = reinterpret_cast<float*>(at(ids.enc_scores));
  cross_kv_ = reinterpret_cast<float*>(at(ids.cross_kv));
  self_kv_ = reinterpret_cast<float*>(at(ids.self_kv));
  dec_x_ = reinterpret_cast<float*>(at(ids.dec_x));
  dec_scratch_.q = reinterpret_cast<float*>(at(ids.dec_q));
  dec_scratch_.attn = reinterpret_cast<float*>(at(ids.dec_attn));
  dec_scratch_.hidden = reinterpret_cast<float*>(at(ids.dec_hidden));
  dec_scratch_.scores = reinterpret_cast<float*>(at(ids.dec_scores));
  logits_ = reinterpret_cast<float*>(at(ids.logits));
  tokens_ = reinterpret_cast<int32_t*>(at(ids.tokens));
  beam_scratch_ = ids.beam_scratch >= 0 ? reinterpret_cast<float*>(at(ids.beam_scratch)) : nullptr;
  decoder_state_ = at(ids.decoder_state);
  return Status::Ok();
}

Status EncoderDecoder::Encode(const int32_t* src_ids, int64_t src_stride, const int32_t* lengths,
                              int32_t batch) {
  encoded_ = false;
  if (encoder_layers_ == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "session is not prepared");
  }
  if (batch < 1 || batch > limits_.max_batch) {
    return Status::Error(StatusCode::kInvalidArgument, "batch of %d sentences; this session allows 1 to %d",
                         batch, limits_.max_batch);
  }
  if (src_ids == nullptr || lengths == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "source ids or lengths are null");
  }
  int64_t seq = 0;
  for (int32_t b = 0; b < batch; ++b) {
    if (lengths[b] < 1 || lengths[b] > limits_.max_source_length || lengths[b] > src_stride) {
      return Status::Error(StatusCode::kOutOfRange,
                           "sentence %d has %d source tokens; 1 to %d allowed", b, lengths[b],
                           limits_.max_source_length);
    }
    for (int32_t i = 0; i < lengths[b]; ++i) {
      const int32_t id = src_ids[b * src_stride + i];
      if (id < 0 || id >= config_.src_vocab_size) {
        return Status::Error(StatusCode::kOutOfRange,
                             "sentence %d: source token id %d at %d is outside the vocabulary [0, %d)",
                             b, id, i, config_.src_vocab_size);
      }
    }
    seq = lengths[b] > seq ? lengths[b] : seq;
  }
  const int64_t d = config_.d_model;
  batch_ = batch;
  src_seq_ = seq;
  // Padded rows embed pad_id so they hold finite values; they are masked as keys.
  for (int32_t b = 0; b < batch; ++b) {
    src_lengths_[b] = lengths[b];
    float* x = enc_x_ + b * seq * d;
    ops::Embedding(src_embed_, src_ids + b * src_stride, lengths[b], config_.embedding_scale, x);
    for (int64_t i = lengths[b]; i < seq; ++i) {
      ops::Embedding(src_embed_, &config_.pad_id, 1, config_.embedding_scale, x + i * d);
    }
    ops::AddRows(x, positions_, seq, d);
  }
  for (int i = 0; i < config_.encoder_layers; ++i) {
    EncoderLayerForward(config_, encoder_layers_[i], enc_x_, batch, seq, src_lengths_, enc_scratch_);
  }
  FinalNorm(config_, encoder_norm_, enc_x_, batch * seq);
  const size_t layer_kv = static_cast<size_t>(batch) * seq * d;
  for (int i = 0; i < config_.decoder_layers; ++i) {
    DecoderLayerCache cache{};
    cache.cross_k = cross_kv_ + (2 * i) * layer_kv;
    cache.cross_v = cross_kv_ + (2 * i + 1) * layer_kv;
    ComputeCrossKeysValues(config_, decoder_layers_[i], enc_x_, batch, seq, cache);
  }
  position_ = 0;
  rows_per_sentence_ = 1;
  encoded_ = true;
  return Status::Ok();
}

Status EncoderDecoder::SetRowsPerSentence(int32_t rows) {
  if (!encoded_ || position_ != 0) {
    return Status::Error(StatusCode::kFailedPrecondition, "SetRowsPerSentence must follow Encode");
  }
  if (rows < 1 || rows > limits_.beam_size) {
    return Status::Error(StatusCode::kInvalidArgument, "%d rows per sentence; the session allows 1 to %d",
                         rows, limits_.beam_size);
  }
  rows_per_sentence_ = rows;
  return Status::Ok();
}

Status EncoderDecoder::ReorderRows(const int32_t* parents) {
  if (!encoded_) return Status::Error(StatusCode::kFailedPrecondition, "ReorderRows before Encode");
  const int32_t k = rows_per_sentence_;
  for (int32_t r = 0; r < decoder_rows(); ++r) {
    if (parents[r] / k != r / k || parents[r] < 0) {
      return Status::Error(StatusCode::kInvalidArgument, "row %d cannot continue row %d of another sentence", r,
                           parents[r]);
    }
  }
  if (k == 1 || position_ == 0) return Status::Ok();
  // Per layer, K then V: gather each sentence's k rows through the scratch (rows may swap).
  const int64_t d = config_.d_model;
  const int64_t capacity = limits_.max_target_length;
  const size_t used = static_cast<size_t>(position_ * d) * sizeof(float);
  const size_t self_kv = static_cast<size_t>(decoder_rows()) * capacity * d;
  for (int64_t half = 0; half < 2LL * config_.decoder_layers; ++half) {
    float* cache = self_kv_ + half * self_kv;
    for (int32_t sentence = 0; sentence < batch_; ++sentence) {
      bool identity = true;
      for (int32_t j = 0; j < k; ++j) identity = identity && parents[sentence * k + j] == sentence * k + j;
      if (identity) continue;
      for (int32_t j = 0; j < k; ++j) {
        std::memcpy(beam_scratch_ + j * capacity * d, cache + parents[sentence * k + j] * capacity * d, used);
      }
      for (int32_t j = 0; j < k; ++j) {
        std::memcpy(cache + (sentence * k + j) * capacity * d, beam_scratch_ + j * capacity * d, used);
      }
    }
  }
  return Status::Ok();
}

Status EncoderDecoder::DecodeStep(const int32_t* tokens, const float** logits) {
  if (!encoded_) {
    return Status::Error(StatusCode::kFailedPrecondition, "DecodeStep before Encode");
  }
  if (position_ >= limits_.max_target_length) {
    return Status::Error(StatusCode::kOutOfRange, "decoder reached the session's max_target_length (%d)",
                         limits_.max_target_length);
  }
  const int32_t rows = decoder_rows();
  for (int32_t b = 0; b < rows; ++b) {
    if (tokens[b] < 0 || tokens[b] >= config_.tgt_vocab_size) {
      return Status::Error(StatusCode::kOutOfRange,
                           "decoder token id %d is outside the vocabulary [0, %d)", tokens[b],
                           config_.tgt_vocab_size);
    }
  }
  const int64_t d = config_.d_model;
  ops::Embedding(tgt_embed_, tokens, rows, config_.embedding_scale, dec_x_);
  for (int32_t b = 0; b < rows; ++b) ops::AddRows(dec_x_ + b * d, positions_ + position_ * d, 1, d);

  DecoderStepShape shape{};
  shape.batch = rows;
  shape.rows_per_sentence = rows_per_sentence_;
  shape.position = position_;
  shape.self_capacity = limits_.max_target_length;
  shape.src_seq = src_seq_;
  shape.src_lengths = src_lengths_;
  const size_t cross_kv = static_cast<size_t>(batch_) * src_seq_ * d;
  const size_t self_kv = static_cast<size_t>(rows) * limits_.max_target_length * d;
  for (int i = 0; i < config_.decoder_layers; ++i) {
    DecoderLayerCache cache;
    cache.self_k = self_kv_ + (2 * i) * self_kv;
    cache.self_v = self_kv_ + (2 * i + 1) * self_kv;
    cache.cross_k = cross_kv_ + (2 * i) * cross_kv;
    cache.cross_v = cross_kv_ + (2 * i + 1) * cross_kv;
    DecoderLayerStep(config_, decoder_layers_[i], dec_x_, shape, cache, dec_scratch_);
  }
  FinalNorm(config_, decoder_norm_, dec_x_, rows);
  ops::Linear(dec_x_, rows, d, output_.weight, output_.bias, logits_, config_.tgt_vocab_size);
  ++position_;
  *logits = logits_;
  return Status::Ok();
}

}  // namespace tern
