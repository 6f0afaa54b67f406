// Beam search (the paper's section 6.1 decodes with beam 4 and length penalty 0.6): keep the
// beam_size best partial translations per sentence, extend each by every token, keep the best
// beam_size extensions, collect hypotheses that produce EOS, stop a sentence once beam_size
// hypotheses have finished or the length limit is reached. Scores are sums of log-probabilities;
// finished hypotheses are ranked by score / length^length_penalty (length counts EOS).
//
// All state (histories, scores, finished hypotheses) lives in the session's arena
// (DecoderStateBytes bytes at TranslationState::beam, state.h), and the decoder's K/V caches are
// reordered in place: no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/decoding/options.h"
#include "runtime/decoding/state.h"
#include "runtime/model/config.h"
#include "tern/limits.h"

namespace tern {

class EncoderDecoder;

// Arena bytes of beam search's state for these limits (0 for greedy; TranslationState asks
// for them, state.h).
size_t DecoderStateBytes(const ModelConfig& config, const Limits& limits);

// Decodes the batch encoded last. Hypothesis j (0 = best) of sentence b goes to
// out_ids[(b * n_best + j) * out_stride ...], its length to out_lengths[b * n_best + j] and
// its normalized score to out_scores[b * n_best + j] (optional). options.on_token, if set, is
// called with the best hypothesis's tokens when a sentence finishes (beam search cannot stream
// tokens before it knows which hypothesis wins).
Status BeamSearch(EncoderDecoder& model, const TranslationState& state,
                  const DecodingOptions& options, int32_t* out_ids, int64_t out_stride,
                  int32_t* out_lengths, float* out_scores);

}  // namespace tern
