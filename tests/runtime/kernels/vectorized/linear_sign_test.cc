// vec::SignPanelsLinear, the AVX2 loops on int8 and int4 weights packed in panels of 16 rows: the
// bits of the qd8 row kernel (vec::LinearRowsQd8: exact int32 sums, XNNPACK's epilogue) for
// every row of x, at row counts around its tiles of 4 rows and blocks of rows, widths of one
// group of 4 columns up to the widest it takes (blocks of 8 rows), with and without a bias, with
// strides; a slice of the packed weight at a multiple of 16 rows is the packed slice (threads cut
// layers so); which weights and CPUs it is chosen for.
#include "runtime/kernels/vectorized/linear_sign.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/kernels/vectorized/linear_qd8.h"
#include "runtime/kernels/vectorized/linear_rows.h"
#include "runtime/kernels/vectorized/qd8.h"
#include "tests/runtime/kernels/vectorized/random_weights.h"

namespace tern {
namespace {

using vec_test::RandomWeights;
using vec_test::Weights;

bool Avx2Only() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         !__builtin_cpu_supports("avx512f") && !__builtin_cpu_supports("avxvnni");
#else
  return false;
#endif
}

// An int8 per-row weight in the converter's range (no -128), or an int4 one (every byte).
Weights ConverterWeights(int64_t n, int64_t k, std::mt19937* rng, DType dtype = DType::kI8) {
  Weights w = RandomWeights({"per row", dtype, 0}, n, k, rng);
  if (dtype == DType::kI8) {
    for (uint8_t& b : w.bytes) {
      if (b == 0x80) b = 0x81;
    }
  }
  return w;
}

// The qd8 row kernel's outputs for rows [0, m) of x (stride ldx) into want (stride ldy).
void Want(const std::vector<float>& x, int64_t m, int64_t ldx, const WeightView& w,
          const float* bias, std::vector<float>* want, int64_t ldy) {
  std::vector<int16_t> xq(static_cast<size_t>(w.cols));
  for (int64_t i = 0; i < m; ++i) {
    const vec::Qd8Row p = vec::QuantizeQd8(x.data() + i * ldx, w.cols, xq.data());
    vec::LinearRowsQd8(xq.data(), p, w, bias, nullptr, w.rows, want->data() + i * ldy);
  }
}

TEST_CASE("vec::SignPanelsBeatXnnpack: int8 / int4 per row in panels of 16 rows, AVX2-only CPUs",
          "[vectorized][linear]") {
  std::mt19937 rng(3);
  const Weights ok = ConverterWeights(32, 64, &rng);
  CHECK(vec::SignPanelsBeatXnnpack(ok.view) == Avx2Only());
  CHECK_FALSE(vec::SignPanelsBeatXnnpack(ConverterWeights(24, 64, &rng).view));  // rows % 16
  CHECK_FALSE(vec::SignPanelsBeatXnnpack(ConverterWeights(16, 66, &rng).view));  // cols % 4
  CHECK_FALSE(vec::SignPanelsBeatXnnpack(ConverterWeights(16, vec::kSignMaxCols + 4, &rng).view));
  CHECK(vec::SignPanelsBeatXnnpack(ConverterWeights(16, vec::kSignMaxCols, &rng).view) ==
        Avx2Only());
  CHECK_FALSE(vec::SignPanelsBeatXnnpack(
      RandomWeights({"int8 blocks", DType::kI8, 32}, 16, 64, &rng).view));
  CHECK_FALSE(vec::SignPanelsBeatXnnpack(
      RandomWeights({"int4 blocks", DType::kI4, 32}, 16, 64, &rng).view));
  CHECK(vec::SignPanelsBeatXnnpack(ConverterWeights(16, 64, &rng, DType::kI4).view) == Avx2Only());
  CHECK(vec::SignPanelsExact(ConverterWeights(16, 64, &rng, DType::kI4).view));  // -8 packs
  WeightView packed = ok.view;
  packed.layout = WeightLayout::kSignPanels;
  CHECK_FALSE(vec::SignPanelsBeatXnnpack(packed));  // already packed

  Weights edge = ConverterWeights(16, 64, &rng);
  CHECK(vec::SignPanelsExact(edge.view));
  edge.bytes[16 * 64 - 1] = 0x80;  // the last byte: a -128
  CHECK_FALSE(vec::SignPanelsExact(edge.view));
}

TEST_CASE("vec::SignPanelsLinear gives the qd8 row kernel's bits", "[vectorized][linear]") {
  std::mt19937 rng(17);
  int compared = 0;
  for (const DType dtype : {DType::kI8, DType::kI4}) {
    for (int64_t k : {int64_t{4}, int64_t{64}, int64_t{516}, int64_t{2048}, vec::kSignMaxCols}) {
      const int64_t n = k == vec::kSignMaxCols ? 32 : 48;
      const Weights w = ConverterWeights(n, k, &rng, dtype);
      std::vector<uint8_t> packed(vec::SignPanelsBytes(w.view));
      vec::PackSignPanels(w.view, packed.data());
      const WeightView view = vec::SignPanelsView(w.view, packed.data());
      CHECK(view.layout == WeightLayout::kSignPanels);
      const std::vector<float> bias = vec_test::RandomValues(n, &rng);
      for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 31, 33, 70}) {
        if (k == vec::kSignMaxCols && m > 9) continue;  // its blocks are 8 rows already
        for (const bool with_bias : {true, false}) {
          const int64_t ldx = k + 3, ldy = n + 5;
          std::vector<float> x = vec_test::RandomValues(m * ldx, &rng);
          if (m > 1) {  // a row of large values only, and one of zeros: other ranges, zero points
            for (int64_t c = 0; c < k; ++c) x[static_cast<size_t>(ldx + c)] = 40.0f + c % 7;
          }
          if (m > 2) std::fill(x.begin() + 2 * ldx, x.begin() + 2 * ldx + k, 0.0f);
          const float* b = with_bias ? bias.data() : nullptr;
          INFO(DTypeName(dtype) << ", k " << k << ", m " << m << ", bias " << with_bias);
          std::vector<float> got(static_cast<size_t>(m * ldy), -7.0f);
          std::vector<float> want(got);
          vec::SignPanelsLinear(x.data(), m, ldx, view, b, got.data(), ldy);
          Want(x, m, ldx, w.view, b, &want, ldy);
          CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
          // LinearQd8 takes the packed view on any loops.
          std::vector<float> via(got.size(), -7.0f);
          vec::LinearQd8On(vec::Qd8Isa::kPortable, x.data(), m, ldx, view, b, via.data(), ldy);
          CHECK(std::memcmp(via.data(), want.data(), via.size() * sizeof(float)) == 0);
          ++compared;
        }
      }
    }
  }
  CHECK(compared == 2 * 2 * (4 * 10 + 7));
}

