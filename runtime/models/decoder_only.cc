#include "runtime/models/decoder_only.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "runtime/decoding/sampling.h"
#include "runtime/kernels/ops.h"
#include "runtime/models/weight_resolver.h"
#include "runtime/nn/linear.h"
#include "runtime/nn/residual.h"

#if TERN_XNNPACK_BUILD  // runtime/models/xnnpack_linears.h, via decoder_only.h
#include "runtime/kernels/xnnpack/attention.h"
#endif

namespace tern {

namespace {

// Lifetimes: everything lives from Prepare on; XNNPACK's prepare-time scratch only in Prepare.
enum Phase : int { kPrepare = 0, kRun = 1 };

// Canonical names (docs/CONVENTIONS.md, decoder-only) -> views into the model file.
class Resolver : public WeightResolver {
 public:
  explicit Resolver(const Model& model) : WeightResolver(model), c_(model.config()) {}

  Status Layer(int i, DecoderOnlyLayerWeights* w) {
    char layer[kNameSize], buf[kNameSize];
    FormatName(layer, sizeof layer, "decoder.layers.%d", i);
    FormatName(buf, sizeof buf, "%s.self_attn", layer);
    TERN_RETURN_IF_ERROR(Attention(buf, true, &w->self_attn));
    FormatName(buf, sizeof buf, "%s.self_attn_layer_norm", layer);
    TERN_RETURN_IF_ERROR(Norm(buf, &w->self_attn_norm));
    TERN_RETURN_IF_ERROR(FeedForward(layer, &w->ffn));  // fc1, fc2 and SwiGLU's fc3
    FormatName(buf, sizeof buf, "%s.final_layer_norm", layer);
    return Norm(buf, &w->ffn_norm);
  }

  Status Globals(WeightView* embed, WeightView* positions, LinearWeights* output,
                 NormWeights* norm) {
    TERN_RETURN_IF_ERROR(
        Matrix("decoder.embed_tokens.weight", c_.tgt_vocab_size, c_.d_model, embed));
    if (c_.position == PositionKind::kLearned) {
      TERN_RETURN_IF_ERROR(
          Matrix("decoder.embed_positions.weight", c_.max_positions, c_.d_model, positions));
    }
    if (c_.tied_output) {
      output->weight = *embed;
    } else {
      TERN_RETURN_IF_ERROR(
          Matrix("output_projection.weight", c_.tgt_vocab_size, c_.d_model, &output->weight));
    }
    TERN_RETURN_IF_ERROR(Vector("output_projection.bias", c_.tgt_vocab_size, false, &output->bias));
    if (c_.has_final_norm()) TERN_RETURN_IF_ERROR(Norm("decoder.layer_norm", norm));
    return Status::Ok();
  }

