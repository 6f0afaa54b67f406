#include "runtime/models/decoder_only.h"

#include <algorithm>

#include "runtime/kernels/ops.h"
#include "runtime/nn/residual.h"

namespace tern {

namespace {

// Lifetimes: everything lives from Prepare on; the backend's prepare-time scratch only in
// Prepare.
enum Phase : int { kPrepare = 0, kRun = 1 };

// Rows of the activation buffers: a whole prompt (prefill) or one token per sequence (step).
int64_t PrefillRows(const Limits& l) {
  return l.max_source_length < l.max_target_length ? l.max_source_length : l.max_target_length;
}
int64_t ScratchRows(const Limits& l) {
  const int64_t p = PrefillRows(l);
  return p > l.max_batch ? p : l.max_batch;
}
// Cache rows per sequence: every position, or with a sliding window only the last window ones
// (a ring: position t in row t mod window; transformer_layer.h).
int64_t CacheRows(const ModelConfig& c, const Limits& l) {
  return c.sliding_window > 0 && c.sliding_window < l.max_target_length ? c.sliding_window
                                                                        : l.max_target_length;
}

}  // namespace

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
  // fp16 caches (limits.kv_cache) need no check here: they are refused only with relative
  // positions, which decoder-only models do not take (their config check says so first).
  if (limits.max_batch_tokens != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_batch_tokens = %d; a Generator plans its prompts by "
                         "max_batch x max_source_length and takes 0 only",
                         limits.max_batch_tokens);
  }
  if (limits.max_target_tokens != 0) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_target_tokens = %d; a Generator plans its caches by "
                         "max_batch x max_target_length and takes 0 only",
                         limits.max_target_tokens);
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

Status DecoderOnly::PlanAll(const Model& model, const Limits& limits,
                            const BufferRequests& requests, Planned* plan) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  const ModelConfig& c = model.config();
  plan->calls = Calls(c, limits);
  // Attention runs as loops (a causal prompt, or one query per step): nothing batched. A call
  // sees at most max_target_length keys (the cache's capacity).
  AttentionCall attention;
  attention.heads = c.heads;
  attention.d_head = c.d_head();
  attention.loop_keys = limits.max_target_length;
  TERN_RETURN_IF_ERROR(PlanBackend(model, limits, attention, plan));
  const size_t d = static_cast<size_t>(c.d_model);
  const size_t d_kv = static_cast<size_t>(c.d_kv());  // grouped-query attention: < d
  const size_t ff = static_cast<size_t>(c.d_ff);
  const size_t b = static_cast<size_t>(limits.max_batch);
  const size_t t = static_cast<size_t>(limits.max_target_length);
  const size_t cache_rows = static_cast<size_t>(CacheRows(c, limits));
  const size_t rows = static_cast<size_t>(ScratchRows(limits));
  const size_t layers = static_cast<size_t>(c.decoder_layers);
  // Positions stay below the cache capacity (max_target_length): that many table rows suffice
  // (no table for learned positions, added per token, or none).
  const size_t positions = PositionFloats(c, limits.max_target_length);
  ArenaPlan& p = plan->arena;
  p.Add("layers", layers, kPrepare, kRun, &layers_.decoder_only);
  p.Add("positions", positions, kPrepare, kRun, &position_tables_, positions > 0);
  // fp16 caches (Limits::kv_cache): half the bytes, the rows every step streams through.
  const bool half = limits.kv_cache == CacheType::kFloat16;
  const size_t self_kv = CheckedMul(CheckedMul(layers, 2, b), cache_rows, d_kv);
  p.Add("self_kv", self_kv, kRun, kRun, &kv_, !half);
  p.Add("self_kv", self_kv, kRun, kRun, &kv16_, half);
  p.Add("x", CheckedMul(rows, d), kRun, kRun, &x_);
  // q and attn hold the heads (d_q = heads * d_head) and also d_model-wide rows (the attention
  // output, the normed input): the wider of the two.
  const size_t dq = std::max(d, static_cast<size_t>(c.d_q()));
  p.Add("q", CheckedMul(rows, dq), kRun, kRun, &scratch_.q);
  p.Add("k", CheckedMul(rows, d_kv), kRun, kRun, &scratch_.k);
  p.Add("v", CheckedMul(rows, d_kv), kRun, kRun, &scratch_.v);
  p.Add("attn", CheckedMul(rows, dq), kRun, kRun, &scratch_.attn);
  p.Add("hidden", CheckedMul(rows, ff), kRun, kRun, &scratch_.hidden);
  p.Add("up", CheckedMul(rows, ff), kRun, kRun, &scratch_.up, ref::IsGated(c.activation));
  // The reference attention scores a prompt's [queries, keys] block at once.
  p.Add("scores", CheckedMul(PrefillRows(limits), t), kRun, kRun, &scratch_.scores);
  p.Add("position_ids", rows, kRun, kRun, &position_ids_);
  p.Add("step_ids", b, kRun, kRun, &step_ids_);
  p.Add("logits", CheckedMul(b, c.tgt_vocab_size), kRun, kRun, &logits_);
  p.Add("lengths", b, kRun, kRun, &lengths_);
  p.Add(requests, kRun, kRun);  // the generation loop's state
  GreedyPlanner* g = &p.planner();
  PlanBackendOperators(plan->backend, kPrepare, kRun, g, &plan->backend_ids);
  PlanBackendAttention(plan->backend, kPrepare, kRun, kRun, kRun, g, &plan->backend_ids);
  PlanBackendScratch(plan->backend, kPrepare, kRun, kRun, g, &plan->backend_ids);
  return p.Plan();
}

