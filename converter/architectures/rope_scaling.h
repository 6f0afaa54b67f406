// Hugging Face `rope_scaling` (LlamaConfig and the families that share its rotary code) onto
// tern's rotary_scaling fields: null or type "default" is plain RoPE, "linear" position
// interpolation ({"type"|"rope_type": "linear", "factor": f}), "llama3" LLaMA 3.1's rule
// ({"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
// "original_max_position_embeddings"}). Any other type, a missing key, or a key tern does not
// implement ("attention_factor", YaRN's "beta_fast", ...) is refused by name: a different
// position encoding would convert silently otherwise.
#pragma once

#include <string>

#include "converter/architectures/hf_config.h"
#include "runtime/model/config.h"

namespace tern::convert::arch {

// Sets c->rotary_scaling and its parameters from hf's "rope_scaling"; label: the config.json
// path, for messages.
void MapRopeScaling(const HfConfig& hf, const std::string& label, ModelConfig* c);

}  // namespace tern::convert::arch
