#include "runtime/models/decoder_only.h"

#include <new>

#include "runtime/decoding/sampling.h"
#include "runtime/kernels/ops.h"
#include "runtime/nn/residual.h"

namespace tern {

namespace {

// Lifetimes: everything lives from Prepare on; the backend's prepare-time scratch only in
// Prepare.
enum Phase : int { kPrepare = 0, kRun = 1 };

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

}  // namespace

struct DecoderOnly::BufferIds {
  int layers, sinusoids, rotary, kv, x, q, k, v, attn, hidden, up, scores, position_ids, logits,
      lengths;
  int step_tokens, step_ids, sampling, generators;
  BackendBuffers backend;
};

Status DecoderOnly::CheckLimits(const Model& model, const Limits& limits) {
  const ModelConfig& c = model.config();
  if (c.architecture != Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "this model is not decoder-only (use tern::Session, C: "
                         "tern_session_create, to translate with it)");
  }
  if (limits.beam_size != 1) {
    return Status::Error(
        StatusCode::kNotSupported,
        "limits.beam_size = %d: decoder-only generation has no beam search (use 1)",
        limits.beam_size);
  }
  return CheckSharedLimits(c, limits, " (longest prompt)", " (prompt + generated tokens)");
}

ModelCalls DecoderOnly::Calls(const ModelConfig& c, const Limits& l) {
  const int64_t rows = ScratchRows(l);
  ModelCalls calls;
  // Prefill writes K/V rows into the cache contiguously, a step into scratch: stride d_kv.
  calls.decoder = LayerCalls{rows, rows, c.d_kv(), 1};
  calls.output = LinearCall{l.max_batch, c.d_model, c.tgt_vocab_size};
  return calls;
}

Status DecoderOnly::PlanAll(const Model& model, const Limits& limits, BackendPlan* backend,
                            GreedyPlanner* p, BufferIds* ids) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  const ModelConfig& c = model.config();
  // Attention runs as loops (a causal prompt, or one query per step): nothing batched.
  TERN_RETURN_IF_ERROR(PlanBackend(model, limits, Calls(c, limits), AttentionCall(), backend));
  const size_t f = sizeof(float);
  const size_t d = static_cast<size_t>(c.d_model);
  const size_t d_kv = static_cast<size_t>(c.d_kv());  // grouped-query attention: < d
  const size_t ff = static_cast<size_t>(c.d_ff);
  const size_t b = static_cast<size_t>(limits.max_batch);
  const size_t t = static_cast<size_t>(limits.max_target_length);
  const size_t rows = static_cast<size_t>(ScratchRows(limits));
  const size_t prefill = static_cast<size_t>(PrefillRows(limits));
  const size_t layers = static_cast<size_t>(c.decoder_layers);
  const size_t vocab = static_cast<size_t>(c.tgt_vocab_size);
  ids->layers = p->Add("layers", CheckedMul(layers, sizeof(LayerWeights)), kPrepare, kRun);
  ids->sinusoids = ids->rotary = -1;
  if (c.position == PositionKind::kSinusoidal)
    ids->sinusoids = p->Add("positions", CheckedMul(t, d, f), kPrepare, kRun);
  if (c.position == PositionKind::kRotary) {
    // cos and sin for positions [0, capacity), rotary_dim / 2 each: [2, t, rotary_dim / 2].
    ids->rotary = p->Add("rotary_tables", CheckedMul(t, static_cast<size_t>(RotaryDim(c)), f),
                         kPrepare, kRun);
  }
  ids->kv =
      p->Add("self_kv", CheckedMul(CheckedMul(layers, 2, b), CheckedMul(t, d_kv, f)), kRun, kRun);
  ids->x = p->Add("x", CheckedMul(rows, d, f), kRun, kRun);
  ids->q = p->Add("q", CheckedMul(rows, d, f), kRun, kRun);
  ids->k = p->Add("k", CheckedMul(rows, d_kv, f), kRun, kRun);
  ids->v = p->Add("v", CheckedMul(rows, d_kv, f), kRun, kRun);
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
  ids->backend = BackendBuffers();
  PlanBackendOperators(*backend, kPrepare, kRun, p, &ids->backend);
  PlanBackendAttention(*backend, kPrepare, kRun, kRun, kRun, p, &ids->backend);
  PlanBackendScratch(*backend, kPrepare, kRun, kRun, p, &ids->backend);
  return p->Plan();
}

Result<size_t> DecoderOnly::RequiredArenaBytes(const Model& model, const Limits& limits) {
  BackendPlan backend;
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(PlanAll(model, limits, &backend, &planner, &ids));
  return planner.arena_bytes();
}

void DecoderOnly::Reset() {
  started_ = false;
  layers_ = nullptr;
  batch_ = 0;
  ResetModel();
}

int32_t DecoderOnly::prompt_capacity() const { return static_cast<int32_t>(PrefillRows(limits_)); }

Status DecoderOnly::Prepare(const Model& model, const Limits& limits, void* arena,
                            size_t arena_bytes) {
  Reset();
  const Status status = PrepareInArena(model, limits, arena, arena_bytes);
  if (!status.ok()) {
    Reset();
    Failed(status);
  }
  return status;
}

