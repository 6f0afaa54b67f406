#include "runtime/models/encoder_decoder.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/kernels/ops.h"
#include "runtime/kernels/vectorized/linear_rows.h"
#include "runtime/nn/residual.h"

namespace tern {

namespace {

// Time steps of the plan's lifetimes. kPrepare: buffers Prepare writes (weight tables,
// positions, the backend's operators) start there; prepare-time scratch lives only there and
// shares bytes with the activations.
enum Phase : int { kPrepare = 0, kEncoder = 1, kCrossKeysValues = 2, kDecoder = 3 };

}  // namespace

Status EncoderDecoder::CheckLimits(const Model& model, const Limits& limits) {
  const ModelConfig& c = model.config();
  if (c.architecture == Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "this model is decoder-only (use tern::Generator, C: "
                         "tern_generator_create, to generate with it)");
  }
  if (limits.beam_size < 1 || limits.beam_size > 256) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.beam_size = %d; 1 to 256 allowed",
                         limits.beam_size);
  }
  TERN_RETURN_IF_ERROR(CheckSharedLimits(c, limits, "", ""));
  if (limits.kv_cache == CacheType::kFloat16 && c.position == PositionKind::kRelative) {
    // Relative terms enter each row's self-attention call apart (LayerStep), over float caches.
    return Status::Error(StatusCode::kNotSupported,
                         "limits.kv_cache = float16 with relative positions; this model's caches "
                         "are float32 only");
  }
  if (limits.max_batch_tokens != 0 && limits.max_batch_tokens < limits.max_source_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_batch_tokens = %d; 0 (no budget) or at least "
                         "max_source_length (%d): one longest sentence must fit",
                         limits.max_batch_tokens, limits.max_source_length);
  }
  if (limits.max_target_tokens != 0 && limits.max_target_tokens < limits.max_target_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.max_target_tokens = %d; 0 (no budget) or at least "
                         "max_target_length (%d): one longest translation must fit",
                         limits.max_target_tokens, limits.max_target_length);
  }
  return Status::Ok();
}

int64_t EncoderDecoder::SourceTokens(const Limits& l) {
  const int64_t all = static_cast<int64_t>(l.max_batch) * l.max_source_length;
  return l.max_batch_tokens > 0 && l.max_batch_tokens < all ? l.max_batch_tokens : all;
}

int64_t EncoderDecoder::TargetTokens(const Limits& l) {
  const int64_t all = static_cast<int64_t>(l.max_batch) * l.max_target_length;
  return l.max_target_tokens > 0 && l.max_target_tokens < all ? l.max_target_tokens : all;
}

bool EncoderDecoder::TargetBudgeted(const Limits& l) {
  return TargetTokens(l) < static_cast<int64_t>(l.max_batch) * l.max_target_length;
}

ModelCalls EncoderDecoder::Calls(const ModelConfig& c, const Limits& l) {
  const int64_t d_kv = c.d_kv();
  const int64_t src_rows = SourceTokens(l);  // encoder rows: sentences x longest source
  const int64_t rows = static_cast<int64_t>(l.max_batch) * l.beam_size;  // decoder rows
  ModelCalls calls;
  calls.encoder = LayerCalls{src_rows, src_rows, d_kv, src_rows};
  // A decoder step writes its K/V rows straight into float caches (row stride: the capacity),
  // for fp16 caches and budgeted ones (whose capacity changes per call) into [rows, d_kv]
  // scratch (the operators are planned for one stride).
  const int64_t kv_ldy = l.kv_cache == CacheType::kFloat16 || TargetBudgeted(l)
                             ? d_kv
                             : static_cast<int64_t>(l.max_target_length) * d_kv;
  calls.decoder = LayerCalls{rows, rows, kv_ldy, src_rows};
  calls.output = LinearCall{rows, c.d_model, c.tgt_vocab_size};
  return calls;
}