 private:
  const ModelConfig& c_;
};

// Rotated dimensions per head (config 0: all of d_head).
int32_t RotaryDim(const ModelConfig& c) { return c.rotary_dim > 0 ? c.rotary_dim : c.d_head(); }

// Rows of the activation buffers: a whole prompt (prefill) or one token per sequence (step).
int64_t PrefillRows(const Limits& l) {
  return l.max_source_length < l.max_target_length ? l.max_source_length : l.max_target_length;
}
int64_t ScratchRows(const Limits& l) {
  const int64_t p = PrefillRows(l);
  return p > l.max_batch ? p : l.max_batch;
}

// Every linear layer in a fixed order with the rows and strides it is called with.
template <typename F>
Status VisitLayerLinears(const ModelConfig& c, const Limits& l, DecoderOnlyLayerWeights& w, F&& f) {
  const int64_t d = c.d_model, ff = c.d_ff, rows = ScratchRows(l);
  TERN_RETURN_IF_ERROR(f(w.self_attn.q, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.k, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.v, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.self_attn.out, rows, d, d));
  TERN_RETURN_IF_ERROR(f(w.ffn.fc1, rows, d, ff));
  TERN_RETURN_IF_ERROR(f(w.ffn.fc2, rows, ff, d));
  return c.activation == ref::Activation::kSwiGLU ? f(w.ffn.fc3, rows, d, ff) : Status::Ok();
}

template <typename F>
Status VisitOutputLinear(const ModelConfig& c, const Limits& l, LinearWeights& w, F&& f) {
  return f(w, static_cast<int64_t>(l.max_batch), c.d_model, c.tgt_vocab_size);
}

}  // namespace

struct DecoderOnly::BufferIds {
  int layers, sinusoids, rotary, kv, x, q, k, v, attn, hidden, up, scores, position_ids, logits,
      lengths;
  int step_tokens, step_ids, sampling, generators;
  XnnpackLinearBuffers xnn;  // XNNPACK backend only (-1 otherwise)
  int xnn_attention;
};

// The linear layers' plan is all there is: attention runs as vectorized loops, no operators.
struct DecoderOnly::XnnPlan : XnnpackLinearsPlan {};

Status DecoderOnly::Validate(const Model& model) {
  const ModelConfig& c = model.config();
  // Relative positions (Shaw, T5 bias) would need their terms in the cached decode-step
  // attention, which this model does not compute.
  if (c.position == PositionKind::kRelative) {
    return Status::Error(
        StatusCode::kNotSupported,
        "config.position = relative: decoder-only models support learned, sinusoidal, rotary "
        "or no positions, not relative ones (yet)");
  }
  if (c.position != PositionKind::kLearned && c.position != PositionKind::kSinusoidal &&
      c.position != PositionKind::kRotary && c.position != PositionKind::kNone) {
    return Status::Error(StatusCode::kNotSupported,
                         "config.position = %d is not a position kind decoder-only models know",
                         static_cast<int>(c.position));
  }
  Resolver resolve(model);
  WeightView embed, positions;
  LinearWeights output;
  NormWeights norm;
  TERN_RETURN_IF_ERROR(resolve.Globals(&embed, &positions, &output, &norm));
  for (int i = 0; i < c.decoder_layers; ++i) {
    DecoderOnlyLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.Layer(i, &layer));
  }
  return Status::Ok();
}

Status DecoderOnly::CheckLimits(const Model& model, const Limits& limits) {
  const ModelConfig& c = model.config();
  if (c.architecture != Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "this model is not decoder-only (use tern::Session, C: "
                         "tern_session_create, to translate with it)");
  }
  TERN_RETURN_IF_ERROR(CheckBackendLimits(limits));
  if (limits.max_batch < 1 || limits.max_batch > 4096) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.max_batch = %d; 1 to 4096 allowed",
                         limits.max_batch);
  }
  if (limits.beam_size != 1) {
    return Status::Error(
        StatusCode::kNotSupported,
        "limits.beam_size = %d: decoder-only generation has no beam search (use 1)",
        limits.beam_size);
  }
  if (limits.max_source_length < 1 || limits.max_source_length > c.max_positions) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_source_length (longest prompt) = %d; 1 to the model's "
                         "max_positions (%d) allowed",
                         limits.max_source_length, c.max_positions);
  }
  if (limits.max_target_length < 1 || limits.max_target_length > c.max_positions) {
    return Status::Error(
        StatusCode::kInvalidArgument,
        "limits.max_target_length (prompt + generated tokens) = %d; 1 to the model's "
        "max_positions (%d) allowed",
        limits.max_target_length, c.max_positions);
  }
  return Status::Ok();
}

