#include "runtime/models/encoder_decoder.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "runtime/decoding/beam_search.h"
#include "runtime/kernels/ops.h"
#include "runtime/models/architectures.h"
#include "runtime/models/decoder_only.h"
#include "runtime/models/weight_resolver.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/residual.h"

#if TERN_XNNPACK_BUILD  // runtime/models/xnnpack_linears.h, via encoder_decoder.h
#include "runtime/kernels/xnnpack/attention.h"
#endif

namespace tern {

namespace {

// Time steps of the plan's lifetimes. kPrepare: buffers Prepare writes (weight tables,
// positions, XNNPACK's operators) start there; prepare-time scratch lives only there and shares
// bytes with the activations.
enum Phase : int { kPrepare = 0, kEncoder = 1, kCrossKeysValues = 2, kDecoder = 3 };

// Position parameters of the whole model (per-layer Shaw tables live in AttentionWeights).
struct PositionWeights {
  WeightView encoder_learned, decoder_learned;  // learned: [max_positions, d_model]
  const float* encoder_t5 = nullptr;            // T5: [buckets, heads]
  const float* decoder_t5 = nullptr;
};

// The encoder-decoder's layout on top of the shared checks (runtime/models/weight_resolver.h).
class Resolver : public WeightResolver {
 public:
  explicit Resolver(const Model& model) : WeightResolver(model) {}