TEST_CASE("vec::SignPanelsLinear on a slice of panels computes those rows",
          "[vectorized][linear]") {
  std::mt19937 rng(5);
  const int64_t n = 96, k = 128, m = 6;
  for (const DType dtype : {DType::kI8, DType::kI4}) {
    INFO(DTypeName(dtype));
    const Weights w = ConverterWeights(n, k, &rng, dtype);
    std::vector<uint8_t> packed(vec::SignPanelsBytes(w.view));
    vec::PackSignPanels(w.view, packed.data());
    const WeightView view = vec::SignPanelsView(w.view, packed.data());
    const std::vector<float> x = vec_test::RandomValues(m * k, &rng);
    std::vector<float> whole(static_cast<size_t>(m * n));
    vec::SignPanelsLinear(x.data(), m, k, view, nullptr, whole.data(), n);
    // Rows [32, 96) as a weight of their own, as a thread's part of the layer.
    WeightView part = view;
    part.data = view.row(32);
    part.rows = 64;
    part.scales = view.scales + 32;
    part.row_sums = view.row_sums + 32;
    std::vector<float> y(static_cast<size_t>(m * n), -7.0f);
    vec::SignPanelsLinear(x.data(), m, k, part, nullptr, y.data() + 32, n);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < n; ++r) {
        const float expect = r < 32 ? -7.0f : whole[static_cast<size_t>(i * n + r)];
        CHECK(y[static_cast<size_t>(i * n + r)] == expect);
      }
    }
  }
}

}  // namespace
}  // namespace tern