Status DecoderOnly::Plan(const ModelConfig& c, const Limits& limits, const XnnPlan& xnn,
                         GreedyPlanner* p, BufferIds* ids) {
  const size_t f = sizeof(float);
  const size_t d = static_cast<size_t>(c.d_model);
  const size_t ff = static_cast<size_t>(c.d_ff);
  const size_t b = static_cast<size_t>(limits.max_batch);
  const size_t t = static_cast<size_t>(limits.max_target_length);
  const size_t rows = static_cast<size_t>(ScratchRows(limits));
  const size_t prefill = static_cast<size_t>(PrefillRows(limits));
  const size_t layers = static_cast<size_t>(c.decoder_layers);
  const size_t vocab = static_cast<size_t>(c.tgt_vocab_size);
  ids->layers =
      p->Add("layers", CheckedMul(layers, sizeof(DecoderOnlyLayerWeights)), kPrepare, kRun);
  ids->sinusoids = ids->rotary = -1;
  if (c.position == PositionKind::kSinusoidal)
    ids->sinusoids = p->Add("positions", CheckedMul(t, d, f), kPrepare, kRun);
  if (c.position == PositionKind::kRotary) {
    // cos and sin for positions [0, capacity), rotary_dim / 2 each: [2, t, rotary_dim / 2].
    ids->rotary = p->Add("rotary_tables", CheckedMul(t, static_cast<size_t>(RotaryDim(c)), f),
                         kPrepare, kRun);
  }
  ids->kv =
      p->Add("self_kv", CheckedMul(CheckedMul(layers, 2, b), CheckedMul(t, d, f)), kRun, kRun);
  ids->x = p->Add("x", CheckedMul(rows, d, f), kRun, kRun);
  ids->q = p->Add("q", CheckedMul(rows, d, f), kRun, kRun);
  ids->k = p->Add("k", CheckedMul(rows, d, f), kRun, kRun);
  ids->v = p->Add("v", CheckedMul(rows, d, f), kRun, kRun);
  ids->attn = p->Add("attn", CheckedMul(rows, d, f), kRun, kRun);
  ids->hidden = p->Add("hidden", CheckedMul(rows, ff, f), kRun, kRun);
  ids->up = -1;
  if (c.activation == ref::Activation::kSwiGLU)
    ids->up = p->Add("up", CheckedMul(rows, ff, f), kRun, kRun);
  // The reference attention scores a prompt's [queries, keys] block at once.
  ids->scores = p->Add("scores", CheckedMul(prefill, t, f), kRun, kRun);
  ids->position_ids = p->Add("position_ids", CheckedMul(rows, sizeof(int32_t)), kRun, kRun);
  ids->step_ids = p->Add("step_ids", CheckedMul(b, sizeof(int32_t)), kRun, kRun);
  ids->logits = p->Add("logits", CheckedMul(b, vocab, f), kRun, kRun);
  ids->lengths = p->Add("lengths", CheckedMul(b, sizeof(int32_t)), kRun, kRun);
  ids->step_tokens = p->Add("step_tokens", CheckedMul(b, sizeof(int32_t)), kRun, kRun);
  ids->sampling = p->Add("sampling_scratch", SamplingScratchBytes(c.tgt_vocab_size), kRun, kRun);
  ids->generators = p->Add("generators", CheckedMul(b, sizeof(Pcg32)), kRun, kRun);
  ids->xnn = XnnpackLinearBuffers();
  ids->xnn_attention = -1;
  PlanXnnpackOperators(xnn, kPrepare, kRun, p, &ids->xnn);
#if TERN_XNNPACK_BUILD
  if (xnn.backend == Backend::kXnnpack) {
    // Attention runs as vectorized loops (causal prompt, or one query per step): the struct
    // without operators selects them.
    ids->xnn_attention = p->Add("xnnpack_attention", sizeof(xnn::Attention), kPrepare, kRun);
  }
#endif
  PlanXnnpackScratch(xnn, kPrepare, kRun, kRun, p, &ids->xnn);
  return p->Plan();
}

Status DecoderOnly::PlanXnnpack(const Model& model, const Limits& limits, XnnPlan* plan) {
  if (!ChooseBackend(limits, plan)) return Status::Ok();
#if TERN_XNNPACK_BUILD
  const ModelConfig& c = model.config();
  auto measure = [&](LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy) {
    return plan->Measure(w, rows, ldx, ldy);
  };
  Resolver resolve(model);
  WeightView embed, positions;
  LinearWeights output;
  NormWeights norm;
  TERN_RETURN_IF_ERROR(resolve.Globals(&embed, &positions, &output, &norm));
  for (int i = 0; i < c.decoder_layers; ++i) {
    DecoderOnlyLayerWeights layer;
    TERN_RETURN_IF_ERROR(resolve.Layer(i, &layer));
    TERN_RETURN_IF_ERROR(VisitLayerLinears(c, limits, layer, measure));
  }
  TERN_RETURN_IF_ERROR(VisitOutputLinear(c, limits, output, measure));
  TERN_RETURN_IF_ERROR(plan->MeasureContext());
#else
  (void)model;
#endif
  return Status::Ok();
}