  Status EncoderLayer(int i, EncoderLayerWeights* w) {
    char layer[kNameSize], buf[kNameSize];
    FormatName(layer, sizeof layer, "encoder.layers.%d", i);
    FormatName(buf, sizeof buf, "%s.self_attn", layer);
    TERN_RETURN_IF_ERROR(Attention(buf, true, &w->self_attn));
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
    TERN_RETURN_IF_ERROR(Attention(buf, true, &w->self_attn));
    FormatName(buf, sizeof buf, "%s.self_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(Norm(buf, &w->self_attn_norm));
    FormatName(buf, sizeof buf, "%s.encoder_attn", layer);
    TERN_RETURN_IF_ERROR(Attention(buf, false, &w->cross_attn));
    FormatName(buf, sizeof buf, "%s.encoder_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(Norm(buf, &w->cross_attn_norm));
    TERN_RETURN_IF_ERROR(FeedForward(layer, &w->ffn));
    FormatName(buf, sizeof buf, "%s.final_layer_norm", layer);
    return Norm(buf, &w->ffn_norm);
  }

  // Universal Transformer ACT: "<stack>.halting.weight" [1, d] and ".bias" [1], f32 (a
  // quantized halting unit could flip halting decisions; it is d + 1 numbers).
  Status Halting(const char* stack, HaltingWeights* h) {
    const int64_t dims[2] = {1, d_};
    const int64_t one = 1;
    const char* leaves[] = {"weight", "bias"};
    const float** targets[] = {&h->weight, &h->bias};
    for (int i = 0; i < 2; ++i) {
      char buf[kNameSize];
      FormatName(buf, sizeof buf, "%s.halting.%s", stack, leaves[i]);
      TensorInfo info;
      TERN_RETURN_IF_ERROR(model_.Require(buf, i == 0 ? 2 : 1, i == 0 ? dims : &one, &info));
      if (info.dtype != DType::kF32) {
        return Status::Error(StatusCode::kDTypeMismatch,
                             "tensor \"%s\" is %s; the halting unit must be f32", buf,
                             DTypeName(info.dtype));
      }
      *targets[i] = static_cast<const float*>(info.data);
    }
    return Status::Ok();
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
      TERN_RETURN_IF_ERROR(
          Matrix("output_projection.weight", c.tgt_vocab_size, d_, &output->weight));
    }
    TERN_RETURN_IF_ERROR(Vector("output_projection.bias", c.tgt_vocab_size, false, &output->bias));
    if (c.has_final_norm()) {
      TERN_RETURN_IF_ERROR(Norm("encoder.layer_norm", enc_norm));
      TERN_RETURN_IF_ERROR(Norm("decoder.layer_norm", dec_norm));
    }
    return Status::Ok();
  }

  // Learned position tables or the T5 bias tables, per the config's position kind.
  Status Positions(PositionWeights* p) {
    const ModelConfig& c = model_.config();
    if (c.position == PositionKind::kLearned) {
      TERN_RETURN_IF_ERROR(
          Matrix("encoder.embed_positions.weight", c.max_positions, d_, &p->encoder_learned));
      TERN_RETURN_IF_ERROR(
          Matrix("decoder.embed_positions.weight", c.max_positions, d_, &p->decoder_learned));
    }
    if (c.position == PositionKind::kRelative &&
        c.relative_attention == RelativeAttention::kT5Bias) {
      TERN_RETURN_IF_ERROR(Table("encoder.relative_attention_bias.weight", c.relative_buckets,
                                 c.heads, &p->encoder_t5));
      TERN_RETURN_IF_ERROR(Table("decoder.relative_attention_bias.weight", c.relative_buckets,
                                 c.heads, &p->decoder_t5));
    }
    return Status::Ok();
  }
};

}  // namespace

struct EncoderDecoder::BufferIds {
  int encoder_layers, decoder_layers, positions, relative_scratch, enc_up, dec_up, src_lengths;
  // Universal Transformer only (-1 otherwise): the step's timing signal, ACT state per stack.
  int step_signal, enc_act_acc, enc_act_weights, enc_act_out, dec_act_acc, dec_act_weights,
      dec_act_out;
  int enc_x, enc_q, enc_k, enc_v, enc_attn, enc_hidden, enc_scores;
  int cross_kv, self_kv;
  int dec_x, dec_q, dec_attn, dec_hidden, dec_scores, logits, tokens, beam_scratch, decoder_state;
  // XNNPACK backend only (-1 otherwise).
  XnnpackLinearBuffers xnn;
  int xnn_attention, att_gather, att_scores, att_qk_workspace, att_av_workspace;
};

// What PlanXnnpack decided; identical in RequiredArenaBytes and Prepare for the same inputs: the
// linear layers' plan and the encoder's batched attention (its operators are in region_bytes).
struct EncoderDecoder::XnnPlan : XnnpackLinearsPlan {
#if TERN_XNNPACK_BUILD
  xnn::AttentionShape attention_shape;
  xnn::AttentionNeeds attention;
#endif
};

namespace {

// Every linear layer, in a fixed order, with the rows and strides it is called with: f(weights,
// max_rows, input_stride, output_stride). Measuring and creating visit the same sequence.
template <typename F>
Status VisitEncoderLinears(const ModelConfig& c, const Limits& l, EncoderLayerWeights& w, F&& f) {
  const int64_t d = c.d_model, ff = c.d_ff;
  const int64_t rows = static_cast<int64_t>(l.max_batch) * l.max_source_length;
  TERN_RETURN_IF_ERROR(f(w.self_attn.q, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.k, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.v, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.out, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.ffn.fc1, rows, d, ff));
  TERN_RETURN_IF_ERROR(f(w.ffn.fc2, rows, ff, d));
  return c.activation == ref::Activation::kSwiGLU ? f(w.ffn.fc3, rows, d, ff) : Status::Ok();
}

template <typename F>
Status VisitDecoderLinears(const ModelConfig& c, const Limits& l, DecoderLayerWeights& w, F&& f) {
  const int64_t d = c.d_model, ff = c.d_ff;
  const int64_t rows = static_cast<int64_t>(l.max_batch) * l.beam_size;  // decoder rows
  const int64_t src_rows = static_cast<int64_t>(l.max_batch) * l.max_source_length;
  const int64_t cache = static_cast<int64_t>(l.max_target_length) * d;  // K/V cache row stride
  TERN_RETURN_IF_ERROR(f(w.self_attn.q, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.k, rows, d, cache));
  TERN_RETURN_IF_ERROR(f(w.self_attn.v, rows, d, cache));
  TERN_RETURN_IF_ERROR(f(w.self_attn.out, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.cross_attn.q, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.cross_attn.k, src_rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.cross_attn.v, src_rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.cross_attn.out, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.ffn.fc1, rows, d, ff));
  TERN_RETURN_IF_ERROR(f(w.ffn.fc2, rows, ff, d));
  return c.activation == ref::Activation::kSwiGLU ? f(w.ffn.fc3, rows, d, ff) : Status::Ok();
}

template <typename F>
Status VisitOutputLinear(const ModelConfig& c, const Limits& l, LinearWeights& w, F&& f) {
  return f(w, static_cast<int64_t>(l.max_batch) * l.beam_size, c.d_model, c.tgt_vocab_size);
}

}  // namespace

// Floats of the session's position tables (for positions [0, L), L = the longer of the source
// and target limits): sinusoidal: one [L, d] table; learned: the encoder's and the decoder's
// rows, dequantized; rotary: cos and sin [L, rotary_dim / 2]; T5: the encoder's and decoder's
// bias by distance, [heads, 2L - 1] each; Shaw and none: nothing.
size_t PositionFloats(const ModelConfig& c, const Limits& limits) {
  const size_t rows = static_cast<size_t>(limits.max_source_length > limits.max_target_length
                                              ? limits.max_source_length
                                              : limits.max_target_length);
  const size_t d = static_cast<size_t>(c.d_model);
  switch (c.position) {
    case PositionKind::kSinusoidal:
      return CheckedMul(rows, d);
    case PositionKind::kLearned:
      return CheckedMul(2 * rows, d);
    case PositionKind::kRotary:
      return CheckedMul(rows, static_cast<size_t>(c.rotary_dim > 0 ? c.rotary_dim : c.d_head()));
    case PositionKind::kRelative:
      if (c.relative_attention == RelativeAttention::kT5Bias) {
        return CheckedMul(2 * static_cast<size_t>(c.heads), 2 * rows - 1);
      }
      return 0;
    case PositionKind::kNone:
      return 0;
  }
  return 0;
}

Status ValidateArchitecture(const Model& model) {
  switch (model.config().architecture) {
    case Architecture::kEncoderDecoder:
      return EncoderDecoder::Validate(model);
    case Architecture::kDecoderOnly:
      return DecoderOnly::Validate(model);
    case Architecture::kUniversal:
      return EncoderDecoder::Validate(model);
  }
  return Status::Error(StatusCode::kInvalidConfig, "unknown architecture");
}

Status EncoderDecoder::Validate(const Model& model) {
  const ModelConfig& c = model.config();
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
    if (c.universal_steps < 1) {
      return Status::Error(
          StatusCode::kInvalidConfig,
          "config.universal_steps = %d; a universal transformer applies its block at least once",
          c.universal_steps);
    }
  }
  Resolver resolve(model);
  WeightView src, tgt;
  LinearWeights output;
  NormWeights enc_norm, dec_norm;
  TERN_RETURN_IF_ERROR(resolve.Globals(&src, &tgt, &output, &enc_norm, &dec_norm));
  PositionWeights positions;
  TERN_RETURN_IF_ERROR(resolve.Positions(&positions));
  for (int i = 0; i < c.encoder_layers; ++i) {
    EncoderLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.EncoderLayer(i, &layer));
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    DecoderLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.DecoderLayer(i, &layer));
  }
  if (c.architecture == Architecture::kUniversal && c.act_threshold > 0.0f) {
    HaltingWeights halting;
    TERN_RETURN_IF_ERROR(resolve.Halting("encoder", &halting));
    TERN_RETURN_IF_ERROR(resolve.Halting("decoder", &halting));
  }
  return Status::Ok();
}

