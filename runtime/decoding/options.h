// What a user can ask of decoding (CTranslate2's decoding options in spirit). Everything here
// is applied inside the arena: no option makes decoding allocate.
#pragma once

#include <cstdint>

namespace tern {

// Called once per new token of each sentence (streaming). Return false to cancel: decoding
// stops and the call returns StatusCode::kCancelled. Another thread can cancel by setting a
// flag that the callback reads.
using TokenCallback = bool (*)(void* user, int32_t sentence, int32_t step, int32_t token);

struct DecodingOptions {
  // The beam of this call: 1 (greedy) up to the session's Limits::beam_size, which fixes the
  // widest beam the arena is planned for. One setting with a bound, not two settings: the
  // bound is chosen once at Prepare, each call picks a width within it (docs/api.md).
  int32_t beam_size = 1;
  // Generated tokens per sentence incl. EOS. 0: the session's max_target_length. With
  // max_length_ratio > 0 a sentence also stops at ceil(ratio * source_length) + max_length_extra.
  int32_t max_length = 0;
  float max_length_ratio = 0.0f;
  int32_t max_length_extra = 0;
  int32_t min_length = 0;            // EOS is not allowed before this many tokens
  float length_penalty = 1.0f;       // beam: score / length^penalty (0: raw sum of log-probs)
  float repetition_penalty = 1.0f;   // > 1 discourages tokens already generated (CTRL style)
  int32_t no_repeat_ngram_size = 0;  // > 0: never generate an n-gram twice
  int32_t n_best = 1;                // beam: hypotheses returned per sentence (<= beam_size)
  TokenCallback on_token = nullptr;
  void* user = nullptr;
  // The model's vocabulary shortlist, when the file has one (docs/shortlist.md): each sentence
  // scores only its candidate target tokens. false: every token, as without a shortlist.
  bool use_shortlist = true;
  // The decoder's second input, after decoder_start_id, whatever the model predicts there: a
  // multilingual model's target language (NLLB, M2M100, mBART-50), or the token a model always
  // starts with (bart-large's <s>): Hugging Face's forced_bos_token_id. -1: the model's
  // config.forced_bos_id (itself -1: none). It takes one decoder position, so at most
  // max_target_length - 1 tokens follow; it is not written to the output and adds nothing to the
  // score (its forced probability is 1).
  int32_t forced_bos_id = -1;
};

// Sampling for language models (runtime/decoding/sampling.h has the procedure).
struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off; in (0, 1]
  uint64_t seed = 0;
};

struct GenerationOptions {
  // New tokens per sequence, EOS included when it is generated. 0: until the session is full.
  int32_t max_new_tokens = 0;
  bool stop_at_eos = true;  // false: EOS is a token like any other
  // temperature 0 (the default): greedy, lowest id on ties. Sequence r of a batch draws from
  // PCG32 stream r of `seed`, so a prompt gives the same tokens alone or in row r of a batch.
  SamplingOptions sampling;
  TokenCallback on_token = nullptr;  // per new token of each sequence; false cancels
  void* user = nullptr;
};

// Greedy search is decoding with beam_size 1; the old name stays for callers.
using GreedyOptions = DecodingOptions;

}  // namespace tern