Status EncoderDecoder::PlanAll(const Model& model, const Limits& limits,
                               const BufferRequests& requests, Planned* plan) {
  TERN_RETURN_IF_ERROR(CheckLimits(model, limits));
  const ModelConfig& c = model.config();
  plan->calls = Calls(c, limits);
  // The encoder's self-attention runs many queries at once: the backend's batched path.
  // The decoder's loops see at most the longer of a source and a target in keys.
  const AttentionCall attention{
      c.heads, c.d_head(), limits.max_source_length, limits.max_source_length,
      std::max<int64_t>(limits.max_source_length, limits.max_target_length)};
  TERN_RETURN_IF_ERROR(PlanBackend(model, limits, attention, plan));
  const size_t d = static_cast<size_t>(c.d_model);
  const size_t d_kv = static_cast<size_t>(c.d_kv());  // grouped-query attention: < d
  const size_t b = static_cast<size_t>(limits.max_batch);
  const size_t k = static_cast<size_t>(limits.beam_size);
  const size_t rows = b * k;  // decoder rows: every beam hypothesis of every sentence
  const size_t s = static_cast<size_t>(limits.max_source_length);
  const size_t t = static_cast<size_t>(limits.max_target_length);
  // Source tokens in flight: the encoder's rows and the cross K/V caches' (a token budget, or
  // max_batch x max_source_length).
  const size_t bs = static_cast<size_t>(SourceTokens(limits));
  const size_t ff = static_cast<size_t>(c.d_ff);
  const size_t ld = static_cast<size_t>(c.decoder_layers);
  // Self-attention K/V caches: one per decoder layer, or (Universal) one per recurrent step.
  const bool universal = c.architecture == Architecture::kUniversal;
  const size_t kv_layers = universal ? static_cast<size_t>(c.universal_steps) : ld;
  const size_t keys = s > t ? s : t;
  const bool swiglu = ref::IsGated(c.activation);  // SwiGLU or GeGLU: the up buffers
  const bool shaw =
      c.position == PositionKind::kRelative && c.relative_attention == RelativeAttention::kShaw;
  const bool act = universal && c.act_threshold > 0.0f;
  // Weight records and positions live for the whole session; encoder buffers only while
  // encoding (the encoder output also feeds the cross K/V step); decoder buffers while decoding.
  // The order of the Adds is part of the plan (the planner breaks size ties by it).
  ArenaPlan& p = plan->arena;
  p.Add("encoder_layers", c.encoder_layers, kPrepare, kDecoder, &layers_.encoder);
  p.Add("decoder_layers", ld, kPrepare, kDecoder, &layers_.decoder);
  p.Add("positions", PositionFloats(c, keys), kPrepare, kDecoder, &position_tables_);
  p.Add("relative_scratch", 2 * c.relative_max_distance + 1, kEncoder, kDecoder, &shaw_scratch_,
        shaw);
  p.Add("enc_up", CheckedMul(bs, ff), kEncoder, kEncoder, &enc_scratch_.up, swiglu);
  p.Add("dec_up", CheckedMul(rows, ff), kDecoder, kDecoder, &dec_scratch_.up, swiglu);
  p.Add("src_lengths", b, kEncoder, kDecoder, &src_lengths_);
  p.Add("enc_x", CheckedMul(bs, d), kEncoder, kCrossKeysValues, &enc_x_);
  // q and attn hold the heads (d_q = heads * d_head) and d_model-wide rows: the wider.
  const size_t dq = std::max(d, static_cast<size_t>(c.d_q()));
  p.Add("enc_q", CheckedMul(bs, dq), kEncoder, kEncoder, &enc_scratch_.q);
  // fp16 caches: the cross K/V are computed in enc_k / enc_v first, then rounded into theirs.
  const bool half = limits.kv_cache == CacheType::kFloat16;
  const int kv_scratch_last = half ? kCrossKeysValues : kEncoder;
  p.Add("enc_k", CheckedMul(bs, d_kv), kEncoder, kv_scratch_last, &enc_scratch_.k);
  p.Add("enc_v", CheckedMul(bs, d_kv), kEncoder, kv_scratch_last, &enc_scratch_.v);
  p.Add("enc_attn", CheckedMul(bs, dq), kEncoder, kEncoder, &enc_scratch_.attn);
  p.Add("enc_hidden", CheckedMul(bs, ff), kEncoder, kEncoder, &enc_scratch_.hidden);
  p.Add("enc_scores", CheckedMul(s, s), kEncoder, kEncoder, &enc_scratch_.scores);
  const size_t cross_kv = CheckedMul(CheckedMul(ld, 2, bs), d_kv);
  // Self-attention caches: every hypothesis of every sentence for max_target_length positions,
  // or beam_size x a target-token budget (Limits::max_target_tokens).
  const size_t target_tokens = static_cast<size_t>(TargetTokens(limits));
  const bool budgeted = TargetBudgeted(limits);
  const size_t self_kv = CheckedMul(CheckedMul(kv_layers, 2, k), target_tokens, d_kv);
  p.Add("cross_kv", cross_kv, kCrossKeysValues, kDecoder, &cross_kv_, !half);
  p.Add("cross_kv", cross_kv, kCrossKeysValues, kDecoder, &cross_kv16_, half);
  p.Add("self_kv", self_kv, kDecoder, kDecoder, &self_kv_, !half);
  p.Add("self_kv", self_kv, kDecoder, kDecoder, &self_kv16_, half);
  // A step's new K/V rows on their way into fp16 or budgeted caches (float caches of a fixed
  // capacity take them directly).
  p.Add("dec_k", CheckedMul(rows, d_kv), kDecoder, kDecoder, &dec_scratch_.k, half || budgeted);
  p.Add("dec_v", CheckedMul(rows, d_kv), kDecoder, kDecoder, &dec_scratch_.v, half || budgeted);
  p.Add("dec_x", CheckedMul(rows, d), kDecoder, kDecoder, &dec_x_);
  p.Add("dec_q", CheckedMul(rows, dq), kDecoder, kDecoder, &dec_scratch_.q);
  p.Add("dec_attn", CheckedMul(rows, dq), kDecoder, kDecoder, &dec_scratch_.attn);
  p.Add("dec_hidden", CheckedMul(rows, ff), kDecoder, kDecoder, &dec_scratch_.hidden);
  p.Add("dec_scores", keys, kDecoder, kDecoder, &dec_scratch_.scores);
  p.Add("logits", CheckedMul(rows, c.tgt_vocab_size), kDecoder, kDecoder, &logits_);
  // The vocabulary shortlist: each sentence's candidate rows, listed by Encode through a bitmap
  // of the target vocabulary.
  const ShortlistTable& shortlist = model.shortlist();
  shortlist_ = shortlist.present() ? &shortlist : nullptr;
  int32_t specials[kMaxShortlistSpecials];
  shortlist_capacity_ =
      shortlist_ ? shortlist.MaxCandidates(limits.max_source_length, ShortlistSpecials(c, specials),
                                           c.tgt_vocab_size)
                 : 0;
  const size_t capacity = static_cast<size_t>(shortlist_capacity_);
  p.Add("shortlist_rows", CheckedMul(b, capacity), kEncoder, kDecoder, &shortlist_ids_,
        shortlist_ != nullptr);
  p.Add("shortlist_counts", b, kEncoder, kDecoder, &shortlist_counts_, shortlist_ != nullptr);
  p.Add("shortlist_marks", (static_cast<size_t>(c.tgt_vocab_size) + 63) / 64, kEncoder, kEncoder,
        &shortlist_marks_, shortlist_ != nullptr);
  // One decoder row quantized to int8 at a time, when the full projection quantizes its rows
  // (XNNPACK's qd8 paths) and the candidates' logits are computed the same way.
  p.Add("shortlist_row_q", d, kDecoder, kDecoder, &shortlist_row_q_, shortlist_ != nullptr);
  // The candidates' rows of the output projection (and their scales) copied together at Encode,
  // sentence after sentence: read in place they are scattered over the whole weight, which costs
  // about 4x per step what reading the same bytes front to back does (docs/shortlist.md,
  // measured). The copies never take more than the weight itself: a sentence whose rows no
  // longer fit reads them in place (the same bytes, the same logits).
  shortlist_copy_row_bytes_ = 0;
  shortlist_copy_groups_ = 0;
  shortlist_copy_rows_ = 0;
  if (shortlist_ != nullptr) {
    const char* output = !c.tied_output        ? "output_projection.weight"
                         : c.shared_embeddings ? "encoder.embed_tokens.weight"
                                               : "decoder.embed_tokens.weight";
    TensorInfo info;
    if (model.Find(output, &info)) {
      const WeightView w = info.AsWeight();
      if (w.rows == c.tgt_vocab_size) {
        shortlist_copy_row_bytes_ = w.row_bytes();
        shortlist_copy_groups_ = w.scales != nullptr ? w.groups_per_row() : 0;
        shortlist_copy_rows_ = static_cast<int64_t>(
            std::min<size_t>(static_cast<size_t>(w.rows), CheckedMul(b, capacity)));
      }
    }
  }
  const bool copy = shortlist_copy_rows_ > 0;
  const size_t copy_rows = static_cast<size_t>(shortlist_copy_rows_);
  p.Add("shortlist_copy", CheckedMul(copy_rows, shortlist_copy_row_bytes_), kEncoder, kDecoder,
        &shortlist_copy_, copy);
  p.Add("shortlist_copy_scales", CheckedMul(copy_rows, static_cast<size_t>(shortlist_copy_groups_)),
        kEncoder, kDecoder, &shortlist_copy_scales_, copy && shortlist_copy_groups_ > 0);
  p.Add("shortlist_copy_at", b, kEncoder, kDecoder, &shortlist_copy_at_, copy);
  p.Add(requests, kDecoder, kDecoder);  // the decoding algorithm's state
  p.Add("beam_scratch", CheckedMul(k, t, d_kv), kDecoder, kDecoder, &beam_scratch_, k > 1 && !half);
  p.Add("beam_scratch", CheckedMul(k, t, d_kv), kDecoder, kDecoder, &beam_scratch16_,
        k > 1 && half);
  // Universal: reused by every step (apart from self_kv, nothing depends on universal_steps).
  p.Add("step_signal", d, kEncoder, kDecoder, &step_signal_, universal);
  p.Add("encoder_act_acc", bs, kEncoder, kEncoder, &enc_act_.acc, act);
  p.Add("encoder_act_weights", bs, kEncoder, kEncoder, &enc_act_.weights, act);
  p.Add("encoder_act_out", CheckedMul(bs, d), kEncoder, kEncoder, &enc_act_.out, act);
  p.Add("decoder_act_acc", rows, kDecoder, kDecoder, &dec_act_.acc, act);
  p.Add("decoder_act_weights", rows, kDecoder, kDecoder, &dec_act_.weights, act);
  p.Add("decoder_act_out", CheckedMul(rows, d), kDecoder, kDecoder, &dec_act_.out, act);
  GreedyPlanner* g = &p.planner();
  PlanBackendOperators(plan->backend, kPrepare, kDecoder, g, &plan->backend_ids);
  PlanBackendScratch(plan->backend, kPrepare, kEncoder, kDecoder, g, &plan->backend_ids);
  PlanBackendAttention(plan->backend, kPrepare, kDecoder, kEncoder, kEncoder, g,
                       &plan->backend_ids);
  return p.Plan();
}