Status EncoderDecoder::CheckLimits(const Model& model, const Limits& limits) {
  const ModelConfig& c = model.config();
  TERN_RETURN_IF_ERROR(CheckBackendLimits(limits));
  if (limits.max_batch < 1 || limits.max_batch > 4096) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.max_batch = %d; 1 to 4096 allowed",
                         limits.max_batch);
  }
  if (limits.beam_size < 1 || limits.beam_size > 256) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.beam_size = %d; 1 to 256 allowed",
                         limits.beam_size);
  }
  if (limits.max_source_length < 1 || limits.max_source_length > c.max_positions) {
    return Status::Error(
        StatusCode::kInvalidArgument,
        "limits.max_source_length = %d; 1 to the model's max_positions (%d) allowed",
        limits.max_source_length, c.max_positions);
  }
  if (limits.max_target_length < 1 || limits.max_target_length > c.max_positions) {
    return Status::Error(
        StatusCode::kInvalidArgument,
        "limits.max_target_length = %d; 1 to the model's max_positions (%d) allowed",
        limits.max_target_length, c.max_positions);
  }
  return Status::Ok();
}

Status EncoderDecoder::Plan(const ModelConfig& c, const Limits& limits, const XnnPlan& xnn,
                            GreedyPlanner* p, BufferIds* ids) {
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
  // Self-attention K/V caches: one per decoder layer, or (Universal) one per recurrent step.
  const bool universal = c.architecture == Architecture::kUniversal;
  const size_t kv_layers = universal ? static_cast<size_t>(c.universal_steps) : ld;
  const size_t keys = s > t ? s : t;
  const size_t positions = PositionFloats(c, limits);
  // Weight tables and positions live for the whole session; encoder buffers only while
  // encoding (the encoder output also feeds the cross K/V step); decoder buffers while decoding.
  ids->encoder_layers =
      p->Add("encoder_layers", CheckedMul(le, sizeof(EncoderLayerWeights)), kPrepare, kDecoder);
  ids->decoder_layers =
      p->Add("decoder_layers", CheckedMul(ld, sizeof(DecoderLayerWeights)), kPrepare, kDecoder);
  ids->positions = p->Add("positions", CheckedMul(positions, f), kPrepare, kDecoder);
  ids->relative_scratch = -1;
  if (c.position == PositionKind::kRelative && c.relative_attention == RelativeAttention::kShaw) {
    const size_t span = 2 * static_cast<size_t>(c.relative_max_distance) + 1;
    ids->relative_scratch = p->Add("relative_scratch", CheckedMul(span, f), kEncoder, kDecoder);
  }
  ids->enc_up = ids->dec_up = -1;
  if (c.activation == ref::Activation::kSwiGLU) {
    ids->enc_up = p->Add("enc_up", CheckedMul(b * s, ff, f), kEncoder, kEncoder);
    ids->dec_up = p->Add("dec_up", CheckedMul(rows, ff, f), kDecoder, kDecoder);
  }
  ids->src_lengths = p->Add("src_lengths", CheckedMul(b, sizeof(int32_t)), kEncoder, kDecoder);
  ids->enc_x = p->Add("enc_x", CheckedMul(b * s, d, f), kEncoder, kCrossKeysValues);
  ids->enc_q = p->Add("enc_q", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_k = p->Add("enc_k", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_v = p->Add("enc_v", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_attn = p->Add("enc_attn", CheckedMul(b * s, d, f), kEncoder, kEncoder);
  ids->enc_hidden = p->Add("enc_hidden", CheckedMul(b * s, ff, f), kEncoder, kEncoder);
  ids->enc_scores = p->Add("enc_scores", CheckedMul(s, s, f), kEncoder, kEncoder);
  ids->cross_kv = p->Add("cross_kv", CheckedMul(CheckedMul(ld, 2, b), CheckedMul(s, d, f)),
                         kCrossKeysValues, kDecoder);
  ids->self_kv = p->Add("self_kv", CheckedMul(CheckedMul(kv_layers, 2, rows), CheckedMul(t, d, f)),
                        kDecoder, kDecoder);
  ids->dec_x = p->Add("dec_x", CheckedMul(rows, d, f), kDecoder, kDecoder);
  ids->dec_q = p->Add("dec_q", CheckedMul(rows, d, f), kDecoder, kDecoder);
  ids->dec_attn = p->Add("dec_attn", CheckedMul(rows, d, f), kDecoder, kDecoder);
  ids->dec_hidden = p->Add("dec_hidden", CheckedMul(rows, ff, f), kDecoder, kDecoder);
  ids->dec_scores = p->Add("dec_scores", CheckedMul(keys, f), kDecoder, kDecoder);
  ids->logits = p->Add("logits", CheckedMul(rows, static_cast<size_t>(c.tgt_vocab_size), f),
                       kDecoder, kDecoder);
  ids->tokens = p->Add("tokens", CheckedMul(rows, sizeof(int32_t)), kDecoder, kDecoder);
  ids->beam_scratch = -1;
  if (k > 1)
    ids->beam_scratch =
        p->Add("beam_scratch", CheckedMul(k, t, CheckedMul(d, f)), kDecoder, kDecoder);
  ids->decoder_state = p->Add("decoder_state", DecoderStateBytes(c, limits), kDecoder, kDecoder);
  ids->step_signal = ids->enc_act_acc = ids->enc_act_weights = ids->enc_act_out = -1;
  ids->dec_act_acc = ids->dec_act_weights = ids->dec_act_out = -1;
  if (universal) {
    // Reused by every step: apart from self_kv, nothing here depends on universal_steps.
    ids->step_signal = p->Add("step_signal", CheckedMul(d, f), kEncoder, kDecoder);
    if (c.act_threshold > 0.0f) {
      ids->enc_act_acc = p->Add("encoder_act_acc", CheckedMul(b * s, f), kEncoder, kEncoder);
      ids->enc_act_weights =
          p->Add("encoder_act_weights", CheckedMul(b * s, f), kEncoder, kEncoder);
      ids->enc_act_out = p->Add("encoder_act_out", CheckedMul(b * s, d, f), kEncoder, kEncoder);
      ids->dec_act_acc = p->Add("decoder_act_acc", CheckedMul(rows, f), kDecoder, kDecoder);
      ids->dec_act_weights = p->Add("decoder_act_weights", CheckedMul(rows, f), kDecoder, kDecoder);
      ids->dec_act_out = p->Add("decoder_act_out", CheckedMul(rows, d, f), kDecoder, kDecoder);
    }
  }
  ids->xnn = XnnpackLinearBuffers();
  ids->xnn_attention = ids->att_gather = ids->att_scores = ids->att_qk_workspace =
      ids->att_av_workspace = -1;
  PlanXnnpackOperators(xnn, kPrepare, kDecoder, p, &ids->xnn);
  PlanXnnpackScratch(xnn, kPrepare, kEncoder, kDecoder, p, &ids->xnn);
#if TERN_XNNPACK_BUILD
  if (xnn.backend == Backend::kXnnpack) {
    // Attention: the struct for the whole session (the decoder's loops use it too); the
    // batched path's buffers only while encoding.
    ids->xnn_attention = p->Add("xnnpack_attention", sizeof(xnn::Attention), kPrepare, kDecoder);
    if (xnn.attention.gather_bytes) {
      ids->att_gather = p->Add("attention_gather", xnn.attention.gather_bytes, kEncoder, kEncoder);
      ids->att_scores = p->Add("attention_scores", xnn.attention.scores_bytes, kEncoder, kEncoder);
      ids->att_qk_workspace =
          p->Add("attention_qk_workspace", xnn.attention.qk_workspace_bytes, kEncoder, kEncoder);
      ids->att_av_workspace =
          p->Add("attention_av_workspace", xnn.attention.av_workspace_bytes, kEncoder, kEncoder);
    }
  }
#endif
  return p->Plan();
}

Result<size_t> EncoderDecoder::RequiredArenaBytes(const Model& model, const Limits& limits) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  XnnPlan xnn;
  TERN_RETURN_IF_ERROR(PlanXnnpack(model, limits, &xnn));
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(Plan(model.config(), limits, xnn, &planner, &ids));
  return planner.arena_bytes();  // with the slack to align the caller's pointer
}

Status EncoderDecoder::PlanArena(const Model& model, const Limits& limits, GreedyPlanner* planner) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  XnnPlan xnn;
  TERN_RETURN_IF_ERROR(PlanXnnpack(model, limits, &xnn));
  BufferIds ids;
  return Plan(model.config(), limits, xnn, planner, &ids);
}

Status EncoderDecoder::PlanXnnpack(const Model& model, const Limits& limits, XnnPlan* plan) {
  if (!ChooseBackend(limits, plan)) return Status::Ok();
#if TERN_XNNPACK_BUILD
  const ModelConfig& c = model.config();
  auto measure = [&](LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy) {
    return plan->Measure(w, rows, ldx, ldy);
  };
  Resolver resolve(model);
  WeightView src, tgt;
  LinearWeights output;
  NormWeights enc_norm, dec_norm;
  TERN_RETURN_IF_ERROR(resolve.Globals(&src, &tgt, &output, &enc_norm, &dec_norm));
  for (int i = 0; i < c.encoder_layers; ++i) {
    EncoderLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.EncoderLayer(i, &layer));
    TERN_RETURN_IF_ERROR(VisitEncoderLinears(c, limits, layer, measure));
  }
  for (int i = 0; i < c.decoder_layers; ++i) {
    DecoderLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.DecoderLayer(i, &layer));
    TERN_RETURN_IF_ERROR(VisitDecoderLinears(c, limits, layer, measure));
  }
  TERN_RETURN_IF_ERROR(VisitOutputLinear(c, limits, output, measure));
  TERN_RETURN_IF_ERROR(plan->MeasureContext());
  plan->attention_shape.heads = c.heads;
  plan->attention_shape.d_head = c.d_head();
  plan->attention_shape.max_queries = limits.max_source_length;
  plan->attention_shape.max_keys = limits.max_source_length;
  TERN_RETURN_IF_ERROR(xnn::MeasureAttention(plan->attention_shape, &plan->attention));
  plan->region_bytes = CheckedAdd(plan->region_bytes, plan->attention.xnn_bytes);
