// Adjustments of one sentence's next-token logits before the search picks from them: minimum
// length (EOS banned), repetition penalty and no-repeat n-grams. Each works in place on the
// session's own logits buffer and looks only at the sentence's tokens so far.
#pragma once

#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/decoding/options.h"

namespace tern {

// history: the tokens generated so far for this hypothesis (without the start token).
// candidates: the ids of logits[0 .. count), ascending (a shortlist, EncoderDecoder::
// row_candidates); empty: logits[id] for every id below count. A token outside the
// candidates has no logit to adjust.
void ProcessLogits(const DecodingOptions& options, int32_t eos_id, const int32_t* history,
                   int32_t length, float* logits, int32_t count,
                   Span<const int32_t> candidates = Span<const int32_t>());

// Where token id's logit is among `count` (see ProcessLogits); -1: none.
int32_t LogitIndex(Span<const int32_t> candidates, int32_t count, int32_t id);

// log softmax(logits)[token], computed stably.
float LogProbability(const float* logits, int32_t vocab, int32_t token);

// Index of the largest value; the lowest index wins ties. NaN never wins.
int32_t ArgMax(const float* values, int32_t count);

}  // namespace tern
