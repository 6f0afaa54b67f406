#include "runtime/decoding/logits_processing.h"

#include <cmath>
#include <limits>

#include "runtime/kernels/vectorized/log_sum_exp.h"

namespace tern {

Status ForcedFirstToken(const DecodingOptions& options, int32_t config_forced, int32_t vocab,
                        int32_t* forced) {
  *forced = options.forced_bos_id >= 0 ? options.forced_bos_id : config_forced;
  if (options.forced_bos_id < -1 || *forced >= vocab) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "forced_bos_id = %d is neither -1 (the model's) nor a target token id "
                         "below %d",
                         options.forced_bos_id, vocab);
  }
  return Status::Ok();
}

void ProcessLogits(const DecodingOptions& options, int32_t eos_id, const int32_t* history,
                   int32_t length, float* logits, int32_t vocab, int32_t forced_first) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (length == 0 && forced_first >= 0 && forced_first < vocab) {
    // Hugging Face's ForcedBOSTokenLogitsProcessor: the one token left, its log-probability 0.
    for (int32_t v = 0; v < vocab; ++v) logits[v] = neg_inf;
    logits[forced_first] = 0.0f;
    return;
  }
  if (length < options.min_length && eos_id >= 0 && eos_id < vocab) logits[eos_id] = neg_inf;
  if (options.repetition_penalty != 1.0f && options.repetition_penalty > 0.0f) {
    // Each distinct earlier token once: divide positive logits, multiply negative ones.
    for (int32_t i = 0; i < length; ++i) {
      bool seen = false;
      for (int32_t j = 0; j < i && !seen; ++j) seen = history[j] == history[i];
      if (seen) continue;
      float& v = logits[history[i]];
      v = v > 0.0f ? v / options.repetition_penalty : v * options.repetition_penalty;
    }
  }
  const int32_t n = options.no_repeat_ngram_size;
  if (n > 0 && length >= n - 1) {
    // The last n-1 tokens are the prefix; any earlier occurrence of that prefix bans the token
    // that followed it.
    const int32_t* prefix = history + length - (n - 1);
    for (int32_t start = 0; start + n - 1 < length; ++start) {
      bool match = true;
      for (int32_t k = 0; k < n - 1 && match; ++k) match = history[start + k] == prefix[k];
      if (match) logits[history[start + n - 1]] = neg_inf;
    }
  }
}

float LogProbability(const float* logits, int32_t vocab, int32_t token) {
  return logits[token] - vec::LogSumExp(logits, vocab);
}

int32_t ArgMax(const float* values, int32_t count) {
  int32_t best = 0;
  for (int32_t i = 1; i < count; ++i) {
    if (values[i] > values[best] || (values[best] != values[best] && values[i] == values[i])) {
      best = i;
    }
  }
  return best;
}

}  // namespace tern
