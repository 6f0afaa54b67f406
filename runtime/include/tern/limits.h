// The limits a session is prepared for. Every arena byte follows from the model and these.
#pragma once

#include <cstdint>

namespace tern {

struct Limits {
  int32_t max_batch = 1;            // sentences translated together
  int32_t max_source_length = 128;  // tokens per source sentence, EOS included
  int32_t max_target_length = 128;  // decoder steps (generated tokens, EOS included)
  int32_t beam_size = 1;
};

}  // namespace tern