void EncoderDecoder::Reset() {
  encoded_ = false;
  TransformerModel::Reset();
}

void EncoderDecoder::Start() {
  const int64_t rows = limits_.max_source_length > limits_.max_target_length
                           ? limits_.max_source_length
                           : limits_.max_target_length;
  FillPositions(config_, weights_, rows, position_tables_, shaw_scratch_, &positions_);
  enc_scratch_.positions = positions_.encoder;
  dec_scratch_.positions = positions_.decoder;
  enc_scratch_.kernels = backend_.kernels();
  dec_scratch_.kernels = backend_.kernels();
}

KeyValues EncoderDecoder::SelfCache(int64_t i) const {
  // Rows of target_capacity_ positions each (this call's, under a budget), laid out for this
  // call's rows: decoder_rows() x capacity never exceeds what the plan holds per layer.
  if (self_kv16_ != nullptr)
    return KeyValues::OfLayer(self_kv16_, i, decoder_rows(), target_capacity_, config_.d_kv());
  KeyValues kv = KeyValues::OfLayer(self_kv_, i, decoder_rows(), target_capacity_, config_.d_kv());
  kv.through_scratch = TargetBudgeted(limits_);
  return kv;
}

Status EncoderDecoder::SetTargetLength(int32_t positions) {
  if (!encoded_ || position_ != 0) {
    return Status::Error(StatusCode::kFailedPrecondition, "SetTargetLength must follow Encode");
  }
  if (positions < 1 || positions > limits_.max_target_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "target length of %d positions; this session allows 1 to %d", positions,
                         limits_.max_target_length);
  }
  if (!TargetBudgeted(limits_)) return Status::Ok();  // the caches hold max_target_length
  const int64_t wanted = static_cast<int64_t>(batch_) * positions;
  if (wanted > TargetTokens(limits_)) {
    return Status::Error(StatusCode::kOutOfRange,
                         "batch of %d sentences that may take %d decoder steps: %lld target "
                         "positions; this session's limits.max_target_tokens is %d (lower "
                         "max_length, set max_length_ratio, or translate fewer sentences at once)",
                         batch_, positions, static_cast<long long>(wanted),
                         limits_.max_target_tokens);
  }
  target_capacity_ = positions;
  return Status::Ok();
}

