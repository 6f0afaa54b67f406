// vec::LinearQd8, the XNNPACK backend's kernel for int8 / int4 layers XNNPACK has no operator
// for: against an exact model of what it computes (each row quantized by vec::QuantizeQd8, the
// int32 sum of every block, scaled in double), within float rounding; against ref::Linear
// within the activations' quantization step; the portable loops and those of every vector
// width this CPU has on the same cases (blocks that span its chunks of 1024 columns, odd blocks and
// widths, tails, strides); a row's outputs the same bits alone as inside a batch.
#include "runtime/kernels/vectorized/linear_qd8.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "runtime/kernels/reference/linear.h"
#include "runtime/kernels/vectorized/linear_rows.h"
#include "runtime/kernels/vectorized/qd8.h"
#include "tests/runtime/kernels/vectorized/random_weights.h"

namespace tern {
namespace {

using vec_test::Layout;
using vec_test::RandomWeights;
using vec_test::Weights;

// The weight's integer (r, c), without its scale.
int64_t IntAt(const WeightView& w, int64_t r, int64_t c) {
  return w.dtype == DType::kI8 ? reinterpret_cast<const int8_t*>(w.row(r))[c] : Int4At(w.row(r), c);
}

// What the CPU has, as the kernel's dispatch asks (__builtin_cpu_supports).
bool CpuHas(vec::Qd8Isa isa) {
#if defined(__x86_64__)
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == vec::Qd8Isa::kAvx2) return avx2;
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  if (isa == vec::Qd8Isa::kAvx512) return avx512;
  const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
  if (isa == vec::Qd8Isa::kAvx512Vnni) return vnni;
  // AMX also needs the OS's grant of the tile state, asked here on our own (Linux's
  // arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA), so that a dispatch that never takes AMX
  // where it could fails the LinearQd8Runs checks below.
  if (isa == vec::Qd8Isa::kAmx) {
    if (!vnni || !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("amx-tile") ||
        !__builtin_cpu_supports("amx-int8")) {
      return false;
    }
#if defined(__linux__)
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
  }
#endif
  return isa == vec::Qd8Isa::kPortable;
}

// Every loops, in the order LinearQd8Best prefers them last.
constexpr vec::Qd8Isa kIsas[] = {vec::Qd8Isa::kPortable, vec::Qd8Isa::kAvx2, vec::Qd8Isa::kAvx512,
                                 vec::Qd8Isa::kAvx512Vnni, vec::Qd8Isa::kAmx};

// Checks y (m rows of stride ldy; -7 between rows) against the exact model and the reference.
int CountBad(const std::vector<float>& x, int64_t m, int64_t ldx, const WeightView& w,
             const float* bias, const std::vector<float>& y, int64_t ldy) {
  const int64_t n = w.rows, k = w.cols;
  const int64_t block = w.group_size > 0 ? w.group_size : k;
  const double u = std::ldexp(1.0, -24);
  // Float additions on a row's way: one per block (lanes or a scalar), 3 for the lanes, one per
  // chunk of 1024 columns, the scale and the bias; each rounds by at most u of the sizes.
  const double roundings = static_cast<double>(w.groups_per_row() + k / 1024 + 8);
  std::vector<float> want(static_cast<size_t>(m * ldy));
  ref::Linear(x.data(), m, ldx, w, bias, want.data(), ldy);
  std::vector<int16_t> xq(static_cast<size_t>(k));
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x.data() + i * ldx;
    const vec::Qd8Row p = vec::QuantizeQd8(xi, k, xq.data());
    float lo = 0.0f, hi = 0.0f;
    for (int64_t c = 0; c < k; ++c) {
      lo = std::fmin(lo, xi[c]);
      hi = std::fmax(hi, xi[c]);
    }
    const double step = (static_cast<double>(hi) - lo) / 255.0;
    for (int64_t j = 0; j < ldy; ++j) {
      const float got = y[static_cast<size_t>(i * ldy + j)];
      if (j >= n) {  // between rows: never written
        if (got != -7.0f && ++bad <= 3) UNSCOPED_INFO("wrote column " << j);
        continue;
      }
      double exact = 0.0, size = 0.0, w_abs = 0.0;
      for (int64_t b0 = 0; b0 < k; b0 += block) {
        int64_t sum = 0, sum_abs = 0;
        for (int64_t c = b0; c < std::min(k, b0 + block); ++c) {
          sum += xq[static_cast<size_t>(c)] * IntAt(w, j, c);
          sum_abs += std::abs(xq[static_cast<size_t>(c)] * IntAt(w, j, c));
          w_abs += std::fabs(WeightAt(w, j, c));
        }
        const double scale = w.scale(j, b0);
        exact += static_cast<double>(sum) * scale;
        size += static_cast<double>(sum_abs) * scale;
      }
      const double b = bias != nullptr ? bias[j] : 0.0;
      exact = exact * p.inv_scale + b;
      size = size * p.inv_scale + std::fabs(b);
      if (std::fabs(got - exact) > roundings * u * size + 1e-30 && ++bad <= 3) {
        UNSCOPED_INFO("row " << i << " column " << j << ": " << got << ", exactly " << exact);
      }
      // The float layer it stands for: each x moved by at most half a quantization step.
      const double ref = want[static_cast<size_t>(i * ldy + j)];
      if (std::fabs(got - ref) > 0.5 * step * w_abs + roundings * u * size + 1e-6 && ++bad <= 3) {
        UNSCOPED_INFO("row " << i << " column " << j << ": " << got << ", reference " << ref);
      }
    }
  }
  return bad;
}

