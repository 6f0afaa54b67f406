#include "runtime/kernels/reference/rotary.h"

#include <cmath>

namespace tern::ref {

double RotaryFrequency(const RotaryFrequencies& f, int64_t i, int64_t rotary_dim) {
  // theta_i = base^(-2i/r), as LLaMA's inv_freq = 1 / base^(arange(0, r, 2) / r).
  const double theta = std::pow(static_cast<double>(f.base),
                                -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim));
  const double factor = f.factor;
  switch (f.scaling) {
    case RotaryScaling::kNone:
      return theta;
    case RotaryScaling::kLinear:
      return theta / factor;
    case RotaryScaling::kLlama3: {
      const double kPi = 3.14159265358979323846;
      const double wavelength = 2.0 * kPi / theta;
      const double original = f.original_max_positions;
      const double low = f.low_freq_factor, high = f.high_freq_factor;
      if (wavelength < original / high) return theta;
      if (wavelength > original / low) return theta / factor;
      const double smooth = (original / wavelength - low) / (high - low);
      return (1.0 - smooth) * theta / factor + smooth * theta;
    }
  }
  return theta;
}

void RotaryTables(int64_t rows, int64_t rotary_dim, const RotaryFrequencies& frequencies,
                  float* cos, float* sin) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const double theta = RotaryFrequency(frequencies, i, rotary_dim);
    for (int64_t p = 0; p < rows; ++p) {
      const double angle = static_cast<double>(p) * theta;
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
}

void ApplyRotary(const RotaryTable& table, float* x, int64_t rows, int64_t ld, int64_t heads,
                 int64_t d_head, int64_t first_position, int64_t position_step) {
  const int64_t half = table.rotary_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t p = first_position + r * position_step;
    const float* c = table.cos + p * half;
    const float* s = table.sin + p * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* lo = x + r * ld + h * d_head;  // dimensions [0, half)
      float* hi = lo + half;                // dimensions [half, rotary_dim)
      for (int64_t i = 0; i < half; ++i) {
        const float a = lo[i], b = hi[i];
        lo[i] = a * c[i] - b * s[i];
        hi[i] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace tern::ref
