// Random weights of every dtype and layout for the vectorized kernels' tests: every byte of an
// int8 / int4 weight random (so -128 and -8 occur), scales in [0.001, 0.1], float weights in
// [-1, 1].
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/core/fp16.h"
#include "runtime/core/tensor.h"

namespace tern::vec_test {

struct Layout {
  const char* name;
  DType dtype;
  int64_t group;  // 0: one scale per row
};

struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> scales;
  WeightView view;
};

inline Weights RandomWeights(const Layout& l, int64_t n, int64_t k, std::mt19937* rng) {
  Weights w;
  w.view.dtype = l.dtype;
  w.view.rows = n;
  w.view.cols = k;
  w.view.group_size = l.group;
  w.bytes.resize(w.view.row_bytes() * static_cast<size_t>(n));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  if (l.dtype == DType::kF32 || l.dtype == DType::kF16) {
    for (int64_t r = 0; r < n; ++r) {
      uint8_t* row = w.bytes.data() + static_cast<size_t>(r) * w.view.row_bytes();
      for (int64_t c = 0; c < k; ++c) {
        const float f = value(*rng);
        if (l.dtype == DType::kF32) {
          std::memcpy(row + c * 4, &f, 4);
        } else {
          const uint16_t h = Fp32ToFp16(f);
          std::memcpy(row + c * 2, &h, 2);
        }
      }
    }
  } else {
    // Every byte is a valid int8 or pair of int4 values (-8 and -128 included).
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : w.bytes) b = static_cast<uint8_t>(byte(*rng));
    w.scales.resize(static_cast<size_t>(n * w.view.groups_per_row()));
    std::uniform_real_distribution<float> scale(0.001f, 0.1f);
    for (float& s : w.scales) s = scale(*rng);
    w.view.scales = w.scales.data();
  }
  w.view.data = w.bytes.data();
  return w;
}

// count values uniform in [-2, 2]: activations and biases.
inline std::vector<float> RandomValues(int64_t count, std::mt19937* rng) {
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& e : v) e = value(*rng);
  return v;
}

}  // namespace tern::vec_test