#else
  (void)model;
#endif
  return Status::Ok();
}

Status EncoderDecoder::ResolveWeights(const Model& model) {
  Resolver resolve(model);
  TERN_RETURN_IF_ERROR(
      resolve.Globals(&src_embed_, &tgt_embed_, &output_, &encoder_norm_, &decoder_norm_));
  for (int i = 0; i < config_.encoder_layers; ++i) {
    TERN_RETURN_IF_ERROR(resolve.EncoderLayer(i, &encoder_layers_[i]));
  }
  for (int i = 0; i < config_.decoder_layers; ++i) {
    TERN_RETURN_IF_ERROR(resolve.DecoderLayer(i, &decoder_layers_[i]));
  }
  encoder_halting_ = decoder_halting_ = HaltingWeights();
  if (universal() && config_.act_threshold > 0.0f) {
    TERN_RETURN_IF_ERROR(resolve.Halting("encoder", &encoder_halting_));
    TERN_RETURN_IF_ERROR(resolve.Halting("decoder", &decoder_halting_));
  }
  return Status::Ok();
}

EncoderDecoder::~EncoderDecoder() { Reset(); }

void EncoderDecoder::Reset() {
  encoded_ = false;
  encoder_layers_ = nullptr;
  decoder_layers_ = nullptr;
  backend_ = Backend::kReference;
  arena_used_ = 0;
  xnn_.Release();
}