TEST_CASE("vec::LinearQd8 computes the int32 block sums of quantized rows, every loops",
          "[vectorized][linear]") {
  const Layout layouts[] = {
      {"int8 per row", DType::kI8, 0},       {"int8 blocks of 16", DType::kI8, 16},
      {"int8 blocks of 24", DType::kI8, 24}, {"int4 per row", DType::kI4, 0},
      {"int4 blocks of 8", DType::kI4, 8},   {"int4 blocks of 32", DType::kI4, 32},
      {"int4 blocks of 96", DType::kI4, 96}, {"int4 blocks of 24", DType::kI4, 24},
      {"int4 blocks of 3", DType::kI4, 3},   {"int4 blocks of 128", DType::kI4, 128},
  };
  // k: below one step, one step, a tail, several chunks of 1024 (blocks of 96 and 24 then span
  // the chunk boundaries; 2112 is a multiple of 32 and of 96).
  const int64_t ks[] = {5, 32, 33, 256, 300, 1024, 2112};
  // m: tails of the VNNI loops' 4 rows, AMX's tile of 30 rows as 15 + 1 (16), 15 + 4 (19) and
  // 15 + 12 (27), and a whole tile then 5 rows (35: the VNNI loops') or 10 (40: AMX's, written
  // from output row 30 on). The other loops quantize x 8 rows at a time: 1, 3, 8 and 19 (two
  // groups and a tail) are theirs, and on a CPU without VNNI or AMX only those run (the rest
  // took 4-5 minutes of armv7's tests under qemu, twice: there every row count runs the portable
  // loops).
  const bool tile_loops = CpuHas(vec::Qd8Isa::kAvx512Vnni) || CpuHas(vec::Qd8Isa::kAmx);
  const std::vector<int64_t> ms = tile_loops ? std::vector<int64_t>{1, 3, 8, 16, 19, 27, 35, 40}
                                             : std::vector<int64_t>{1, 3, 8, 19};
  std::mt19937 rng(11);
  int vector_cases = 0;
  for (const Layout& l : layouts) {
    for (int64_t k : ks) {
      if (l.group > k) continue;
      const int64_t n = 37;
      Weights w = RandomWeights(l, n, k, &rng);
      const std::vector<float> bias = vec_test::RandomValues(n, &rng);
      const int64_t block = l.group > 0 ? l.group : k;
      // Which loops take this weight: whole steps of 32 columns (16 for int8 on AVX2); VNNI's
      // and AMX's int4 per row in steps of 64.
      std::vector<vec::Qd8Isa> isas;
      for (vec::Qd8Isa isa : kIsas) {
        const bool int4_per_row_loops = isa == vec::Qd8Isa::kAvx512Vnni || isa == vec::Qd8Isa::kAmx;
        const int64_t step = int4_per_row_loops                                   ? 64
                             : isa == vec::Qd8Isa::kAvx2 && l.dtype == DType::kI8 ? 16
                                                                                  : 32;
        const bool int4_per_row = l.dtype == DType::kI4 && l.group == 0;
        const bool runs =
            isa == vec::Qd8Isa::kPortable || (CpuHas(isa) && k % step == 0 && block % step == 0 &&
                                              (!int4_per_row_loops || int4_per_row));
        CHECK(vec::LinearQd8Runs(isa, w.view) == runs);
        if (runs) isas.push_back(isa);
      }
      CHECK(vec::LinearQd8Best(w.view) == isas.back());
      vector_cases += isas.size() > 1 ? 1 : 0;
      for (int64_t m : ms) {
        const int64_t ldx = k + 3, ldy = n + 5;  // strides wider than the rows
        std::vector<float> x = vec_test::RandomValues(m * ldx, &rng);
        if (m > 1) {  // a row of zeros: lo == hi, scale 1, the outputs are the bias
          for (int64_t c = 0; c < k; ++c) x[static_cast<size_t>(ldx + c)] = 0.0f;
        }
        if (m > 2) {  // all positive, large: the zero point at -128
          for (int64_t c = 0; c < k; ++c) x[static_cast<size_t>(2 * ldx + c)] = 100.0f + c;
        }
        for (vec::Qd8Isa isa : isas) {
          for (bool with_bias : {true, false}) {
            INFO(l.name << ", k " << k << ", m " << m << (with_bias ? ", bias" : ", no bias")
                        << ", " << vec::Qd8IsaName(isa));
            const float* b = with_bias ? bias.data() : nullptr;
            std::vector<float> got(static_cast<size_t>(m * ldy), -7.0f);
            vec::LinearQd8On(isa, x.data(), m, ldx, w.view, b, got.data(), ldy);
            CHECK(CountBad(x, m, ldx, w.view, b, got, ldy) == 0);
            // Each row alone: the same bits as in the tile it shared with the others.
            for (int64_t i = 0; i < m; ++i) {
              std::vector<float> alone(static_cast<size_t>(n));
              vec::LinearQd8On(isa, x.data() + i * ldx, 1, ldx, w.view, b, alone.data(), n);
              CHECK(std::memcmp(alone.data(), got.data() + i * ldy, alone.size() * sizeof(float)) ==
                    0);
            }
          }
        }
      }
    }
  }
  // On an AVX2 CPU vector loops were among the cases (per row, blocks of 16, 32, 96, 128).
  if (CpuHas(vec::Qd8Isa::kAvx2)) CHECK(vector_cases >= 15);
}

