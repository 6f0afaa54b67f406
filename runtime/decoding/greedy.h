// Greedy decoding: at each step pick the most likely next token (lowest id on ties) after the
// options' logits processing, feed it back as the next decoder input (the paper's "shifted
// right"), stop at EOS or at the length limit.
#pragma once

#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/decoding/logits_processing.h"
#include "runtime/decoding/options.h"
#include "runtime/decoding/state.h"
#include "runtime/model/config.h"

namespace tern {

class EncoderDecoder;

// Decodes the batch encoded last, with the state Prepare placed for these limits. Writes
// sentence b's ids (without start token and EOS) to
// out_ids[b * out_stride ...] and their count to out_lengths[b]; out_stride must be at least
// the effective max length. out_scores (optional): the sum of log-probabilities of each
// sentence's tokens, EOS included when it was generated.
Status GreedyDecode(EncoderDecoder& model, const TranslationState& state,
                    const DecodingOptions& options, int32_t* out_ids, int64_t out_stride,
                    int32_t* out_lengths, float* out_scores = nullptr);

// The forced first token: options.forced_bos_id when set (>= 0), else the model's
// config.forced_bos_id; -1: none.
int32_t ForcedToken(const DecodingOptions& options, const ModelConfig& config);

// The decoder positions the options leave for generated tokens: the session's
// max_target_length, one less with a forced first token.
int32_t TargetRoom(const DecodingOptions& options, const ModelConfig& config,
                   int32_t max_target_length);

// options.forced_bos_id: an error unless -1 or a target id. With a forced token (ForcedToken),
// runs the decoder's first step on the start tokens already in tokens[0 .. rows) (its
// prediction is overridden) and puts the forced token there instead, the next step's input.
Status ForceFirstToken(EncoderDecoder& model, const DecodingOptions& options, int32_t rows,
                       int32_t* tokens);

// The max length sentence b may reach under options (shared by greedy and beam search).
int32_t EffectiveMaxLength(const DecodingOptions& options, int32_t session_limit,
                           int32_t source_length);

// The most decoder steps a sentence of source_length tokens takes under (valid) options in a
// session of max_target_length: its effective max length, plus one for a forced first token.
// What a target-token budget counts (Limits::max_target_tokens): greedy and beam search ask the
// model for the longest of a batch's (EncoderDecoder::SetTargetLength), and `tern translate`
// cuts its batches by it.
int32_t DecoderSteps(const DecodingOptions& options, const ModelConfig& config,
                     int32_t max_target_length, int32_t source_length);

// SetTargetLength with the longest DecoderSteps of the encoded batch.
Status PlanTargetLength(EncoderDecoder& model, const DecodingOptions& options);

}  // namespace tern
