#include "runtime/decoding/logits_processing.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/kernels/vectorized/log_sum_exp.h"

namespace tern {

int32_t LogitIndex(Span<const int32_t> candidates, int32_t count, int32_t id) {
  if (candidates.empty()) return id >= 0 && id < count ? id : -1;
  const int32_t* at = std::lower_bound(candidates.begin(), candidates.end(), id);
  return at != candidates.end() && *at == id ? static_cast<int32_t>(at - candidates.begin()) : -1;
}

void ProcessLogits(const DecodingOptions& options, int32_t eos_id, const int32_t* history,
                   int32_t length, float* logits, int32_t count, Span<const int32_t> candidates) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  if (length < options.min_length) {
    const int32_t eos = LogitIndex(candidates, count, eos_id);
    if (eos >= 0) logits[eos] = neg_inf;
  }
  if (options.repetition_penalty != 1.0f && options.repetition_penalty > 0.0f) {
    // Each distinct earlier token once: divide positive logits, multiply negative ones.
    for (int32_t i = 0; i < length; ++i) {
      bool seen = false;
      for (int32_t j = 0; j < i && !seen; ++j) seen = history[j] == history[i];
      const int32_t at = seen ? -1 : LogitIndex(candidates, count, history[i]);
      if (at < 0) continue;
      float& v = logits[at];
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
      const int32_t at = match ? LogitIndex(candidates, count, history[start + n - 1]) : -1;
      if (at >= 0) logits[at] = neg_inf;
    }
  }
}

float LogProbability(const float* logits, int32_t vocab, int32_t token) {
  return logits[token] - vec::LogSumExp(logits, vocab);
}

int32_t ArgMax(const float* values, int32_t count) { return vec::ArgMax(values, count); }

}  // namespace tern