// With one scale per row the loops keep each output's exact int32 sum and scale it as XNNPACK's
// qd8 GEMMs do (vec::Qd8Output): the bits of the shortlist's row kernel (vec::LinearRowsQd8, which
// matches XNNPACK's, tests/runtime/kernels/xnnpack/linear_test.cc), on every loops, at widths of
// one and several chunks (the sums carried across chunks as int32), AMX's tiles among them, and
// one row of x (VNNI's whole-width row, vec::qd8_loops::VnniOneRow, up to 8192 columns; wider
// ones in chunks).
TEST_CASE("vec::LinearQd8 with one scale per row gives the qd8 row kernel's bits, every loops",
          "[vectorized][linear]") {
  std::mt19937 rng(23);
  int compared = 0;
  for (DType dtype : {DType::kI8, DType::kI4}) {
    for (int64_t k : {5, 64, 96, 512, 1024, 2048, 3072, 8192, 8256}) {
      // m 16: a tile of 15 rows (AMX's) and one; n 37-39: 32 weight rows on AMX, 5-7 on VNNI's
      // loops, which take weight rows four at a time (so blocks of 1, 2 and 3 rows end them).
      const int64_t n = 37 + k % 3, m = k > 3072 ? 1 : 16;
      Weights w = RandomWeights({"per row", dtype, 0}, n, k, &rng);
      const std::vector<float> bias = vec_test::RandomValues(n, &rng);
      std::vector<float> x = vec_test::RandomValues(m * k, &rng);
      if (m > 1) {
        for (int64_t c = 0; c < k; ++c) x[static_cast<size_t>(k + c)] = 50.0f + c;  // all > 0
      }
      for (vec::Qd8Isa isa : kIsas) {
        if (!vec::LinearQd8Runs(isa, w.view)) continue;
        for (int64_t rows_of_x : {m, int64_t{1}}) {
          for (bool with_bias : {true, false}) {
            INFO(DTypeName(dtype) << ", k " << k << ", " << vec::Qd8IsaName(isa) << ", m "
                                  << rows_of_x << (with_bias ? ", bias" : ", no bias"));
            const float* b = with_bias ? bias.data() : nullptr;
            std::vector<float> got(static_cast<size_t>(rows_of_x * n));
            vec::LinearQd8On(isa, x.data(), rows_of_x, k, w.view, b, got.data(), n);
            std::vector<int16_t> xq(static_cast<size_t>(k));
            std::vector<float> rows(static_cast<size_t>(n));
            for (int64_t i = 0; i < rows_of_x; ++i) {
              const vec::Qd8Row p = vec::QuantizeQd8(x.data() + i * k, k, xq.data());
              vec::LinearRowsQd8(xq.data(), p, w.view, b, nullptr, n, rows.data());
              CHECK(std::memcmp(rows.data(), got.data() + i * n, rows.size() * sizeof(float)) == 0);
            }
            ++compared;
          }
        }
      }
    }
  }
  CHECK(compared >= 56);
}