Status DecoderOnly::PrepareInArena(const Model& model, const Limits& limits, void* arena,
                                   size_t arena_bytes) {
  if (model.schema() == nullptr)
    return Status::Error(StatusCode::kFailedPrecondition, "model is not loaded");
  if (arena == nullptr) return Status::Error(StatusCode::kInvalidArgument, "arena is null");
  BackendPlan backend;
  GreedyPlanner planner;
  BufferIds ids;
  TERN_RETURN_IF_ERROR(PlanAll(model, limits, &backend, &planner, &ids));
  uint8_t* base = nullptr;
  TERN_RETURN_IF_ERROR(Place(model, limits, planner, arena, arena_bytes, &base));
  auto at = [&](int id) { return id >= 0 ? base + planner.offset(id) : nullptr; };
  auto floats = [&](int id) { return reinterpret_cast<float*>(at(id)); };
  layers_ = reinterpret_cast<LayerWeights*>(at(ids.layers));
  for (int i = 0; i < config_.decoder_layers; ++i) new (&layers_[i]) LayerWeights();
  ModelLayers layers;
  layers.decoder_only = layers_;
  TERN_RETURN_IF_ERROR(ResolveAndCreate(model, Calls(config_, limits), &backend, ids.backend,
                                        planner, base, layers));
  sinusoids_ = floats(ids.sinusoids);
  if (sinusoids_ != nullptr) {
    ops::SinusoidalPositions(0, limits.max_target_length, config_.d_model, config_.sinusoid_layout,
                             sinusoids_);
  }
  scratch_ = LayerScratch();
  if (ids.rotary >= 0) {
    // Positions stay below the cache capacity (max_target_length), so that many rows suffice.
    rotary_.rotary_dim = RotaryDim(config_);
    float* cos = floats(ids.rotary);
    float* sin = cos + static_cast<size_t>(limits.max_target_length) * (rotary_.rotary_dim / 2);
    ops::RotaryTables(limits.max_target_length, rotary_.rotary_dim, config_.rotary_base, cos, sin);
    rotary_.cos = cos;
    rotary_.sin = sin;
    scratch_.positions.rotary = &rotary_;
  }
  kv_ = floats(ids.kv);
  x_ = floats(ids.x);
  scratch_.q = floats(ids.q);
  scratch_.k = floats(ids.k);
  scratch_.v = floats(ids.v);
  scratch_.attn = floats(ids.attn);
  scratch_.hidden = floats(ids.hidden);
  scratch_.up = floats(ids.up);
  scratch_.scores = floats(ids.scores);
  scratch_.kernels = backend_.kernels();
  position_ids_ = reinterpret_cast<int32_t*>(at(ids.position_ids));
  step_ids_ = reinterpret_cast<int32_t*>(at(ids.step_ids));
  logits_ = floats(ids.logits);
  lengths_ = reinterpret_cast<int32_t*>(at(ids.lengths));
  step_tokens_ = reinterpret_cast<int32_t*>(at(ids.step_tokens));
  sampling_scratch_ = at(ids.sampling);
  generators_ = reinterpret_cast<Pcg32*>(at(ids.generators));
  for (int32_t b = 0; b < limits.max_batch; ++b) new (&generators_[b]) Pcg32();
  return Status::Ok();
}

KeyValues DecoderOnly::Cache(int layer) const {
  const size_t half =
      static_cast<size_t>(limits_.max_batch) * limits_.max_target_length * config_.d_kv();
  return KeyValues{kv_ + (2 * static_cast<size_t>(layer)) * half,
                   kv_ + (2 * static_cast<size_t>(layer) + 1) * half, limits_.max_target_length};
}

void DecoderOnly::Embed(const int32_t* ids, const int32_t* positions, int64_t count, float* x) {
  const int64_t d = config_.d_model;
  ops::Embedding(weights_.tgt_embed, ids, count, config_.embedding_scale, x);
  if (config_.position == PositionKind::kLearned) {
    // The learned table may be quantized like any embedding: dequantize its rows, then add.
    ops::Embedding(weights_.decoder_learned, positions, count, 1.0f, scratch_.attn);
    ops::AddRows(x, scratch_.attn, count, d);
  } else if (config_.position == PositionKind::kSinusoidal) {
    for (int64_t i = 0; i < count; ++i)
      ops::AddRows(x + i * d, sinusoids_ + positions[i] * d, 1, d);
  }
  // rotary: positions enter inside attention (transformer_layer.cc); none: not at all.
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
  TERN_RETURN_IF_ERROR(CheckSequences(ids, stride, lengths, batch, prompt_capacity(),
                                      config_.tgt_vocab_size, "prompt", "token"));
  const int64_t d = config_.d_model;
  const int32_t vocab = config_.tgt_vocab_size;
  // One prompt at a time: all its tokens go through each layer together (the rows of every
  // linear call), with the causal mask, their K/V into the sequence's cache row; only its last
  // row needs logits.
  for (int32_t b = 0; b < batch; ++b) {
    const int32_t count = lengths[b];
    for (int32_t i = 0; i < count; ++i) position_ids_[i] = i;
    Embed(ids + b * stride, position_ids_, count, x_);
    SequenceShape shape;
    shape.seq = count;
    shape.lengths = &count;
    shape.first = b;
    shape.causal = true;
    for (int l = 0; l < config_.decoder_layers; ++l)
      LayerForward(config_, layers_[l], x_, shape, Cache(l), scratch_);
    float* last = x_ + (count - 1) * d;
    FinalNorm(config_, scratch_.kernels, weights_.decoder_norm, last, 1);
    Linear(last, 1, d, weights_.output, logits_ + static_cast<int64_t>(b) * vocab, vocab);
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
  StepShape shape;
  shape.rows = batch_;
  shape.positions = position_ids_;
  for (int l = 0; l < config_.decoder_layers; ++l)
    LayerStep(config_, layers_[l], x_, shape, Cache(l), nullptr, scratch_);
  FinalNorm(config_, scratch_.kernels, weights_.decoder_norm, x_, batch_);
  Linear(x_, batch_, d, weights_.output, logits_, config_.tgt_vocab_size);
  for (int32_t b = 0; b < batch_; ++b) {
    if (tokens[b] != kFinished) ++lengths_[b];
  }
  *logits = logits_;
  return Status::Ok();
}

}  // namespace tern
