// Sinusoidal positional encoding (paper section 3.5):
//   PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).
// Concatenated layout (fairseq, Marian) puts all sines first, then all cosines, with
// frequencies 10000^(-i/(half-1)) as those toolkits define them. SplitHalves (Hugging Face's
// Marian) also puts sines first, but with the paper's frequencies 10000^(-2i/d_model).
// Fairseq is the concatenated table as fairseq's SinusoidalPositionalEmbedding (and Hugging
// Face's M2M100 / NLLB) index it: the first token is at position padding_idx + 1 (pad_id + 1,
// FirstPosition); the rows themselves are the concatenated ones.
#pragma once

#include <cstdint>

namespace tern::ref {

enum class SinusoidLayout : uint8_t {
  kInterleaved = 0,
  kConcatenated = 1,
  kSplitHalves = 2,
  kFairseq = 3
};

// The table row of a sequence's first token: pad_id + 1 for kFairseq, 0 otherwise.
inline int64_t FirstPosition(SinusoidLayout layout, int64_t pad_id) {
  return layout == SinusoidLayout::kFairseq ? pad_id + 1 : 0;
}

// Writes rows [start, start + count) of the table into out[count, d_model].
// Computed in double so the table is exact to float rounding at any position.
void SinusoidalPositions(int64_t start, int64_t count, int64_t d_model, SinusoidLayout layout,
                         float* out);

// x[t] += pe[t] for t in [0, count): positions are precomputed rows of a table.
void AddRows(float* x, const float* rows, int64_t count, int64_t d_model);

}  // namespace tern::ref
