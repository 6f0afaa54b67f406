// Sinusoidal positional encoding (paper section 3.5):
//   PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)).
// Concatenated layout (fairseq, Marian) puts all sines first, then all cosines, with
// frequencies 10000^(-i/(half-1)) as those toolkits define them. SplitHalves (Hugging Face's
// Marian) also puts sines first, but with the paper's frequencies 10000^(-2i/d_model).
#pragma once

#include <cstdint>

namespace tern::ref {

enum class SinusoidLayout : uint8_t { kInterleaved = 0, kConcatenated = 1, kSplitHalves = 2 };

// Writes rows [start, start + count) of the table into out[count, d_model].
// Computed in double so the table is exact to float rounding at any position.
void SinusoidalPositions(int64_t start, int64_t count, int64_t d_model, SinusoidLayout layout,
                         float* out);

// x[t] += pe[t] for t in [0, count): positions are precomputed rows of a table.
void AddRows(float* x, const float* rows, int64_t count, int64_t d_model);

}  // namespace tern::ref