Result<size_t> DecoderOnly::RequiredArenaBytes(const Model& model, const Limits& limits) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  XnnPlan xnn;
  TERN_RETURN_IF_ERROR(PlanXnnpack(model, limits, &xnn));
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(Plan(model.config(), limits, xnn, &planner, &ids));
  return planner.arena_bytes();
}

DecoderOnly::~DecoderOnly() { Reset(); }

void DecoderOnly::Reset() {
  started_ = false;
  layers_ = nullptr;
  backend_ = Backend::kReference;
  arena_used_ = 0;
  batch_ = 0;
  xnn_.Release();
}

uint64_t DecoderOnly::kernel_fallback_calls() const { return xnn_.fallback_calls(); }

int32_t DecoderOnly::prompt_capacity() const { return static_cast<int32_t>(PrefillRows(limits_)); }

Status DecoderOnly::Prepare(const Model& model, const Limits& limits, void* arena,
                            size_t arena_bytes) {
  Reset();
  const Status status = PrepareInArena(model, limits, arena, arena_bytes);
  if (!status.ok()) {
    Reset();
    std::snprintf(report_, sizeof report_, "not prepared: %s", status.message());
  }
  return status;
}

Status DecoderOnly::ResolveWeights(const Model& model) {
  Resolver resolve(model);
  TERN_RETURN_IF_ERROR(resolve.Globals(&embed_, &learned_positions_, &output_, &final_norm_));
  for (int i = 0; i < config_.decoder_layers; ++i)
    TERN_RETURN_IF_ERROR(resolve.Layer(i, &layers_[i]));
  return Status::Ok();
}

Status DecoderOnly::PrepareInArena(const Model& model, const Limits& limits, void* arena,
                                   size_t arena_bytes) {
  if (model.schema() == nullptr)
    return Status::Error(StatusCode::kFailedPrecondition, "model is not loaded");
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
  layers_ = reinterpret_cast<DecoderOnlyLayerWeights*>(at(ids.layers));
  for (int i = 0; i < config_.decoder_layers; ++i) new (&layers_[i]) DecoderOnlyLayerWeights();
  TERN_RETURN_IF_ERROR(ResolveWeights(model));
  if (ids.sinusoids >= 0) {
    sinusoids_ = reinterpret_cast<float*>(at(ids.sinusoids));
    ops::SinusoidalPositions(0, limits.max_target_length, config_.d_model, config_.sinusoid_layout,
                             sinusoids_);
  }
  if (ids.rotary >= 0) {
    // Positions stay below the cache capacity (max_target_length), so that many rows suffice.
    rotary_.rotary_dim = RotaryDim(config_);
    float* cos = reinterpret_cast<float*>(at(ids.rotary));
    float* sin = cos + static_cast<size_t>(limits.max_target_length) * (rotary_.rotary_dim / 2);
    ops::RotaryTables(limits.max_target_length, rotary_.rotary_dim, config_.rotary_base, cos, sin);
    rotary_.cos = cos;
    rotary_.sin = sin;
  }
  kv_ = reinterpret_cast<float*>(at(ids.kv));
  x_ = reinterpret_cast<float*>(at(ids.x));
  scratch_.q = reinterpret_cast<float*>(at(ids.q));
  scratch_.k = reinterpret_cast<float*>(at(ids.k));
  scratch_.v = reinterpret_cast<float*>(at(ids.v));
  scratch_.attn = reinterpret_cast<float*>(at(ids.attn));
  scratch_.hidden = reinterpret_cast<float*>(at(ids.hidden));
  scratch_.up = ids.up >= 0 ? reinterpret_cast<float*>(at(ids.up)) : nullptr;
  scratch_.scores = reinterpret_cast<float*>(at(ids.scores));
  scratch_.kernels = ops::Kernels();
  scratch_.rotary = ids.rotary >= 0 ? &rotary_ : nullptr;
  position_ids_ = reinterpret_cast<int32_t*>(at(ids.position_ids));
  step_ids_ = reinterpret_cast<int32_t*>(at(ids.step_ids));
  logits_ = reinterpret_cast<float*>(at(ids.logits));
  lengths_ = reinterpret_cast<int32_t*>(at(ids.lengths));
  step_tokens_ = reinterpret_cast<int32_t*>(at(ids.step_tokens));
  sampling_scratch_ = at(ids.sampling);
  generators_ = reinterpret_cast<Pcg32*>(at(ids.generators));
  for (int32_t b = 0; b < limits.max_batch; ++b) new (&generators_[b]) Pcg32();

  backend_ = xnn.backend;
  if (backend_ == Backend::kXnnpack) {
    TERN_RETURN_IF_ERROR(CreateXnnpackOperators(xnn, planner, ids, base));
  } else {
    WriteReferenceReport(limits, xnn, report_, sizeof report_);
  }
  return Status::Ok();
}

