// A model's position tables, computed once at Prepare into the arena for positions [0, rows):
// what each stack adds to its embeddings (sinusoids; an encoder-decoder's learned rows,
// dequantized) and what its attention reads (nn/positions.h: rotary cos / sin, T5 bias by
// distance, Shaw's scratch). Both model classes use them; docs/CONVENTIONS.md has the math.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/model/config.h"
#include "runtime/models/model_weights.h"
#include "runtime/nn/positions.h"

namespace tern {

struct PositionTables {
  const float* encoder_rows = nullptr;  // [rows, d_model] added to the embeddings, or null
  const float* decoder_rows = nullptr;
  ref::RotaryTable rotary;  // rotary: cos / sin, which both stacks' positions point at
  StackPositions encoder, decoder;
};

// Floats of the tables: sinusoidal: one [rows, d] table; learned: the encoder's and the
// decoder's rows (a decoder-only model adds its rows per token instead: none); rotary: cos and
// sin [rows, rotary_dim / 2]; T5: the encoder's and decoder's bias by distance, [heads,
// 2 rows - 1] each; Shaw and none: nothing.
size_t PositionFloats(const ModelConfig& c, int64_t rows);

// Fills `tables` (PositionFloats(c, rows) floats) from the weights and points *out at them.
// shaw_scratch: Shaw's 2k+1 floats (relative positions only).
void FillPositions(const ModelConfig& c, const ModelWeights& w, int64_t rows, float* tables,
                   float* shaw_scratch, PositionTables* out);

}  // namespace tern
