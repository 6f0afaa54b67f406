#include "runtime/decoding/state.h"

#include "runtime/decoding/beam_search.h"
#include "runtime/decoding/sampling.h"
#include "runtime/memory/planner.h"

namespace tern {

// Sizes from unchecked limits saturate (CheckedMul): the model's plan checks the limits first
// and refuses them by name before any of these bytes matter.
void TranslationState::Request(const ModelConfig& config, const Limits& limits,
                               BufferRequests* requests) {
  const size_t rows =
      CheckedMul(static_cast<size_t>(limits.max_batch), static_cast<size_t>(limits.beam_size));
  requests->Add("tokens", rows, &tokens);
  // Also for greedy (0 bytes): one plan for every beam width up to limits.beam_size.
  requests->Add("decoder_state", DecoderStateBytes(config, limits), &beam);
}

void GenerationState::Request(const ModelConfig& config, const Limits& limits,
                              BufferRequests* requests) {
  const size_t batch = static_cast<size_t>(limits.max_batch);
  requests->Add("step_tokens", batch, &tokens);
  requests->Add("sampling_scratch", SamplingScratchBytes(config.tgt_vocab_size), &sampling);
  requests->Add("generators", batch, &generators);
}

}  // namespace tern
