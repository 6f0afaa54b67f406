// Rotary position embedding (RoPE; Su et al. 2021, "RoFormer"), as LLaMA and Hugging Face apply
// it: the first rotary_dim dimensions of every head are split into two halves, and dimension i
// is rotated together with dimension i + rotary_dim/2 ("rotate_half") by the angle p * theta_i,
// theta_i = base^(-2i / rotary_dim), p the token's position:
//   x'[i]       = x[i] cos(p theta_i) - x[i + r/2] sin(p theta_i)
//   x'[i + r/2] = x[i + r/2] cos(p theta_i) + x[i] sin(p theta_i)          (i < r/2)
// Dimensions rotary_dim..d_head pass unchanged. Queries and keys are rotated after their
// projections, so q_m . k_n depends on the positions only through m - n; the decoder's K/V cache
// stores rotated keys, so each key is rotated once, at its own step.
#pragma once

#include <cstdint>

namespace tern::ref {

// cos/sin of p * theta_i for positions [0, rows): cos[p * (rotary_dim/2) + i], the same for sin.
// Computed in double (exact to float rounding at any position). Each table is rows *
// rotary_dim / 2 floats.
void RotaryTables(int64_t rows, int64_t rotary_dim, float base, float* cos, float* sin);

struct RotaryTable {
  const float* cos = nullptr;  // [rows, rotary_dim / 2]
  const float* sin = nullptr;
  int64_t rotary_dim = 0;  // rotated dimensions of each head (even, <= d_head)
};

// Rotates `rows` rows of x (row stride ld, heads * d_head columns, heads contiguous) in place;
// row r is at position first_position + r * position_step (1 in a sentence; 0 for the rows of
// one decoder step, which all sit at the same position). Positions must be inside the table.
void ApplyRotary(const RotaryTable& table, float* x, int64_t rows, int64_t ld, int64_t heads,
                 int64_t d_head, int64_t first_position, int64_t position_step);

}  // namespace tern::ref
