// The encoder-decoder Transformer of "Attention Is All You Need": token embeddings (scaled) +
// positional encodings, N encoder layers, N decoder layers with a K/V cache, output projection,
// composed of the blocks of runtime/nn/ (transformer_layer.h) and described once by
// model_weights.h. Positions (config.position): sinusoidal or learned absolute positions added
// to the embeddings, relative positions inside self-attention (Shaw et al. or T5's bias), or
// rotary (RoPE) rotations of queries and keys; attention may be grouped-query (config.kv_heads:
// the K/V caches shrink by heads / kv_heads); see docs/CONVENTIONS.md.
// Prepare (transformer.h) carves the network's buffers (weight records, position tables,
// activations, K/V caches, logits) from the caller's arena by a plan that depends only on the
// model, the limits and (XNNPACK backend) the CPU, together with the decoding algorithm's buffers
// its caller requests. Encode and DecodeStep only run kernels (the operators exist already).
//
// The Universal Transformer (config.architecture = Universal) is this class with one shared
// encoder layer and one shared decoder layer applied config.universal_steps times, a coordinate
// embedding before each step and optional adaptive computation time (runtime/models/universal.cc,
// docs/CONVENTIONS.md): the weights and their operators exist once; the decoder keeps one
// self-attention K/V cache per step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/memory/planner.h"
#include "runtime/model/model.h"
#include "runtime/models/positions.h"
#include "runtime/models/transformer.h"
#include "runtime/nn/adaptive_computation.h"
#include "runtime/nn/transformer_layer.h"
#include "tern/limits.h"

namespace tern {

class EncoderDecoder final : public TransformerModel {
 public:
  EncoderDecoder() = default;

  static Status CheckLimits(const Model& model, const Limits& limits);
  // Source tokens in flight the encoder's buffers hold: limits.max_batch_tokens when it is set
  // (and smaller), else max_batch x max_source_length.
  static int64_t SourceTokens(const Limits& limits);
  // Target positions per hypothesis the self-attention caches hold: limits.max_target_tokens
  // when it is set (and smaller), else max_batch x max_target_length; budgeted when smaller.
  static int64_t TargetTokens(const Limits& limits);
  static bool TargetBudgeted(const Limits& limits);
  // Bytes of arena Prepare needs for these limits and the caller's requests, including
  // alignment slack: a pure function of its inputs (and, for the XNNPACK backend, of the CPU).
  // Prepare uses exactly this many.
  static Result<size_t> RequiredArenaBytes(const Model& model, const Limits& limits,
                                           const BufferRequests& requests = BufferRequests(),
                                           bool shared_weights = false) {
    return RequiredBytes<EncoderDecoder>(model, limits, requests, nullptr, shared_weights);
  }
  static Result<size_t> SharedWeightsBytes(const Model& model, const Limits& limits) {
    return TransformerModel::SharedWeightsBytes<EncoderDecoder>(model, limits);
  }
  // The model's part of that plan: every buffer's name, size and offset (for inspection and
  // tests, e.g. that universal_steps changes only the K/V caches).
  static Status PlanArena(const Model& model, const Limits& limits, GreedyPlanner* planner) {
    return RequiredBytes<EncoderDecoder>(model, limits, BufferRequests(), planner).status();
  }

  // Runs the encoder over `batch` sentences src_ids[b * src_stride + i], i < lengths[b], then
  // computes every decoder layer's cross-attention K/V. Resets the decoder to position 0.
  Status Encode(const int32_t* src_ids, int64_t src_stride, const int32_t* lengths, int32_t batch);
  // One decoder step for every decoder row: tokens[r] is the decoder input of row r at the
  // current position. Rows are the encoded sentences times rows_per_sentence (1 for greedy, the
  // beam width for beam search). Returns logits [rows, logits_stride()] (valid until the next
  // call): row r's logit of token row_candidates(r)[i] at i, or, without an active shortlist,
  // of every target token (row_candidates empty).
  Status DecodeStep(const int32_t* tokens, const float** logits);
  int64_t logits_stride() const {
    return shortlist_active() ? shortlist_capacity_ : config_.tgt_vocab_size;
  }
  // Decoder row r's candidates (its sentence's shortlist_rows) when the shortlist is active,
  // else empty: the row holds the whole vocabulary.
  Span<const int32_t> row_candidates(int32_t r) const {
    return shortlist_active() ? shortlist_rows(r / rows_per_sentence_) : Span<const int32_t>();
  }
  // Before the first DecodeStep after Encode: decoder rows per sentence (1..limits.beam_size).
  Status SetRowsPerSentence(int32_t rows);
  // Before the first DecodeStep after Encode: the most decoder steps this call will take
  // (1..limits.max_target_length). Under a target-token budget (limits.max_target_tokens) the
  // caches hold that many positions per row, and sentences x positions over the budget is
  // kOutOfRange; without one it is only checked. Not called: max_target_length, or under a
  // budget the budget's share per sentence (a step past it is kOutOfRange).
  Status SetTargetLength(int32_t positions);
  int64_t target_capacity() const { return target_capacity_; }
  int32_t rows_per_sentence() const { return rows_per_sentence_; }
  int32_t decoder_rows() const { return batch_ * rows_per_sentence_; }
  // Beam search: row r continues the hypothesis of row parents[r] (same sentence). Reorders the
  // self-attention K/V cache of every layer accordingly.
  Status ReorderRows(const int32_t* parents);

