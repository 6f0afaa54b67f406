// Generation with a decoder-only model: run the prompt through the model at once (prefill),
// then pick one token per step (runtime/decoding/sampling.h: greedy or sampled), feed it back,
// and stop at EOS, at max_new_tokens, or when the sequence fills the session
// (limits.max_target_length counts prompt + generated tokens).
#pragma once

#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/decoding/options.h"  // GenerationOptions
#include "runtime/decoding/sampling.h"
#include "runtime/decoding/state.h"

namespace tern {

class DecoderOnly;

// With the state Prepare placed for these limits. Sequence b's prompt is prompts[b * prompt_stride
// + i], i < prompt_lengths[b]. Writes its new tokens (without the prompt, without EOS) to out_ids[b
// * out_stride ...] and their count to out_lengths[b]. out_stride must hold the most tokens a
// sequence may get: max_new_tokens, or the session's capacity minus the shortest prompt when that
// is smaller (or max_new_tokens is 0). out_log_probs (optional, the layout of out_ids): each new
// token's TokenLogProbability (sampling.h), written before on_token sees the token.
Status Generate(DecoderOnly& model, const GenerationState& state, const int32_t* prompts,
                int64_t prompt_stride, const int32_t* prompt_lengths, int32_t batch,
                const GenerationOptions& options, int32_t* out_ids, int64_t out_stride,
                int32_t* out_lengths, float* out_log_probs = nullptr);

}  // namespace tern