Status DecoderOnly::CreateXnnpackOperators(const XnnPlan& plan, const GreedyPlanner& planner,
                                           const BufferIds& ids, uint8_t* base) {
#if TERN_XNNPACK_BUILD
  xnn_.Start(plan, ids.xnn, planner, base);
  xnn::Attention* attention = new (base + planner.offset(ids.xnn_attention)) xnn::Attention();
  attention->pool = xnn_.pool();
  scratch_.kernels.attention = attention;
  scratch_.kernels.vectorized = true;
  {
    XnnpackLinearsCreator create(plan, ids.xnn, planner, base, xnn_.context());
    TERN_RETURN_IF_ERROR(create.Start());
    for (int i = 0; i < config_.decoder_layers; ++i) {
      TERN_RETURN_IF_ERROR(VisitLayerLinears(config_, limits_, layers_[i], create));
    }
    TERN_RETURN_IF_ERROR(VisitOutputLinear(config_, limits_, output_, create));
    TERN_RETURN_IF_ERROR(create.Finish());
  }
  ReportWriter report(report_, sizeof report_);
  AppendXnnpackLinearsReport(plan, xnn_, &report);
  const int32_t off_preferred = plan.off_preferred();
  if (off_preferred > 0)
    report.Append("; %d layers off their preferred path (fallback)", off_preferred);
  report.Append("%s", "; causal attention, LayerNorm, activations: vectorized loops");
  return Status::Ok();
#else
  (void)plan;
  (void)planner;
  (void)ids;
  (void)base;
  return Status::Error(StatusCode::kNotSupported, "this build has no XNNPACK");
#endif
}

SelfAttentionCache DecoderOnly::Cache(int layer) const {
  const size_t per_half =
      static_cast<size_t>(limits_.max_batch) * limits_.max_target_length * config_.d_model;
  SelfAttentionCache cache;
  cache.k = kv_ + (2 * static_cast<size_t>(layer)) * per_half;
  cache.v = kv_ + (2 * static_cast<size_t>(layer) + 1) * per_half;
  cache.capacity = limits_.max_target_length;
  return cache;
}

void DecoderOnly::Embed(const int32_t* ids, const int32_t* positions, int64_t count, float* x) {
  const int64_t d = config_.d_model;
  ops::Embedding(embed_, ids, count, config_.embedding_scale, x);
  if (config_.position == PositionKind::kLearned) {
    // The learned table may be quantized like any embedding: dequantize its rows, then add.
    ops::Embedding(learned_positions_, positions, count, 1.0f, scratch_.attn);
    ops::AddRows(x, scratch_.attn, count, d);
  } else if (config_.position == PositionKind::kSinusoidal) {
    for (int64_t i = 0; i < count; ++i)
      ops::AddRows(x + i * d, sinusoids_ + positions[i] * d, 1, d);
  }
  // rotary: positions enter inside attention (decoder_only_layer.cc); none: not at all.
}