// The loops on rows quantized once (AMX's, with a scratch): the bits of the loops on tiles of x,
// for widths of one chunk and more (the sums carried across chunks), weight rows of a pair of
// tiles, one tile and a few, rows of x in one pass and two, a pair's tail, strides; the rows
// quantized in shares and the weight's rows run in parts (threads) give the same bits again.
TEST_CASE("vec::LinearQd8 on rows quantized once gives the tile loops' bits",
          "[vectorized][linear]") {
  std::mt19937 rng(31);
  Weights small = RandomWeights({"per row", DType::kI4, 0}, 37, 128, &rng);
  const bool amx = CpuHas(vec::Qd8Isa::kAmx);
  // Where the loops exist, and what they need.
  CHECK((vec::LinearQd8ScratchBytes(small.view, vec::kQd8RowsMin) > 0) == amx);
  CHECK(vec::LinearQd8ScratchBytes(small.view, vec::kQd8RowsMin - 1) == 0);
  Weights int8 = RandomWeights({"int8 per row", DType::kI8, 0}, 37, 128, &rng);
  Weights blocks = RandomWeights({"int4 blocks of 32", DType::kI4, 32}, 37, 128, &rng);
  CHECK(vec::LinearQd8ScratchBytes(int8.view, 256) == 0);
  CHECK(vec::LinearQd8ScratchBytes(blocks.view, 256) == 0);
  if (!amx) {
    SUCCEED("no AMX on this CPU: the loops on quantized rows do not run");
    return;
  }
  // A pass's rows padded to 32, and the pass never more than kQd8PassRows rows.
  CHECK(vec::LinearQd8ScratchBytes(small.view, 33) == vec::LinearQd8ScratchBytes(small.view, 64));
  CHECK(vec::LinearQd8ScratchBytes(small.view, 10000) ==
        vec::LinearQd8ScratchBytes(small.view, vec::kQd8PassRows));
  const size_t need = vec::LinearQd8ScratchBytes(small.view, 100);
  CHECK(vec::LinearQd8TakesRows(small.view, 100, need));
  CHECK_FALSE(vec::LinearQd8TakesRows(small.view, 100, need - 1));
  CHECK_FALSE(vec::LinearQd8TakesRows(small.view, vec::kQd8RowsMin - 1, need));
  int compared = 0;
  for (int64_t k : {64, 1088, 2048}) {
    for (int64_t n : {37, 16, 64}) {
      Weights w = RandomWeights({"per row", DType::kI4, 0}, n, k, &rng);
      const std::vector<float> bias = vec_test::RandomValues(n, &rng);
      for (int64_t m : {int64_t{32}, int64_t{47}, int64_t{100}, vec::kQd8PassRows + 37}) {
        INFO("k " << k << ", n " << n << ", m " << m);
        const int64_t ldx = k + 3, ldy = n + 2;
        std::vector<float> x = vec_test::RandomValues(m * ldx, &rng);
        for (int64_t c = 0; c < k; ++c) x[static_cast<size_t>(ldx + c)] = 50.0f + c;  // positive
        const size_t bytes = vec::LinearQd8ScratchBytes(w.view, m);
        REQUIRE(bytes > 0);
        std::vector<uint8_t> held(bytes + 64);
        void* scratch = held.data() + (64 - reinterpret_cast<uintptr_t>(held.data()) % 64) % 64;
        std::vector<float> tiles(static_cast<size_t>(m * ldy), -7.0f), rows = tiles, parts = tiles;
        vec::LinearQd8On(vec::Qd8Isa::kAmx, x.data(), m, ldx, w.view, bias.data(), tiles.data(),
                         ldy);
        vec::LinearQd8WithScratch(x.data(), m, ldx, w.view, bias.data(), rows.data(), ldy, scratch,
                                  bytes);
        CHECK(std::memcmp(tiles.data(), rows.data(), tiles.size() * sizeof(float)) == 0);
        CHECK(CountBad(x, m, ldx, w.view, bias.data(), rows, ldy) == 0);
        // As a session's threads run it: each pass quantized in two shares, the weight's rows in
        // two parts (the second from row 32, or 16 for a weight of 37).
        const int64_t cut = n > 32 ? 32 : 16;
        for (int64_t i0 = 0; i0 < m; i0 += vec::kQd8PassRows) {
          const vec::QuantizedRows q = vec::QuantizedRowsIn(scratch, m - i0, k);
          const float* xp = x.data() + i0 * ldx;
          vec::QuantizeQd8Rows(xp, ldx, q.m / 2, q.m, q);
          vec::QuantizeQd8Rows(xp, ldx, 0, q.m / 2, q);
          for (int64_t r0 : {cut, int64_t{0}}) {
            WeightView part = w.view;
            part.data = w.view.row(r0);
            part.rows = r0 == 0 ? cut : n - cut;
            part.scales += r0;
            vec::LinearQd8Rows(q, part, bias.data() + r0, parts.data() + i0 * ldy + r0, ldy);
          }
        }
        CHECK(std::memcmp(tiles.data(), parts.data(), tiles.size() * sizeof(float)) == 0);
        ++compared;
      }
    }
  }
  CHECK(compared == 36);
}

