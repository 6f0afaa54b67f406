// Adjustments of one sentence's next-token logits before the search picks from them: minimum
// length (EOS banned), repetition penalty and no-repeat n-grams. Each works in place on the
// session's own logits buffer and looks only at the sentence's tokens so far.
#pragma once

#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/decoding/options.h"

namespace tern {

// history: the tokens generated so far for this hypothesis (without the start token).
// forced_first >= 0: the first token (length 0) is that one (logit 0, every other -infinity).
void ProcessLogits(const DecodingOptions& options, int32_t eos_id, const int32_t* history,
                   int32_t length, float* logits, int32_t vocab, int32_t forced_first = -1);

// The token a translation starts with (options' forced_bos_id, else the config's; -1: none);
// kInvalidArgument when it is no target id.
Status ForcedFirstToken(const DecodingOptions& options, int32_t config_forced, int32_t vocab,
                        int32_t* forced);

// log softmax(logits)[token], computed stably.
float LogProbability(const float* logits, int32_t vocab, int32_t token);

// Index of the largest value; the lowest index wins ties. NaN never wins.
int32_t ArgMax(const float* values, int32_t count);

}  // namespace tern