Status DecoderOnly::Prefill(const int32_t* ids, int64_t stride, const int32_t* lengths,
                            int32_t batch, const float** logits) {
  started_ = false;
  if (layers_ == nullptr)
    return Status::Error(StatusCode::kFailedPrecondition, "session is not prepared");
  if (batch < 1 || batch > limits_.max_batch) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "batch of %d prompts; this session allows 1 to %d", batch,
                         limits_.max_batch);
  }
  if (ids == nullptr || lengths == nullptr || logits == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "prompt ids, lengths or logits pointer is null");
  }
  const int32_t most = prompt_capacity();
  for (int32_t b = 0; b < batch; ++b) {
    if (lengths[b] < 1 || lengths[b] > most || lengths[b] > stride) {
      return Status::Error(StatusCode::kOutOfRange, "prompt %d has %d tokens; 1 to %d allowed", b,
                           lengths[b], most);
    }
    for (int32_t i = 0; i < lengths[b]; ++i) {
      const int32_t id = ids[b * stride + i];
      if (id < 0 || id >= config_.tgt_vocab_size) {
        return Status::Error(StatusCode::kOutOfRange,
                             "prompt %d: token id %d at %d is outside the vocabulary [0, %d)", b,
                             id, i, config_.tgt_vocab_size);
      }
    }
  }
  const int64_t d = config_.d_model;
  const int32_t vocab = config_.tgt_vocab_size;
  // One prompt at a time: all its tokens go through each layer together (the rows of every
  // linear call), with the causal mask; only its last row needs logits.
  for (int32_t b = 0; b < batch; ++b) {
    const int64_t count = lengths[b];
    for (int64_t i = 0; i < count; ++i) position_ids_[i] = static_cast<int32_t>(i);
    Embed(ids + b * stride, position_ids_, count, x_);
    for (int l = 0; l < config_.decoder_layers; ++l) {
      DecoderOnlyLayerPrefill(config_, layers_[l], x_, b, 0, count, Cache(l), scratch_);
    }
    float* last = x_ + (count - 1) * d;
    FinalNorm(config_, scratch_.kernels, final_norm_, last, 1);
    Linear(last, 1, d, output_, logits_ + static_cast<int64_t>(b) * vocab, vocab);
    lengths_[b] = lengths[b];
  }
  batch_ = batch;
  started_ = true;
  *logits = logits_;
  return Status::Ok();
}

Status DecoderOnly::DecodeStep(const int32_t* tokens, const float** logits) {
  if (!started_) return Status::Error(StatusCode::kFailedPrecondition, "DecodeStep before Prefill");
  if (tokens == nullptr || logits == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "tokens or logits pointer is null");
  }
  for (int32_t b = 0; b < batch_; ++b) {
    if (tokens[b] == kFinished) continue;
    if (lengths_[b] >= limits_.max_target_length) {
      return Status::Error(
          StatusCode::kOutOfRange,
          "sequence %d is full: the session holds %d positions (limits.max_target_length)", b,
          limits_.max_target_length);
    }
    if (tokens[b] < 0 || tokens[b] >= config_.tgt_vocab_size) {
      return Status::Error(StatusCode::kOutOfRange, "token id %d is outside the vocabulary [0, %d)",
                           tokens[b], config_.tgt_vocab_size);
    }
  }
  const int64_t d = config_.d_model;
  // A finished sequence keeps the batch's shape: it runs a throwaway token (id 0) at its last
  // free slot (or its last slot when full), which nothing reads again, and does not grow.
  for (int32_t b = 0; b < batch_; ++b) {
    const bool finished = tokens[b] == kFinished;
    const int32_t full = limits_.max_target_length - 1;
    position_ids_[b] = finished && lengths_[b] > full ? full : lengths_[b];
    step_ids_[b] = finished ? 0 : tokens[b];
  }
  Embed(step_ids_, position_ids_, batch_, x_);
  for (int l = 0; l < config_.decoder_layers; ++l) {
    DecoderOnlyLayerStep(config_, layers_[l], x_, batch_, position_ids_, Cache(l), scratch_);
  }
  FinalNorm(config_, scratch_.kernels, final_norm_, x_, batch_);
  Linear(x_, batch_, d, output_, logits_, config_.tgt_vocab_size);
  for (int32_t b = 0; b < batch_; ++b) {
    if (tokens[b] != kFinished) ++lengths_[b];
  }
  *logits = logits_;
  return Status::Ok();
}

}  // namespace tern