void DecoderOnly::Reset() {
  started_ = false;
  batch_ = 0;
  TransformerModel::Reset();
}

int32_t DecoderOnly::prompt_capacity() const { return static_cast<int32_t>(PrefillRows(limits_)); }

void DecoderOnly::Start() {
  FillPositions(config_, weights_, limits_.max_target_length, position_tables_, nullptr,
                &positions_);
  scratch_.positions = positions_.decoder;
  scratch_.kernels = backend_.kernels();
}

KeyValues DecoderOnly::Cache(int layer) const {
  if (kv16_ != nullptr) {
    return KeyValues::OfLayer(kv16_, layer, limits_.max_batch, CacheRows(config_, limits_),
                              config_.d_kv());
  }
  return KeyValues::OfLayer(kv_, layer, limits_.max_batch, CacheRows(config_, limits_),
                            config_.d_kv());
}

void DecoderOnly::Embed(const int32_t* ids, const int32_t* positions, int64_t count, float* x) {
  const int64_t d = config_.d_model;
  ops::Embedding(weights_.tgt_embed, ids, count, config_.embedding_scale, x);
  if (config_.position == PositionKind::kLearned) {
    // The learned table may be quantized like any embedding: dequantize its rows, then add.
    ops::Embedding(weights_.decoder_learned, positions, count, 1.0f, scratch_.attn);
    ops::AddRows(x, scratch_.attn, count, d);
  } else if (positions_.decoder_rows != nullptr) {  // sinusoidal
    for (int64_t i = 0; i < count; ++i)
      ops::AddRows(x + i * d, positions_.decoder_rows + positions[i] * d, 1, d);
  }
  // rotary: positions enter inside attention (transformer_layer.cc); none: not at all.
}

Status DecoderOnly::Prefill(const int32_t* ids, int64_t stride, const int32_t* lengths,
                            int32_t batch, const float** logits) {
  started_ = false;
  if (arena_used_ == 0)
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
  // row needs logits. With a sliding window shorter than the prompt, the cache holds only the
  // first `window` tokens' K/V: the rest go one by one as steps, each replacing the ring row of
  // the key that just left its window.
  const int64_t window = CacheRows(config_, limits_);
  for (int32_t b = 0; b < batch; ++b) {
    PassScope pass(backend_, ModelPass::kEncode, lengths[b]);  // the pool's choice per pass
    const int32_t* prompt = ids + b * stride;
    const int32_t count = static_cast<int32_t>(std::min<int64_t>(lengths[b], window));
    for (int32_t i = 0; i < count; ++i) position_ids_[i] = i;
    Embed(prompt, position_ids_, count, x_);
    SequenceShape shape;
    shape.seq = count;
    shape.lengths = &count;
    shape.first = b;
    shape.causal = true;
    for (int l = 0; l < config_.decoder_layers; ++l)
      LayerForward(config_, layers_.decoder_only[l], x_, shape, Cache(l), scratch_);
    float* last = x_ + (count - 1) * d;
    for (int32_t i = count; i < lengths[b]; ++i) {
      Embed(prompt + i, &i, 1, x_);
      StepShape step;
      step.rows = 1;
      step.positions = &i;  // K/V through scratch, as the planned step operators write them
      for (int l = 0; l < config_.decoder_layers; ++l)
        LayerStep(config_, layers_.decoder_only[l], x_, step,
                  Cache(l).OfSequence(b, config_.d_kv()), nullptr, scratch_);
      last = x_;
    }
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
  PassScope pass(backend_, ModelPass::kStep, batch_);  // the pool's choice per step
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
    LayerStep(config_, layers_.decoder_only[l], x_, shape, Cache(l), nullptr, scratch_);
  FinalNorm(config_, scratch_.kernels, weights_.decoder_norm, x_, batch_);
  Linear(x_, batch_, d, weights_.output, logits_, config_.tgt_vocab_size);
  for (int32_t b = 0; b < batch_; ++b) {
    if (tokens[b] != kFinished) ++lengths_[b];
  }
  *logits = logits_;
  return Status::Ok();
}

}  // namespace tern
