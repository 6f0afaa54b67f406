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

// Frequencies stretched for contexts longer than training's (Hugging Face `rope_scaling`):
//   kLinear (position interpolation, Chen et al. 2023): theta_i / factor, i.e. position p
//            rotates as p / factor;
//   kLlama3 (LLaMA 3.1's `apply_scaling`): with wavelength w_i = 2 pi / theta_i, L the
//            original context length, w_hi = L / high_freq_factor, w_lo = L / low_freq_factor:
//              w_i < w_hi:  theta_i                     (high frequencies: kept)
//              w_i > w_lo:  theta_i / factor            (low frequencies: interpolated)
//              otherwise:   (1 - s) theta_i / factor + s theta_i,
//                           s = (L / w_i - low_freq_factor) / (high_freq_factor - low_freq_factor).
enum class RotaryScaling : uint8_t { kNone = 0, kLinear = 1, kLlama3 = 2 };

struct RotaryFrequencies {
  float base = 10000.0f;
  RotaryScaling scaling = RotaryScaling::kNone;
  float factor = 1.0f;
  float low_freq_factor = 0.0f, high_freq_factor = 0.0f;  // kLlama3
  int32_t original_max_positions = 0;                     // kLlama3
};

// theta_i = base^(-2i / rotary_dim), then scaled; in double.
double RotaryFrequency(const RotaryFrequencies& f, int64_t i, int64_t rotary_dim);

// cos/sin of p * theta_i for positions [0, rows): cos[p * (rotary_dim/2) + i], the same for sin.
// Computed in double (exact to float rounding at any position). Each table is rows *
// rotary_dim / 2 floats.
void RotaryTables(int64_t rows, int64_t rotary_dim, const RotaryFrequencies& frequencies,
                  float* cos, float* sin);
inline void RotaryTables(int64_t rows, int64_t rotary_dim, float base, float* cos, float* sin) {
  RotaryFrequencies f;
  f.base = base;
  RotaryTables(rows, rotary_dim, f, cos, sin);
}

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