CrossAttention EncoderDecoder::Cross(int64_t i) const {
  CrossAttention cross;
  cross.w = &layers_.decoder[i].cross;
  cross.kv = cross_kv16_ != nullptr
                 ? KeyValues::OfLayer(cross_kv16_, i, batch_, src_seq_, config_.d_kv())
                 : KeyValues::OfLayer(cross_kv_, i, batch_, src_seq_, config_.d_kv());
  return cross;
}

Status EncoderDecoder::Encode(const int32_t* src_ids, int64_t src_stride, const int32_t* lengths,
                              int32_t batch) {
  encoded_ = false;
  if (arena_used_ == 0) {
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
  TERN_RETURN_IF_ERROR(CheckSequences(src_ids, src_stride, lengths, batch,
                                      limits_.max_source_length, config_.src_vocab_size, "sentence",
                                      "source token"));
  int64_t seq = 0;
  for (int32_t b = 0; b < batch; ++b) seq = lengths[b] > seq ? lengths[b] : seq;
  if (batch * seq > SourceTokens(limits_)) {
    return Status::Error(StatusCode::kOutOfRange,
                         "batch of %d sentences padded to %lld tokens: %lld source tokens; this "
                         "session's limits.max_batch_tokens is %d",
                         batch, static_cast<long long>(seq), static_cast<long long>(batch * seq),
                         limits_.max_batch_tokens);
  }
  PassScope pass(backend_, ModelPass::kEncode, batch * seq);  // the pool's choice per pass
  const int64_t d = config_.d_model;
  batch_ = batch;
  src_seq_ = seq;
  // Padded rows embed pad_id so they hold finite values; they are masked as keys.
  for (int32_t b = 0; b < batch; ++b) {
    src_lengths_[b] = lengths[b];
    float* x = enc_x_ + b * seq * d;
    ops::Embedding(weights_.src_embed, src_ids + b * src_stride, lengths[b],
                   config_.embedding_scale, x);
    for (int64_t i = lengths[b]; i < seq; ++i) {
      ops::Embedding(weights_.src_embed, &config_.pad_id, 1, config_.embedding_scale, x + i * d);
    }
    // Universal: the positions come with each step's coordinate embedding instead.
    if (positions_.encoder_rows != nullptr && !universal())
      ops::AddRows(x, positions_.encoder_rows, seq, d);
  }
  EmbeddingNorm(config_, enc_scratch_.kernels, weights_.encoder_embed_norm, enc_x_, batch * seq);
  SequenceShape shape;
  shape.sequences = batch;
  shape.seq = seq;
  shape.lengths = src_lengths_;
  const KeyValues kv{enc_scratch_.k, enc_scratch_.v, seq};
  if (universal()) {
    UniversalEncoderSteps(shape, kv);
  } else {
    for (int i = 0; i < config_.encoder_layers; ++i)
      LayerForward(config_, layers_.encoder[i], enc_x_, shape, kv, enc_scratch_);
  }
  FinalNorm(config_, enc_scratch_.kernels, weights_.encoder_norm, enc_x_, batch * seq);
  for (int i = 0; i < config_.decoder_layers; ++i)
    CrossKeysValues(config_, layers_.decoder[i].cross, enc_x_, batch, seq, Cross(i).kv,
                    enc_scratch_);
  shortlist_listed_ = shortlist_ != nullptr && shortlist_on_;
  if (shortlist_listed_) {
    int64_t copied = 0;  // rows of shortlist_copy_ taken by earlier sentences
    for (int32_t b = 0; b < batch; ++b) {
      ListCandidates(src_ids + b * src_stride, lengths[b], shortlist_ids_ + b * shortlist_capacity_,
                     &shortlist_counts_[b]);
      if (shortlist_copy_ == nullptr) continue;
      if (copied + shortlist_counts_[b] <= shortlist_copy_rows_) {
        shortlist_copy_at_[b] = static_cast<int32_t>(copied);
        CopyCandidateRows(b);
        copied += shortlist_counts_[b];
      } else {
        shortlist_copy_at_[b] = -1;  // read in place
      }
    }
  }
  position_ = 0;
  rows_per_sentence_ = 1;
  // Until SetTargetLength: all of max_target_length, or as many positions as the budget leaves
  // each sentence.
  target_capacity_ = limits_.max_target_length;
  if (TargetBudgeted(limits_)) {
    const int64_t share = TargetTokens(limits_) / batch;
    if (share < target_capacity_) target_capacity_ = share;
  }
  encoded_ = true;
  return Status::Ok();
}

// F frequent + the row of each distinct source token + the special ids, deduplicated and
// ascending: marked in a bitmap of the target vocabulary, then read out in id order. Depends on
// the sentence alone, so its translation does not depend on the rest of the batch.
void EncoderDecoder::ListCandidates(const int32_t* src, int32_t length, int32_t* out,
                                    int32_t* count) {
  const size_t words = (static_cast<size_t>(config_.tgt_vocab_size) + 63) / 64;
  for (size_t w = 0; w < words; ++w) shortlist_marks_[w] = 0;
  auto mark = [this](int32_t id) { shortlist_marks_[id >> 6] |= uint64_t{1} << (id & 63); };
  for (int32_t id : shortlist_->frequent) mark(id);
  int32_t specials[kMaxShortlistSpecials];
  const int n = ShortlistSpecials(config_, specials);
  for (int i = 0; i < n; ++i) mark(specials[i]);
  for (int32_t i = 0; i < length; ++i) {
    shortlist_->ForEachInRow(src[i], mark);
  }
  int32_t c = 0;
  for (size_t w = 0; w < words; ++w) {
    for (uint64_t bits = shortlist_marks_[w]; bits != 0; bits &= bits - 1) {
      out[c++] = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
    }
  }
  *count = c;
}

// Sentence b's candidate rows of the output weight, and their scales, front to back from row
// shortlist_copy_at_[b] of the copy.
void EncoderDecoder::CopyCandidateRows(int32_t b) {
  const WeightView& w = weights_.output.weight;
  const size_t row_bytes = shortlist_copy_row_bytes_;
  const size_t groups = static_cast<size_t>(shortlist_copy_groups_);
  const size_t at = static_cast<size_t>(shortlist_copy_at_[b]);
  const int32_t* ids =
      shortlist_ids_ + static_cast<size_t>(b) * static_cast<size_t>(shortlist_capacity_);
  uint8_t* rows = shortlist_copy_ + at * row_bytes;
  float* scales =
      shortlist_copy_scales_ != nullptr ? shortlist_copy_scales_ + at * groups : nullptr;
  for (int32_t j = 0; j < shortlist_counts_[b]; ++j) {
    std::memcpy(rows + static_cast<size_t>(j) * row_bytes, w.row(ids[j]), row_bytes);
    if (scales != nullptr) {
      std::memcpy(scales + static_cast<size_t>(j) * groups,
                  w.scales + static_cast<size_t>(ids[j]) * groups, groups * sizeof(float));
    }
  }
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
  // Per layer, K then V: each sentence's k hypotheses (one cache row each, filled up to the
  // current position) gathered through the scratch.
  const int64_t row = target_capacity_ * config_.d_kv(), used = position_ * config_.d_kv();
  const int64_t kv_layers = universal() ? config_.universal_steps : config_.decoder_layers;
  for (int64_t layer = 0; layer < kv_layers; ++layer) {
    const KeyValues kv = SelfCache(layer);
    if (kv.half()) {
      for (Half* cache : {kv.hk, kv.hv})
        ops::GatherRowsInGroups(cache, batch_, k, row, used, parents, beam_scratch16_);
    } else {
      for (float* cache : {kv.k, kv.v})
        ops::GatherRowsInGroups(cache, batch_, k, row, used, parents, beam_scratch_);
    }
  }
  return Status::Ok();
}

Status EncoderDecoder::DecodeStep(const int32_t* tokens, const float** logits) {
  if (!encoded_) {
    return Status::Error(StatusCode::kFailedPrecondition, "DecodeStep before Encode");
  }
  if (position_ >= target_capacity_) {
    if (target_capacity_ == limits_.max_target_length) {
      return Status::Error(StatusCode::kOutOfRange,
                           "decoder reached the session's max_target_length (%d)",
                           limits_.max_target_length);
    }
    return Status::Error(StatusCode::kOutOfRange,
                         "decoder reached this call's target length (%lld positions: "
                         "SetTargetLength, or limits.max_target_tokens %d over %d sentences)",
                         static_cast<long long>(target_capacity_), limits_.max_target_tokens,
                         batch_);
  }
  const int32_t rows = decoder_rows();
  for (int32_t b = 0; b < rows; ++b) {
    if (tokens[b] < 0 || tokens[b] >= config_.tgt_vocab_size) {
      return Status::Error(StatusCode::kOutOfRange,
                           "decoder token id %d is outside the vocabulary [0, %d)", tokens[b],
                           config_.tgt_vocab_size);
    }
  }
  PassScope pass(backend_, ModelPass::kStep, rows);  // the pool's choice per step
  const int64_t d = config_.d_model;
  ops::Embedding(weights_.tgt_embed, tokens, rows, config_.embedding_scale, dec_x_);
  if (positions_.decoder_rows != nullptr && !universal()) {
    for (int32_t b = 0; b < rows; ++b)
      ops::AddRows(dec_x_ + b * d, positions_.decoder_rows + position_ * d, 1, d);
  }
  EmbeddingNorm(config_, dec_scratch_.kernels, weights_.decoder_embed_norm, dec_x_, rows);
  StepShape shape;
  shape.rows = rows;
  shape.position = position_;
  shape.rows_per_sentence = rows_per_sentence_;
  shape.src_lengths = src_lengths_;
  if (universal()) {
    UniversalDecoderSteps(shape);
  } else {
    for (int i = 0; i < config_.decoder_layers; ++i) {
      const CrossAttention cross = Cross(i);
      LayerStep(config_, layers_.decoder[i].layer, dec_x_, shape, SelfCache(i), &cross,
                dec_scratch_);
    }
  }
  FinalNorm(config_, dec_scratch_.kernels, weights_.decoder_norm, dec_x_, rows);
  if (shortlist_listed_) {
    // Only the sentence's candidate rows, packed: row r's logits at r * capacity (the logits
    // buffer holds [rows, tgt_vocab] for use_shortlist = false, and capacity <= tgt_vocab).
    // Rounded as the full projection rounds on this backend where it runs on XNNPACK's qd8
    // paths, so a candidate's logit is the one the full vocabulary would give it, to the bit;
    // float dot products otherwise (a projection XNNPACK has no operator for, e.g. int4 blocks
    // on AVX512-VNNI CPUs, quantizes its rows in vectorized/linear_qd8.h: there the candidates'
    // logits differ from the full projection's by that quantization).
    const WeightView& w = weights_.output.weight;
    const bool qd8 = ops::QuantizesRowsToInt8(weights_.output.kernel) && vec::Qd8Rows(w);
    for (int32_t r = 0; r < rows; ++r) {
      float* y = logits_ + r * shortlist_capacity_;
      const int32_t b = r / rows_per_sentence_;
      const int32_t* ids = shortlist_ids_ + b * shortlist_capacity_;
      // The sentence's rows copied together at Encode (rows 0 .. count - 1, the bias still by
      // vocabulary id), or read in place.
      WeightView rows_w = w;
      const int32_t* rows_at = ids;
      if (shortlist_copy_ != nullptr && shortlist_copy_at_[b] >= 0) {
        const size_t at = static_cast<size_t>(shortlist_copy_at_[b]);
        rows_w.data = shortlist_copy_ + at * shortlist_copy_row_bytes_;
        rows_w.rows = shortlist_counts_[b];
        if (shortlist_copy_scales_ != nullptr) {
          rows_w.scales = shortlist_copy_scales_ + at * static_cast<size_t>(shortlist_copy_groups_);
        }
        rows_at = nullptr;
      }
      if (qd8) {
        const vec::Qd8Row p = vec::QuantizeQd8(dec_x_ + r * d, d, shortlist_row_q_);
        vec::LinearRowsQd8(shortlist_row_q_, p, rows_w, weights_.output.bias, rows_at,
                           shortlist_counts_[b], y, ids);
      } else {
        vec::LinearRows(dec_x_ + r * d, rows_w, weights_.output.bias, rows_at, shortlist_counts_[b],
                        y, ids);
      }
    }
  } else {
    Linear(dec_x_, rows, d, weights_.output, logits_, config_.tgt_vocab_size);
  }
  ++position_;
  *logits = logits_;
  return Status::Ok();
}

}  // namespace tern
