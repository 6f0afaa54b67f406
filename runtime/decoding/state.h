// The decoding algorithms' own buffers. They live in the session's arena beside the model's,
// but the model does not own them: the API layer (runtime/api/) asks for them here (Request),
// passes the requests to the model's plan, which places them with its decoder-phase buffers
// (so RequiredArenaBytes counts them before Prepare), and Prepare points these members at them.
// The model sees names and sizes only.
#pragma once

#include <cstdint>

#include "runtime/memory/arena_plan.h"
#include "runtime/model/config.h"
#include "tern/limits.h"

namespace tern {

struct Pcg32;

// Greedy decoding and beam search over an EncoderDecoder.
struct TranslationState {
  int32_t* tokens = nullptr;  // [max_batch * beam_size]: each decoder row's input of one step
  uint8_t* beam = nullptr;    // DecoderStateBytes(limits) (beam_search.h): the hypotheses

  void Request(const ModelConfig& config, const Limits& limits, BufferRequests* requests);
};

// Generate over a DecoderOnly.
struct GenerationState {
  int32_t* tokens = nullptr;    // [max_batch]: each sequence's next token
  uint8_t* sampling = nullptr;  // SamplingScratchBytes(vocab) (sampling.h)
  Pcg32* generators = nullptr;  // [max_batch]: one per sequence, seeded by each Generate

  void Request(const ModelConfig& config, const Limits& limits, BufferRequests* requests);
};

}  // namespace tern