TEST_CASE(
    "vec::LinearQd8 takes int8 and int4 only; no rows write nothing; no columns give the bias",
    "[vectorized][linear]") {
  std::mt19937 rng(1);
  for (DType dtype : {DType::kF32, DType::kF16}) {
    Weights f = RandomWeights({"float", dtype, 0}, 4, 16, &rng);
    CHECK_FALSE(vec::LinearQd8Takes(f.view));
    CHECK_FALSE(vec::LinearQd8Runs(vec::Qd8Isa::kPortable, f.view));
  }
  Weights w = RandomWeights({"int4 blocks of 32", DType::kI4, 32}, 4, 64, &rng);
  CHECK(vec::LinearQd8Takes(w.view));
  float y = -7.0f;
  vec::LinearQd8(nullptr, 0, 64, w.view, nullptr, &y, 4);
  CHECK(y == -7.0f);
  Weights empty = RandomWeights({"int8 per row", DType::kI8, 0}, 3, 0, &rng);
  const float bias[3] = {1.5f, -2.0f, 0.25f};
  float x = 0.0f, out[3] = {-7.0f, -7.0f, -7.0f};
  vec::LinearQd8(&x, 1, 0, empty.view, bias, out, 3);
  CHECK(out[0] == 1.5f);
  CHECK(out[1] == -2.0f);
  CHECK(out[2] == 0.25f);
}

}  // namespace
}  // namespace tern