  // The model's vocabulary shortlist (docs/shortlist.md), when it has one: on by default. Set
  // before Encode; Encode then lists each sentence's candidate target rows, and DecodeStep
  // computes only those logits, packed in candidate order: the search works in that space and
  // maps an index back to its id (row_candidates) only for a chosen token.
  void UseShortlist(bool on) { shortlist_on_ = on; }
  bool shortlist_active() const { return shortlist_listed_ && encoded_; }
  // Sentence b's candidates of the last Encode (sorted target ids), when active.
  Span<const int32_t> shortlist_rows(int32_t b) const {
    return {shortlist_ids_ + b * shortlist_capacity_, static_cast<size_t>(shortlist_counts_[b])};
  }
  // Whether sentence b's candidate rows were copied together at the last Encode (else each step
  // reads them in place).
  bool shortlist_copied(int32_t b) const {
    return shortlist_active() && shortlist_copy_ != nullptr && shortlist_copy_at_[b] >= 0;
  }

  int32_t batch() const { return batch_; }
  int64_t position() const { return position_; }
  // The encoder's output of the last Encode: [batch, src_seq, d_model].
  const float* encoder_output() const { return enc_x_; }
  int64_t source_stride() const { return src_seq_; }
  // Real tokens of sentence b of the last Encode.
  int32_t source_length(int32_t b) const { return src_lengths_[b]; }

 private:
  static ModelCalls Calls(const ModelConfig& config, const Limits& limits);
  Status PlanAll(const Model& model, const Limits& limits, const BufferRequests& requests,
                 Planned* plan) override;
  void Start() override;
  void Reset() override;
  // The self-attention cache of decoder layer (or Universal step) i, and layer i's cross K/V.
  KeyValues SelfCache(int64_t i) const;
  CrossAttention Cross(int64_t i) const;
  // Universal Transformer (runtime/models/universal.cc): the steps over enc_x_ and over dec_x_
  // for one decoder position.
  void UniversalEncoderSteps(const SequenceShape& shape, const KeyValues& kv);
  void UniversalDecoderSteps(const StepShape& shape);
  bool universal() const { return config_.architecture == Architecture::kUniversal; }
  void ListCandidates(const int32_t* src, int32_t length, int32_t* out, int32_t* count);
  void CopyCandidateRows(int32_t b);

  float* step_signal_ = nullptr;      // Universal: [d_model], PE(step)
  ActState enc_act_{}, dec_act_{};    // Universal with ACT only
  float* position_tables_ = nullptr;  // PositionFloats (models/positions.h)
  float* shaw_scratch_ = nullptr;
  PositionTables positions_;
  int32_t* src_lengths_ = nullptr;
  float* enc_x_ = nullptr;
  LayerScratch enc_scratch_{};
  float* cross_kv_ = nullptr;  // the caches, float32 or (Limits::kv_cache = kFloat16) fp16
  float* self_kv_ = nullptr;
  Half* cross_kv16_ = nullptr;
  Half* self_kv16_ = nullptr;
  float* dec_x_ = nullptr;
  LayerScratch dec_scratch_{};
  float* logits_ = nullptr;
  float* beam_scratch_ = nullptr;              // [beam_size * max_target_length * d_kv]
  Half* beam_scratch16_ = nullptr;             // the same, with fp16 caches
  const ShortlistTable* shortlist_ = nullptr;  // null: the model has none
  bool shortlist_on_ = true;
  bool shortlist_listed_ = false;        // the last Encode listed candidates
  int64_t shortlist_capacity_ = 0;       // candidates per sentence at most
  int32_t* shortlist_ids_ = nullptr;     // [max_batch, capacity]
  int32_t* shortlist_counts_ = nullptr;  // [max_batch]
  uint64_t* shortlist_marks_ = nullptr;  // [ceil(tgt_vocab / 64)] while listing
  int16_t* shortlist_row_q_ = nullptr;   // [d_model]: a decoder row quantized (vec::QuantizeQd8)
  // [min(tgt_vocab, max_batch x capacity)] rows of the output weight (and their scales): the
  // sentences' candidate rows copied at Encode, sentence b's from row shortlist_copy_at_[b]
  // (-1: its rows did not fit, and are read in place).
  uint8_t* shortlist_copy_ = nullptr;
  float* shortlist_copy_scales_ = nullptr;
  int32_t* shortlist_copy_at_ = nullptr;  // [max_batch]
  size_t shortlist_copy_row_bytes_ = 0;
  int64_t shortlist_copy_groups_ = 0;
  int64_t shortlist_copy_rows_ = 0;
  int32_t batch_ = 0;
  int32_t rows_per_sentence_ = 1;
  int64_t src_seq_ = 0;
  int64_t position_ = 0;
  int64_t target_capacity_ = 0;  // positions per row in the self-attention caches (this call's)
  bool encoded_ = false;
};

}  // namespace tern
