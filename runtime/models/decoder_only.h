// A decoder-only Transformer language model (GPT-2, Radford et al. 2019; LLaMA, Touvron et al.
// 2023): token embeddings + positions (learned, or the paper's sinusoids; or rotary inside
// attention, or none), N layers of causal self-attention and FFN (GELU, ..., or SwiGLU;
// runtime/nn/transformer_layer.h, the same layer as the translation decoder's without its
// encoder-decoder attention), a final norm (LayerNorm or RMSNorm), the output projection (tied
// to the embedding in GPT-2, untied in LLaMA). Attention may be grouped-query (config.kv_heads,
// LLaMA 2 70B / LLaMA 3 / Mistral): the K/V cache shrinks by heads / kv_heads.
//
// Limits for this architecture:
//   max_batch          sequences generated together
//   max_target_length  positions per sequence, prompt + generated tokens: the K/V cache
//                      capacity (at most the model's max_positions)
//   max_source_length  longest prompt one Prefill takes (prefill rows; capped by
//                      max_target_length)
//   beam_size          must be 1
//   kv_cache           float32, or float16 (half the cache bytes; keys and values rounded to
//                      fp16 as they enter)
//
// Like EncoderDecoder this class owns no memory: Prepare (transformer.h) carves the weight
// records, position tables, K/V cache, activations and logits from the caller's arena, with the
// generation loop's buffers its caller requests, by a plan that RequiredArenaBytes runs too;
// with the XNNPACK backend every linear layer's operator and packed weights are in the arena as
// well. Prefill and DecodeStep allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/memory/planner.h"
#include "runtime/model/model.h"
#include "runtime/models/positions.h"
#include "runtime/models/transformer.h"
#include "runtime/nn/transformer_layer.h"
#include "tern/limits.h"

namespace tern {

class DecoderOnly final : public TransformerModel {
 public:
  DecoderOnly() = default;

  static Status CheckLimits(const Model& model, const Limits& limits);
  // Bytes of arena Prepare needs (as EncoderDecoder::RequiredArenaBytes).
  static Result<size_t> RequiredArenaBytes(const Model& model, const Limits& limits,
                                           const BufferRequests& requests = BufferRequests(),
                                           bool shared_weights = false) {
    return RequiredBytes<DecoderOnly>(model, limits, requests, nullptr, shared_weights);
  }
  static Result<size_t> SharedWeightsBytes(const Model& model, const Limits& limits) {
    return TransformerModel::SharedWeightsBytes<DecoderOnly>(model, limits);
  }

  // Starts `batch` sequences: sequence b is prompt ids[b * stride + i], i < lengths[b] (1 to
  // prompt_capacity() tokens). Runs every prompt token through the model, a whole prompt at a
  // time, and returns the logits of each prompt's last token: [batch, vocab], valid until the
  // next call.
  Status Prefill(const int32_t* ids, int64_t stride, const int32_t* lengths, int32_t batch,
                 const float** logits);
  // Appends tokens[b] to sequence b (for every sequence of the last Prefill) and returns the
  // logits of the token after it: [batch, vocab]. tokens[b] == kFinished: sequence b is done;
  // it does not grow and its logits row is meaningless (the batch keeps its shape).
  static constexpr int32_t kFinished = -1;
  Status DecodeStep(const int32_t* tokens, const float** logits);

  int32_t vocab_size() const { return config_.tgt_vocab_size; }
  int32_t batch() const { return batch_; }
  // Tokens sequence b holds (prompt + appended).
  int32_t length(int32_t b) const { return lengths_[b]; }
  int32_t capacity() const { return limits_.max_target_length; }
  int32_t prompt_capacity() const;

 private:
  static ModelCalls Calls(const ModelConfig& config, const Limits& limits);
  Status PlanAll(const Model& model, const Limits& limits, const BufferRequests& requests,
                 Planned* plan) override;
  void Start() override;
  void Reset() override;
  // x[0..count) = embed(ids) * scale + position(positions[i]).
  void Embed(const int32_t* ids, const int32_t* positions, int64_t count, float* x);
  KeyValues Cache(int layer) const;

  float* position_tables_ = nullptr;  // sinusoidal or rotary (models/positions.h), or null
  PositionTables positions_;
  float* kv_ = nullptr;   // per layer: K then V, [max_batch, capacity, d_kv]
  Half* kv16_ = nullptr;  // the same with Limits::kv_cache = kFloat16 (kv_ then null)
  float* x_ = nullptr;    // [rows, d]
  LayerScratch scratch_{};
  int32_t* position_ids_ = nullptr;  // [rows]
  int32_t* step_ids_ = nullptr;      // [max_batch]: DecodeStep's tokens, finished rows as 0
  float* logits_ = nullptr;          // [max_batch, vocab]
  int32_t* lengths_ = nullptr;       // [max_batch]
  int32_t batch_ = 0;
  bool started_ = false;
};

}  // namespace tern