uint64_t EncoderDecoder::kernel_fallback_calls() const { return xnn_.fallback_calls(); }

Status EncoderDecoder::Prepare(const Model& model, const Limits& limits, void* arena,
                               size_t arena_bytes) {
  Reset();
  const Status status = PrepareInArena(model, limits, arena, arena_bytes);
  if (!status.ok()) {
    Reset();
    std::snprintf(report_, sizeof report_, "not prepared: %s", status.message());
  }
  return status;
}

Status EncoderDecoder::PrepareInArena(const Model& model, const Limits& limits, void* arena,
                                      size_t arena_bytes) {
  if (model.schema() == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "model is not loaded");
  }
  if (arena == nullptr) return Status::Error(StatusCode::kInvalidArgument, "arena is null");
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  XnnPlan xnn;
  TERN_RETURN_IF_ERROR(PlanXnnpack(model, limits, &xnn));
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(Plan(model.config(), limits, xnn, &planner, &ids));
  uint8_t* base = nullptr;
  TERN_RETURN_IF_ERROR(planner.Place(arena, arena_bytes, &base));
  auto at = [&](int id) { return base + planner.offset(id); };
  config_ = model.config();
  limits_ = limits;
  arena_used_ = planner.arena_bytes();
  encoder_layers_ = reinterpret_cast<EncoderLayerWeights*>(at(ids.encoder_layers));
  decoder_layers_ = reinterpret_cast<DecoderLayerWeights*>(at(ids.decoder_layers));
  for (int i = 0; i < config_.encoder_layers; ++i) new (&encoder_layers_[i]) EncoderLayerWeights();
  for (int i = 0; i < config_.decoder_layers; ++i) new (&decoder_layers_[i]) DecoderLayerWeights();
  TERN_RETURN_IF_ERROR(ResolveWeights(model));

  positions_ = reinterpret_cast<float*>(at(ids.positions));
  position_rows_ = limits.max_source_length > limits.max_target_length ? limits.max_source_length
                                                                       : limits.max_target_length;
  TERN_RETURN_IF_ERROR(
      PreparePositions(model, ids.relative_scratch >= 0 ? at(ids.relative_scratch) : nullptr));
  src_lengths_ = reinterpret_cast<int32_t*>(at(ids.src_lengths));
  enc_x_ = reinterpret_cast<float*>(at(ids.enc_x));
  enc_scratch_.q = reinterpret_cast<float*>(at(ids.enc_q));
  enc_scratch_.k = reinterpret_cast<float*>(at(ids.enc_k));
  enc_scratch_.v = reinterpret_cast<float*>(at(ids.enc_v));
  enc_scratch_.attn = reinterpret_cast<float*>(at(ids.enc_attn));
  enc_scratch_.hidden = reinterpret_cast<float*>(at(ids.enc_hidden));
  enc_scratch_.up = ids.enc_up >= 0 ? reinterpret_cast<float*>(at(ids.enc_up)) : nullptr;
  enc_scratch_.scores = reinterpret_cast<float*>(at(ids.enc_scores));
  cross_kv_ = reinterpret_cast<float*>(at(ids.cross_kv));
  self_kv_ = reinterpret_cast<float*>(at(ids.self_kv));
  dec_x_ = reinterpret_cast<float*>(at(ids.dec_x));
  dec_scratch_.q = reinterpret_cast<float*>(at(ids.dec_q));
  dec_scratch_.attn = reinterpret_cast<float*>(at(ids.dec_attn));
  dec_scratch_.hidden = reinterpret_cast<float*>(at(ids.dec_hidden));
  dec_scratch_.up = ids.dec_up >= 0 ? reinterpret_cast<float*>(at(ids.dec_up)) : nullptr;
  dec_scratch_.scores = reinterpret_cast<float*>(at(ids.dec_scores));
  logits_ = reinterpret_cast<float*>(at(ids.logits));
  tokens_ = reinterpret_cast<int32_t*>(at(ids.tokens));
  beam_scratch_ = ids.beam_scratch >= 0 ? reinterpret_cast<float*>(at(ids.beam_scratch)) : nullptr;
  decoder_state_ = at(ids.decoder_state);
  auto floats = [&](int id) { return id >= 0 ? reinterpret_cast<float*>(at(id)) : nullptr; };
  step_signal_ = floats(ids.step_signal);
  enc_act_ =
      ActState{floats(ids.enc_act_acc), floats(ids.enc_act_weights), floats(ids.enc_act_out)};
  dec_act_ =
      ActState{floats(ids.dec_act_acc), floats(ids.dec_act_weights), floats(ids.dec_act_out)};

  backend_ = xnn.backend;
  enc_scratch_.kernels = ops::Kernels();
  dec_scratch_.kernels = ops::Kernels();
  if (backend_ == Backend::kXnnpack) {
    TERN_RETURN_IF_ERROR(CreateXnnpackOperators(xnn, planner, ids, base));
  } else {
    WriteReferenceReport(limits, xnn, report_, sizeof report_);
  }
  return Status::Ok();
}

