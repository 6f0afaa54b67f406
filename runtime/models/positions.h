// The encoder-decoder's position tables, computed once at Prepare into the arena: how many
// floats each position kind needs, and filling them (sinusoids, dequantized learned rows,
// rotary cos/sin, T5 bias by distance; Shaw's scratch).
#pragma once

#include <cstddef>

#include "runtime/model/config.h"
#include "tern/limits.h"

namespace tern {

// Floats of the session's position tables for these limits.
size_t PositionFloats(const ModelConfig& c, const Limits& limits);

}  // namespace tern