Status EncoderDecoder::PreparePositions(const Model& model, uint8_t* relative_scratch) {
  const ModelConfig& c = config_;
  const int64_t d = c.d_model, rows = position_rows_;
  enc_positions_ = dec_positions_ = nullptr;
  enc_scratch_.positions = StackPositions();
  dec_scratch_.positions = StackPositions();
  Resolver resolve(model);
  PositionWeights weights;
  TERN_RETURN_IF_ERROR(resolve.Positions(&weights));
  switch (c.position) {
    case PositionKind::kSinusoidal:
      ops::SinusoidalPositions(0, rows, d, c.sinusoid_layout, positions_);
      enc_positions_ = dec_positions_ = positions_;
      break;
    case PositionKind::kLearned:
      // Rows 0..rows-1 of each table, dequantized once (the tables may be int8 like embeddings).
      {
        float* enc = positions_;
        float* dec = positions_ + rows * d;
        for (int32_t p = 0; p < rows; ++p) {
          ops::Embedding(weights.encoder_learned, &p, 1, 1.0f, enc + p * d);
          ops::Embedding(weights.decoder_learned, &p, 1, 1.0f, dec + p * d);
        }
        enc_positions_ = enc;
        dec_positions_ = dec;
        break;
      }
    case PositionKind::kRotary: {
      rotary_.rotary_dim = c.rotary_dim > 0 ? c.rotary_dim : c.d_head();
      float* cos = positions_;
      float* sin = positions_ + rows * (rotary_.rotary_dim / 2);
      ops::RotaryTables(rows, rotary_.rotary_dim, c.rotary_base, cos, sin);
      rotary_.cos = cos;
      rotary_.sin = sin;
      enc_scratch_.positions.rotary = &rotary_;
      dec_scratch_.positions.rotary = &rotary_;
      break;
    }
    case PositionKind::kRelative:
      if (c.relative_attention == RelativeAttention::kT5Bias) {
        // Bias by distance per head, bidirectional buckets for the encoder, unidirectional
        // (looking back only) for the decoder's self-attention.
        const int64_t span = 2 * rows - 1;
        float* enc = positions_;
        float* dec = positions_ + c.heads * span;
        ops::T5BiasByDistance(weights.encoder_t5, c.heads, c.relative_buckets,
                              c.relative_max_distance, true, rows, enc);
        ops::T5BiasByDistance(weights.decoder_t5, c.heads, c.relative_buckets,
                              c.relative_max_distance, false, rows, dec);
        for (StackPositions* p : {&enc_scratch_.positions, &dec_scratch_.positions}) {
          p->bias_stride = span;
          p->bias_center = rows - 1;
        }
        enc_scratch_.positions.t5_bias = enc;
        dec_scratch_.positions.t5_bias = dec;
      } else {
        for (StackPositions* p : {&enc_scratch_.positions, &dec_scratch_.positions}) {
          p->relative_scratch = reinterpret_cast<float*>(relative_scratch);
          p->max_distance = c.relative_max_distance;
        }
      }
      break;
    case PositionKind::kNone:
      break;
  }
  return Status::Ok();
}

Status EncoderDecoder::CreateXnnpackOperators(const XnnPlan& plan, const GreedyPlanner& planner,
                                              const BufferIds& ids, uint8_t* base) {
#if TERN_XNNPACK_BUILD
  auto at = [&](int id) { return id >= 0 ? base + planner.offset(id) : nullptr; };
  xnn_.Start(plan, ids.xnn, planner, base);
  xnn::Attention* attention = new (at(ids.xnn_attention)) xnn::Attention();
  attention->pool = xnn_.pool();
  attention->shape = plan.attention_shape;
  if (ids.att_gather >= 0) {
    attention->gather = reinterpret_cast<float*>(at(ids.att_gather));
    attention->gather_bytes = plan.attention.gather_bytes;
    attention->scores = reinterpret_cast<float*>(at(ids.att_scores));
    attention->scores_bytes = plan.attention.scores_bytes;
    attention->qk_workspace = at(ids.att_qk_workspace);
    attention->qk_workspace_bytes = plan.attention.qk_workspace_bytes;
    attention->av_workspace = at(ids.att_av_workspace);
    attention->av_workspace_bytes = plan.attention.av_workspace_bytes;
  }
  ops::Kernels fast;
  fast.attention = attention;
  fast.vectorized = true;
  enc_scratch_.kernels = fast;
  dec_scratch_.kernels = fast;

  {
    XnnpackLinearsCreator create(plan, ids.xnn, planner, base, xnn_.context());
    TERN_RETURN_IF_ERROR(create.Start());
    // The encoder's attention operators are in the same region: PlanXnnpack measured them into it.
    if (plan.attention.xnn_bytes > 0)
      TERN_RETURN_IF_ERROR(xnn::CreateAttention(plan.attention_shape, attention));
    for (int i = 0; i < config_.encoder_layers; ++i) {
      TERN_RETURN_IF_ERROR(VisitEncoderLinears(config_, limits_, encoder_layers_[i], create));
    }
    for (int i = 0; i < config_.decoder_layers; ++i) {
      TERN_RETURN_IF_ERROR(VisitDecoderLinears(config_, limits_, decoder_layers_[i], create));
    }
    TERN_RETURN_IF_ERROR(VisitOutputLinear(config_, limits_, output_, create));
    TERN_RETURN_IF_ERROR(create.Finish());
  }

  // The report: "xnnpack, 1 thread: 97 linear layers: 96 fully_connected_nc_qd8_f32_qc8w, 1 ...",
  // then what only this model has: attention and the detailed fallbacks.
  ReportWriter report(report_, sizeof report_);
  AppendXnnpackLinearsReport(plan, xnn_, &report);
  if (plan.fallbacks[0][0] > 0) {
    report.Append(
        "; %d layers on the reference kernel: XNNPACK has no operator for their weights (int4 "
        "blocks must be a multiple of 32 dividing the row; int8 needs one scale per row)",
        plan.fallbacks[0][0]);
  }
  report.Append(
      "%s",
      attention->qk != nullptr
          ? "; attention: encoder batch_matrix_multiply + softmax_nc_f32, decoder vectorized loops"
          : "; attention: vectorized loops");
  report.Append("%s", "; LayerNorm, activations: vectorized loops");
  for (int p = 0; p < xnn::kLinearPathCount; ++p) {
    for (int q = 0; q < xnn::kLinearPathCount; ++q) {
      if (plan.fallbacks[p][q] == 0 || p == 0) continue;
      report.Append("; fallback: %d layers %s unsupported here -> %s", plan.fallbacks[p][q],
                    xnn::LinearPathName(static_cast<xnn::LinearPath>(p)),
                    xnn::LinearPathName(static_cast<xnn::LinearPath>(q)));
    }
  }
  return Status::Ok();
#else
  (void)plan;
  (void)planner;
  (void)ids;
  (void)base;
  return Status::Error(StatusCode::kNotSupported, "this build has no XNNPACK");
#endif
}

Status EncoderDecoder::Encode(const int32_t* src_ids, int64_t src_stride, const int32_t* lengths,
                              int32_t batch) {
  encoded_ = false;
  if (encoder_layers_ == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "session is not prepared");
  }
  if (batch < 1 || batch > limits_.max_batch) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "batch of %d sentences; this session allows 1 to %d", batch,
                         limits_.max_batch);
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
        return Status::Error(
            StatusCode::kOutOfRange,
            "sentence %d: source token id %d at %d is outside the vocabulary [0, %d)", b, id, i,
            config_.src_vocab_size);
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
    // Universal: the positions come with each step's coordinate embedding instead.
    if (enc_positions_ != nullptr && !universal()) ops::AddRows(x, enc_positions_, seq, d);
  }
  if (universal()) {
    UniversalEncoderSteps(batch, seq);
  } else {
    for (int i = 0; i < config_.encoder_layers; ++i) {
      EncoderLayerForward(config_, encoder_layers_[i], enc_x_, batch, seq, src_lengths_,
                          enc_scratch_);
    }
  }
  FinalNorm(config_, enc_scratch_.kernels, encoder_norm_, enc_x_, batch * seq);
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
    return Status::Error(StatusCode::kInvalidArgument,
                         "%d rows per sentence; the session allows 1 to %d", rows,
                         limits_.beam_size);
  }
  rows_per_sentence_ = rows;
  return Status::Ok();
}

Status EncoderDecoder::ReorderRows(const int32_t* parents) {
  if (!encoded_) return Status::Error(StatusCode::kFailedPrecondition, "ReorderRows before Encode");
  const int32_t k = rows_per_sentence_;
  for (int32_t r = 0; r < decoder_rows(); ++r) {
    if (parents[r] / k != r / k || parents[r] < 0) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "row %d cannot continue row %d of another sentence", r, parents[r]);
    }
  }
  if (k == 1 || position_ == 0) return Status::Ok();
  // Per layer, K then V: gather each sentence's k rows through the scratch (rows may swap).
  const int64_t d = config_.d_model;
  const int64_t capacity = limits_.max_target_length;
  const size_t used = static_cast<size_t>(position_ * d) * sizeof(float);
  const size_t self_kv = static_cast<size_t>(decoder_rows()) * capacity * d;
  const int64_t kv_layers = universal() ? config_.universal_steps : config_.decoder_layers;
  for (int64_t half = 0; half < 2LL * kv_layers; ++half) {
    float* cache = self_kv_ + half * self_kv;
    for (int32_t sentence = 0; sentence < batch_; ++sentence) {
      bool identity = true;
      for (int32_t j = 0; j < k; ++j)
        identity = identity && parents[sentence * k + j] == sentence * k + j;
      if (identity) continue;
      for (int32_t j = 0; j < k; ++j) {
        std::memcpy(beam_scratch_ + j * capacity * d,
                    cache + parents[sentence * k + j] * capacity * d, used);
      }
      for (int32_t j = 0; j < k; ++j) {
        std::memcpy(cache + (sentence * k + j) * capacity * d, beam_scratch_ + j * capacity * d,
                    used);
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
    return Status::Error(StatusCode::kOutOfRange,
                         "decoder reached the session's max_target_length (%d)",
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
  if (dec_positions_ != nullptr && !universal()) {
    for (int32_t b = 0; b < rows; ++b)
      ops::AddRows(dec_x_ + b * d, dec_positions_ + position_ * d, 1, d);
  }

  DecoderStepShape shape{};
  shape.batch = rows;
  shape.rows_per_sentence = rows_per_sentence_;
  shape.position = position_;
  shape.self_capacity = limits_.max_target_length;
  shape.src_seq = src_seq_;
  shape.src_lengths = src_lengths_;
  const size_t cross_kv = static_cast<size_t>(batch_) * src_seq_ * d;
  const size_t self_kv = static_cast<size_t>(rows) * limits_.max_target_length * d;
  if (universal()) UniversalDecoderSteps(shape);
  for (int i = 0; i < config_.decoder_layers && !universal(); ++i) {
    DecoderLayerCache cache;
    cache.self_k = self_kv_ + (2 * i) * self_kv;
    cache.self_v = self_kv_ + (2 * i + 1) * self_kv;
    cache.cross_k = cross_kv_ + (2 * i) * cross_kv;
    cache.cross_v = cross_kv_ + (2 * i + 1) * cross_kv;
    DecoderLayerStep(config_, decoder_layers_[i], dec_x_, shape, cache, dec_scratch_);
  }
  FinalNorm(config_, dec_scratch_.kernels, decoder_norm_, dec_x_, rows);
  Linear(dec_x_, rows, d, output_, logits_, config_.tgt_vocab_size);
  ++position_;
  *logits = logits_;
  return Status::Ok();
}

}  // namespace tern
