// Every XNNPACK linear path against the reference kernel on the same weights (the file's
// encoding), odd shapes, one row and many, strides, with a tolerance per path derived from what
// the path rounds (stated at Tolerance below). Also the fallbacks (forced), the exact arena
// accounting of one operator, and calls XNNPACK cannot serve.
#include <catch2/catch_test_macros.hpp>

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

#include <pthreadpool.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "converter/quantize.h"
#include "runtime/kernels/ops.h"
#include "runtime/kernels/reference/linear.h"
#include "runtime/kernels/vectorized/linear.h"
#include "runtime/kernels/vectorized/linear_qd8.h"
#include "runtime/kernels/vectorized/linear_rows.h"
#include "runtime/kernels/vectorized/linear_sign.h"
#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/kernel_check.h"
#include "runtime/kernels/xnnpack/linear.h"
#include "runtime/kernels/xnnpack/weights_cache.h"
#include "tests/runtime/kernels/xnnpack/linear_fixtures.h"

namespace tern {
namespace {

using xnn::LinearPath;
using namespace xnn_test;  // NOLINT: the fixtures of linear_fixtures.h

#if defined(__aarch64__) || defined(__arm__)
constexpr bool kArm = true;
#else
constexpr bool kArm = false;
#endif

// A standalone operator: what Prepare does for one layer, in buffers of its own.
struct OneLinear {
  Aligned region{0}, scratch{0};
  ActivationBuffers activations;
  xnn::Context context;
  xnn::LinearKernel kernel;
  xnn::LinearChoice choice;
  size_t region_bytes = 0;
  size_t region_used = 0;
};

// A layer of m rows at its natural strides (its width in, its rows out).
xnn::LinearSpec DenseSpec(const WeightView& w, const float* bias, int64_t m) {
  xnn::LinearSpec spec;
  spec.weight = w;
  spec.bias = bias;
  spec.max_rows = m;
  spec.input_stride = w.cols;
  spec.output_stride = w.rows;
  return spec;
}

// pool: the context's thread pool (null: none).
Status Make(const xnn::LinearSpec& spec, OneLinear* one, pthreadpool* pool = nullptr) {
  xnn::LinearPlanner planner;
  TERN_RETURN_IF_ERROR(planner.Choose(spec, &one->choice));
  xnn::ContextNeeds needs;
  needs.Add(spec, one->choice.path);
  size_t context_bytes = 0;
  TERN_RETURN_IF_ERROR(xnn::MeasureContext(needs, &context_bytes));
  one->region_bytes = one->choice.xnn_bytes + context_bytes;
  one->region = Aligned(one->region_bytes);
  one->scratch = Aligned(one->choice.scratch_bytes);
  xnn::Context& c = one->context;
  one->activations.Bind(needs, pool, &c);
  xnn::ArenaScope scope(one->region.data(), one->region_bytes);
  TERN_RETURN_IF_ERROR(xnn::CreateContext(needs, &c));
  TERN_RETURN_IF_ERROR(xnn::CreateLinear(spec, one->choice, &c, one->scratch.data(), &one->kernel));
  one->region_used = scope.used();
  return Status::Ok();
}

// Tolerance of one output y[i][j] against the reference, from what the path rounds. With
// S = sum_c |x_ic| |W_jc| + |b_j| and u = 2^-24 (float's unit roundoff):
//  - every path: two float summation orders of k terms differ by at most 2 k u S;
//  - f16 (fully_connected_nc_f16): x and b rounded to f16 (2^-11 S) and y rounded to f16
//    (2^-11 S), plus, on ARM where XNNPACK accumulates in f16 arithmetic, k 2^-11 S;
//  - qd8 (activations quantized per row, asymmetric int8): each x_ic moves by at most one
//    quantization step q_i = (max(x_i, 0) - min(x_i, 0)) / 255, so y moves by q_i sum_c |W_jc|;
//  - qb4w: block scales rounded to bf16: 2^-9 S;
//  - f32_f16 (f16 weights widened to f32): XNNPACK takes its bias in f16: 2^-11 |b|.
// The other f32-compute fallbacks use the file's weights exactly: only the summation term.
double Tolerance(LinearPath path, int64_t k, double s, double step, double w_abs_sum,
                 double b_abs) {
  const double u = std::ldexp(1.0, -24);
  double tol = 2.0 * static_cast<double>(k) * u * s + 1e-6;
  switch (path) {
    case LinearPath::kF16:
      tol += 2.0 * std::ldexp(1.0, -11) * s;
#if defined(__aarch64__) || defined(__arm__)
      tol += static_cast<double>(k) * std::ldexp(1.0, -11) * s;
#endif
      break;
    case LinearPath::kQd8Qc8w:
    case LinearPath::kQd8Qc4w:
      tol += step * w_abs_sum;
      break;
    case LinearPath::kQd8Qb4w:
      tol += step * w_abs_sum + std::ldexp(1.0, -9) * s;
      break;
    case LinearPath::kF16AsF32:
      tol += std::ldexp(1.0, -11) * b_abs;
      break;
    default:
      break;
  }
  return tol;
}

struct Case {
  int64_t n, k, group;
};

// Runs `path`'s operator (forcing the others off) on m rows and compares with ref::Linear.
void CheckPath(DType dtype, const Case& c, LinearPath expect_path, uint32_t unsupported, bool bias,
               int64_t m, int64_t extra_in_stride, int64_t extra_out_stride, uint32_t seed) {
  xnn::SetUnsupportedPathsForTesting(unsupported);
  const Weight w = MakeWeight(c.n, c.k, dtype, c.group, seed, seed % 3 == 0);
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> b(static_cast<size_t>(c.n));
  for (auto& v : b) v = dist(rng);
  const int64_t ldx = c.k + extra_in_stride;
  const int64_t ldy = c.n + extra_out_stride;
  std::vector<float> x(static_cast<size_t>(m * ldx) + kPad);
  for (auto& v : x) v = dist(rng);
  if (m > 1) {  // an all-positive row and a constant row: edge cases of per-row quantization
    for (int64_t i = 0; i < c.k; ++i) x[ldx + i] = std::fabs(x[ldx + i]);
  }
  if (m > 2) {
    for (int64_t i = 0; i < c.k; ++i) x[2 * ldx + i] = 0.75f;
  }

  xnn::LinearSpec spec;
  spec.weight = w.view();
  spec.bias = bias ? b.data() : nullptr;
  spec.max_rows = m;
  spec.input_stride = ldx;
  spec.output_stride = ldy;
  OneLinear one;
  const Status made = Make(spec, &one);
  xnn::SetUnsupportedPathsForTesting(0);
  INFO(DTypeName(dtype) << " n=" << c.n << " k=" << c.k << " group=" << c.group << " m=" << m
                        << " bias=" << bias << " ldx=" << ldx << " ldy=" << ldy << ": "
                        << made.message());
  REQUIRE(made.ok());
  REQUIRE(one.choice.path == expect_path);
  INFO("path " << xnn::LinearPathName(one.choice.path));
  // The dry run measured exactly what creating took.
  CHECK(one.region_used == one.region_bytes);

  std::vector<float> got(static_cast<size_t>(m * ldy) + kPad, -7.0f), want(got);
  ref::Linear(x.data(), m, ldx, spec.weight, spec.bias, want.data(), ldy);
  // Which tolerance applies: the path's, or with no operator that of the loops ops::Linear runs.
  LinearPath tolerance_path = one.choice.path;
  if (expect_path == LinearPath::kReference) {
    // No operator: ops::Linear runs the vectorizable loops: for int8 / int4 weights the integer
    // ones (vectorized/linear_qd8.h), which quantize x as the qd8 paths do; else the float ones
    // (vectorized/linear.h), which give the reference's outputs up to the order of the sums
    // (both tested further in tests/runtime/kernels/vectorized/).
    CHECK(one.kernel.op == nullptr);
    ops::Linear(x.data(), m, ldx, spec.weight, spec.bias, &one.kernel, got.data(), ldy);
    std::vector<float> loops(got.size(), -7.0f);
    const bool qd8 = vec::LinearQd8Takes(spec.weight);
    if (qd8) {
      vec::LinearQd8(x.data(), m, ldx, spec.weight, spec.bias, loops.data(), ldy);
    } else {
      vec::Linear(x.data(), m, ldx, spec.weight, spec.bias, loops.data(), ldy);
    }
    CHECK(got == loops);
    CHECK(one.context.fallback_calls == 0);
    if (!qd8) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          double size = bias ? std::fabs(b[j]) : 0.0;
          for (int64_t cc = 0; cc < c.k; ++cc) {
            size += std::fabs(x[i * ldx + cc] * WeightAt(spec.weight, j, cc));
          }
          CHECK(std::fabs(got[i * ldy + j] - want[i * ldy + j]) <= 2e-6 * size + 1e-30);
        }
      }
      return;
    }
    tolerance_path = LinearPath::kQd8Qc8w;  // quantized x, block scales in float
  } else {
    REQUIRE(xnn::RunLinear(one.kernel, x.data(), m, ldx, got.data(), ldy));
    CHECK(one.context.fallback_calls == 0);
  }

  double worst_ratio = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x.data() + i * ldx;
    float lo = 0.0f, hi = 0.0f;
    for (int64_t cc = 0; cc < c.k; ++cc) {
      lo = std::min(lo, xi[cc]);
      hi = std::max(hi, xi[cc]);
    }
    const double step = (static_cast<double>(hi) - lo) / 255.0;
    for (int64_t j = 0; j < c.n; ++j) {
      double s = bias ? std::fabs(b[j]) : 0.0, w_abs = 0.0;
      for (int64_t cc = 0; cc < c.k; ++cc) {
        const double wv = std::fabs(w.values[j * c.k + cc]);
        s += std::fabs(xi[cc]) * wv;
        w_abs += wv;
      }
      const double tol =
          Tolerance(tolerance_path, c.k, s, step, w_abs, bias ? std::fabs(b[j]) : 0.0);
      const double err = std::fabs(static_cast<double>(got[i * ldy + j]) - want[i * ldy + j]);
      worst_ratio = std::max(worst_ratio, err / tol);
    }
    // Columns between n and the stride are not written.
    for (int64_t j = c.n; j < ldy; ++j) CHECK(got[i * ldy + j] == -7.0f);
  }
  INFO("worst error / tolerance = " << worst_ratio);
  CHECK(worst_ratio <= 1.0);
}

const Case kShapes[] = {{1, 1, 0}, {7, 13, 0}, {33, 17, 0}, {64, 96, 0}, {130, 257, 0}};

// The first path of `chain` whose XNNPACK kernels compute right on this CPU (kernel_check.h):
// the one the planner takes when the paths before it are switched off. kReference: none.
LinearPath FirstTrusted(std::initializer_list<LinearPath> chain) {
  for (const LinearPath p : chain) {
    if (xnn::PathTrusted(p)) return p;
  }
  return LinearPath::kReference;
}

TEST_CASE("xnnpack f32 linear matches the reference", "[xnnpack][linear]") {
  uint32_t seed = 1;
  for (const Case& c : kShapes) {
    for (int64_t m : {1, 3, 17}) {
      CheckPath(DType::kF32, c, LinearPath::kF32, 0, true, m, 0, 0, seed++);
      CheckPath(DType::kF32, c, LinearPath::kF32, 0, false, m, 5, 3, seed++);
    }
  }
}

TEST_CASE("xnnpack f16 linear matches the reference (native and f32-compute fallback)",
          "[xnnpack][linear]") {
  uint32_t seed = 100;
  for (const Case& c : kShapes) {
    for (int64_t m : {1, 4, 19}) {
      // Native f16 where the CPU has it; otherwise the f32-compute fallback, unforced.
      const LinearPath native = CpuHasF16Gemm()
                                    ? FirstTrusted({LinearPath::kF16, LinearPath::kF16AsF32})
                                    : LinearPath::kF16AsF32;
      CheckPath(DType::kF16, c, native, 0, true, m, 3, 2, seed++);
      CheckPath(DType::kF16, c, LinearPath::kF16AsF32, xnn::PathBit(LinearPath::kF16), true, m, 0,
                0, seed++);
      CheckPath(DType::kF16, c, LinearPath::kF16AsF32, xnn::PathBit(LinearPath::kF16), false, m, 2,
                1, seed++);
    }
  }
}

TEST_CASE("xnnpack int8 linear matches the reference (qd8 and f32-activation fallback)",
          "[xnnpack][linear]") {
  uint32_t seed = 200;
  for (const Case& c : kShapes) {
    for (int64_t m : {1, 2, 5, 33}) {
      const LinearPath best = FirstTrusted({LinearPath::kQd8Qc8w, LinearPath::kF32Qc8w});
      CheckPath(DType::kI8, c, best, 0, true, m, 4, 0, seed++);
      CheckPath(DType::kI8, c, best, 0, false, m, 0, 7, seed++);
      CheckPath(DType::kI8, c, LinearPath::kF32Qc8w, xnn::PathBit(LinearPath::kQd8Qc8w), true, m, 0,
                0, seed++);
    }
  }
}

TEST_CASE("xnnpack int4 per-row linear matches the reference (qd8 and f32-activation fallback)",
          "[xnnpack][linear]") {
  uint32_t seed = 300;
  for (const Case& c : kShapes) {
    for (int64_t m : {1, 3, 18}) {
      // On ARM, odd K skips XNNPACK's f32_qc4w (wrong there, see linear.cc F32Qc4wTakes). Where
      // XNNPACK's qd8 kernel is wrong, tern's integer loops run its math, forced or not.
      const LinearPath fallback = (kArm && c.k % 2) || !xnn::PathTrusted(LinearPath::kQd8Qc4w)
                                      ? LinearPath::kReference
                                      : FirstTrusted({LinearPath::kF32Qc4w});
      CheckPath(DType::kI4, c,
                xnn::PathTrusted(LinearPath::kQd8Qc4w) ? LinearPath::kQd8Qc4w : fallback, 0, true,
                m, 1, 0, seed++);
      CheckPath(DType::kI4, c, fallback, xnn::PathBit(LinearPath::kQd8Qc4w), false, m, 0, 2,
                seed++);
    }
  }
}

TEST_CASE("xnnpack int4 block-scaled linear matches the reference", "[xnnpack][linear]") {
  uint32_t seed = 400;
  const Case blocks[] = {{1, 64, 32},  {7, 96, 32},    {33, 64, 32},
                         {40, 64, 32}, {130, 256, 64}, {5, 256, 128}};
  // Batch sizes around XNNPACK's 14-row tiles: 2, 3, 15, 17 and 31 were wrong on AVX512-VNNI
  // CPUs, which therefore run the vectorizable loops (kernel_check.h).
  const LinearPath path = FirstTrusted({LinearPath::kQd8Qb4w});
  for (const Case& c : blocks) {
    for (int64_t m : {1, 2, 3, 4, 14, 15, 17, 21, 31}) {
      const bool bias = seed % 2 == 0;
      CheckPath(DType::kI4, c, path, 0, bias, m, 3, 1, seed++);
    }
  }
}

TEST_CASE("layers XNNPACK cannot run take the vectorizable loops", "[xnnpack][linear]") {
  // Blocks XNNPACK does not take (not a multiple of 32, or not dividing the row), and every
  // path of a dtype switched off, as on a CPU that lacks it.
  CheckPath(DType::kF32, {9, 24, 0}, LinearPath::kReference, xnn::PathBit(LinearPath::kF32), true,
            2, 0, 0, 1);
  const Weight w8 = MakeWeight(9, 24, DType::kI4, 8, 5, false);
  xnn::LinearSpec spec;
  spec.weight = w8.view();
  spec.max_rows = 2;
  spec.input_stride = 24;
  spec.output_stride = 9;
  xnn::LinearPlanner planner;
  xnn::LinearChoice choice;
  REQUIRE(planner.Choose(spec, &choice).ok());
  CHECK(choice.path == LinearPath::kReference);
  CHECK(choice.xnn_bytes == 0);
  const Weight w40 = MakeWeight(9, 80, DType::kI4, 64, 5, false);  // 64 does not divide 80
  spec.weight = w40.view();
  spec.input_stride = 80;
  REQUIRE(planner.Choose(spec, &choice).ok());
  CHECK(choice.path == LinearPath::kReference);
}

// xnn::LinearSpec::copy_weight (what sessions set): a layer without an operator gets its weight's
// bytes copied where the choice planned them, in the arena scope (exactly its footprint) or as
// one entry of shared weights, which a later session finds again, and whose entry for another
// layer it refuses by name.
TEST_CASE("a layer without an operator reads a copy of its weight, arena or shared",
          "[xnnpack][linear]") {
  const Weight w = MakeWeight(37, 64, DType::kI4, 16, 7, false);  // blocks of 16: no operator
  xnn::LinearSpec spec = DenseSpec(w.view(), nullptr, 2);
  spec.copy_weight = true;
  const size_t bytes = w.encoded.data.size();
  OneLinear one;
  REQUIRE(Make(spec, &one).ok());
  REQUIRE(one.choice.path == LinearPath::kReference);
  CHECK(one.choice.copy_bytes == bytes);
  CHECK(one.region_used == one.region_bytes);  // the copy's footprint, as measured
  const uint8_t* copy = static_cast<const uint8_t*>(one.kernel.weight_copy);
  REQUIRE(copy != nullptr);
  CHECK(copy >= one.region.data());
  CHECK(copy + bytes <= one.region.data() + one.region_bytes);
  CHECK(std::memcmp(copy, w.encoded.data.data(), bytes) == 0);

  // No arena scope to copy into (the dry run planned one): refused, nothing half made.
  xnn::LinearKernel stray;
  Status s = xnn::CreateLinear(spec, one.choice, &one.context, nullptr, &stray);
  CHECK(s.code() == StatusCode::kArenaTooSmall);
  CHECK(std::string(s.message()) ==
        "vectorized loops [37, 64]: no room for the weight's copy (the dry run planned it)");
  CHECK(stray.weight_copy == nullptr);

  // Shared: the first session's cache copies it in, a later one's finds the same bytes.
  std::vector<uint8_t> memory(xnn::SharedRegion::RequiredBytes(1, one.choice.packed_bytes));
  xnn::SharedRegion region;
  REQUIRE(region.Bind(memory.data(), memory.size()).ok());
  REQUIRE(region.Claim(w.encoded.data.data(), 1));
  xnn::WeightsCache pack;
  pack.Start(xnn::WeightsCache::Mode::kPack, &region);
  xnn::LinearKernel packed;
  REQUIRE(xnn::CreateLinear(spec, one.choice, &one.context, nullptr, &packed, &pack, 0).ok());
  region.Finish();
  const uint8_t* shared = static_cast<const uint8_t*>(packed.weight_copy);
  REQUIRE(shared != nullptr);
  CHECK(shared >= memory.data());
  CHECK(shared + bytes <= memory.data() + memory.size());
  CHECK(std::memcmp(shared, w.encoded.data.data(), bytes) == 0);
  xnn::WeightsCache reuse;
  reuse.Start(xnn::WeightsCache::Mode::kReuse, &region);
  xnn::LinearKernel again;
  REQUIRE(xnn::CreateLinear(spec, one.choice, &one.context, nullptr, &again, &reuse, 0).ok());
  CHECK(again.weight_copy == packed.weight_copy);

  // Another layer where the region holds this one: refused by name.
  const Weight other = MakeWeight(36, 64, DType::kI4, 16, 8, false);
  xnn::LinearSpec other_spec = DenseSpec(other.view(), nullptr, 2);
  other_spec.copy_weight = true;
  xnn::LinearPlanner planner;
  xnn::LinearChoice other_choice;
  REQUIRE(planner.Choose(other_spec, &other_choice).ok());
  xnn::WeightsCache mismatched;
  mismatched.Start(xnn::WeightsCache::Mode::kReuse, &region);
  xnn::LinearKernel refused;
  s = xnn::CreateLinear(other_spec, other_choice, &one.context, nullptr, &refused, &mismatched, 0);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(std::string(s.message()) ==
        "vectorized loops [36, 64]: the shared weights hold no packed layer like this one (they "
        "were packed for another model, for other kernels, or for sessions of another thread "
        "count)");
  CHECK(refused.weight_copy == nullptr);
}

// xnn::LinearSpec::prefer_loops (what sessions set): on CPUs where tern's AVX2 sign loops beat
// XNNPACK's int8 GEMM (vec::SignPanelsBeatXnnpack) an int8 per-row layer gets no operator but a
// copy packed for them, in the arena or as one entry of shared weights (a later session finds
// the same entry), and computes XNNPACK's operator's bits at every row count; a weight holding
// a -128, which the sign trick cannot take, keeps its rows and the other loops, with the same
// bits. Elsewhere the layer keeps its operator.
TEST_CASE("int8 and int4 layers the sign loops beat XNNPACK on are packed for them, with its bits",
          "[xnnpack][linear]") {
  for (const DType dtype : {DType::kI8, DType::kI4}) {
    INFO(DTypeName(dtype));
    const LinearPath qd8 = dtype == DType::kI8 ? LinearPath::kQd8Qc8w : LinearPath::kQd8Qc4w;
    if (!xnn::PathTrusted(qd8)) continue;  // no operator to compare with on this CPU
    const int64_t n = 48, k = 64, max_rows = 17;
    Weight w = MakeWeight(n, k, dtype, 0, 11, false);
    std::vector<float> bias(static_cast<size_t>(n));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.01f * static_cast<float>(i) - 0.2f;
    xnn::LinearSpec spec = DenseSpec(w.view(), bias.data(), max_rows);
    spec.copy_weight = true;
    OneLinear operator_layer;  // XNNPACK's, as before prefer_loops
    REQUIRE(Make(spec, &operator_layer).ok());
    REQUIRE(operator_layer.choice.path == qd8);
    spec.prefer_loops = true;
    OneLinear loops;
    REQUIRE(Make(spec, &loops).ok());
    if (!vec::SignPanelsBeatXnnpack(w.view())) {
      CHECK(loops.choice.path == qd8);
      SUCCEED("this CPU keeps XNNPACK's GEMMs");
      continue;
    }
    REQUIRE(loops.choice.path == LinearPath::kReference);
    CHECK(loops.choice.copy_bytes == vec::SignPanelsBytes(w.view()));
    CHECK(loops.region_used == loops.region_bytes);
    CHECK(loops.kernel.weight_copy == nullptr);
    const WeightView& panels = loops.kernel.panel_weight;
    REQUIRE(panels.data != nullptr);
    CHECK(panels.layout == WeightLayout::kSignPanels);
    const auto* packed = static_cast<const uint8_t*>(panels.data);
    CHECK(packed >= loops.region.data());
    CHECK(packed + loops.choice.copy_bytes <= loops.region.data() + loops.region_bytes);
    std::vector<uint8_t> want_bytes(vec::SignPanelsBytes(w.view()));
    vec::PackSignPanels(w.view(), want_bytes.data());
    CHECK(std::memcmp(packed, want_bytes.data(), want_bytes.size()) == 0);

    // The same bits as the operator, at every row count up to the planned one.
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    auto same_as_operator = [&](OneLinear& layer, const WeightView& view) {
      int same = 0;
      for (int64_t m : {1, 2, 3, 4, 7, 16, 17}) {
        std::vector<float> x(static_cast<size_t>(m * k));
        for (float& v : x) v = dist(rng);
        std::vector<float> got(static_cast<size_t>(m * n), -7.0f), want(got);
        ops::Linear(x.data(), m, k, view, bias.data(), &layer.kernel, got.data(), n);
        REQUIRE(xnn::RunLinear(operator_layer.kernel, x.data(), m, k, want.data(), n));
        INFO("m " << m);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        ++same;
      }
      return same;
    };
    CHECK(same_as_operator(loops, w.view()) == 7);

    // Shared: the packing session's cache packs it, a later one's finds the same entry.
    std::vector<uint8_t> memory(xnn::SharedRegion::RequiredBytes(1, loops.choice.packed_bytes));
    xnn::SharedRegion region;
    REQUIRE(region.Bind(memory.data(), memory.size()).ok());
    REQUIRE(region.Claim(w.encoded.data.data(), 1));
    xnn::WeightsCache pack;
    pack.Start(xnn::WeightsCache::Mode::kPack, &region);
    xnn::LinearKernel first;
    REQUIRE(xnn::CreateLinear(spec, loops.choice, &loops.context, nullptr, &first, &pack, 0).ok());
    region.Finish();
    REQUIRE(first.panel_weight.data != nullptr);
    CHECK(std::memcmp(first.panel_weight.data, want_bytes.data(), want_bytes.size()) == 0);
    xnn::WeightsCache reuse;
    reuse.Start(xnn::WeightsCache::Mode::kReuse, &region);
    xnn::LinearKernel again;
    REQUIRE(xnn::CreateLinear(spec, loops.choice, &loops.context, nullptr, &again, &reuse, 0).ok());
    CHECK(again.panel_weight.data == first.panel_weight.data);
    CHECK(again.panel_weight.row_sums == first.panel_weight.row_sums);

    if (dtype == DType::kI4) continue;  // every int4 value packs
    // A -128 (the converter writes +-127; a file may hold one): the rows, copied, and the same
    // bits on the other loops.
    w.encoded.data[static_cast<size_t>(5 * k + 3)] = 0x80;
    spec.weight = w.view();
    spec.prefer_loops = false;
    REQUIRE(Make(spec, &operator_layer).ok());
    spec.prefer_loops = true;
    OneLinear rows;
    REQUIRE(Make(spec, &rows).ok());
    REQUIRE(rows.choice.path == LinearPath::kReference);
    CHECK(rows.kernel.panel_weight.data == nullptr);
    REQUIRE(rows.kernel.weight_copy != nullptr);
    CHECK(std::memcmp(rows.kernel.weight_copy, w.encoded.data.data(), w.encoded.data.size()) == 0);
    WeightView copied = w.view();
    copied.data = rows.kernel.weight_copy;
    CHECK(same_as_operator(rows, copied) == 7);
  }
}

TEST_CASE("calls outside what prepare planned are answered by the reference kernel",
          "[xnnpack][linear]") {
  const Weight w = MakeWeight(12, 20, DType::kF32, 0, 9, false);
  xnn::LinearSpec spec;
  spec.weight = w.view();
  spec.max_rows = 4;
  spec.input_stride = 20;
  spec.output_stride = 12;
  OneLinear one;
  REQUIRE(Make(spec, &one).ok());
  std::vector<float> x(64 + 20 * 8 + kPad, 0.5f), got(16 * 8 + kPad), want(got);
  // A different output stride than the operator was created for: XNNPACK declines, ops::Linear
  // answers with the reference, and the context counts it.
  CHECK_FALSE(xnn::RunLinear(one.kernel, x.data(), 2, 20, got.data(), 16));
  CHECK(one.context.fallback_calls == 1);
  ops::Linear(x.data(), 2, 20, spec.weight, nullptr, &one.kernel, got.data(), 16);
  ref::Linear(x.data(), 2, 20, spec.weight, nullptr, want.data(), 16);
  for (int i = 0; i < 2 * 16; ++i) CHECK(got[i] == want[i]);

  // int8: more rows than the quantization scratch holds.
  const Weight w8 = MakeWeight(12, 20, DType::kI8, 0, 9, false);
  spec.weight = w8.view();
  OneLinear one8;
  REQUIRE(Make(spec, &one8).ok());
  REQUIRE(one8.choice.path == LinearPath::kQd8Qc8w);
  CHECK(xnn::RunLinear(one8.kernel, x.data(), 4, 20, got.data(), 12));
  CHECK_FALSE(xnn::RunLinear(one8.kernel, x.data(), 8, 20, got.data(), 12));
  // Row count changes back and forth (reshape per change) keep giving the reference's answer.
  for (int64_t m : {1, 4, 2, 4, 1}) {
    REQUIRE(xnn::RunLinear(one8.kernel, x.data(), m, 20, got.data(), 12));
    ref::Linear(x.data(), m, 20, spec.weight, nullptr, want.data(), 12);
    for (int64_t i = 0; i < m * 12; ++i) CHECK(std::fabs(got[i] - want[i]) < 0.02f);
  }
}

// Where XNNPACK's qd8 kernel for int4 (or int8) per row is wrong on the CPU (kernel_check.h),
// tern's integer loops run the layer; they must give what the kernel gives where it is right,
// bit for bit, so that a model translates the same on every CPU: checked against every qd8
// path this CPU trusts, at one row and several, widths of one chunk of the loops and several.
TEST_CASE("the integer loops give XNNPACK's qd8 bits for one scale per row", "[xnnpack][linear]") {
  uint32_t seed = 900;
  int compared = 0;
  for (DType dtype : {DType::kI8, DType::kI4}) {
    const LinearPath qd8 = dtype == DType::kI8 ? LinearPath::kQd8Qc8w : LinearPath::kQd8Qc4w;
    if (!xnn::PathTrusted(qd8)) continue;
    for (const Case& c : {Case{40, 96, 0}, Case{33, 512, 0}, Case{70, 2048, 0}}) {
      const Weight w = MakeWeight(c.n, c.k, dtype, 0, seed, false);
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
      std::vector<float> b(static_cast<size_t>(c.n));
      for (auto& v : b) v = dist(rng);
      for (int64_t m : {1, 5}) {
        std::vector<float> x(static_cast<size_t>(m * c.k) + kPad);
        for (auto& v : x) v = dist(rng);
        const xnn::LinearSpec spec = DenseSpec(w.view(), b.data(), m);
        OneLinear one;
        INFO(DTypeName(dtype) << " n=" << c.n << " k=" << c.k << " m=" << m);
        REQUIRE(Make(spec, &one).ok());
        REQUIRE(one.choice.path == qd8);
        std::vector<float> xnn_y(static_cast<size_t>(m * c.n)), loops(xnn_y.size());
        REQUIRE(xnn::RunLinear(one.kernel, x.data(), m, c.k, xnn_y.data(), c.n));
        vec::LinearQd8(x.data(), m, c.k, spec.weight, spec.bias, loops.data(), c.n);
        int mismatches = 0;
        for (size_t i = 0; i < loops.size(); ++i) {
          // ARM's several-row assembly kernels fold the scales in another order (see below).
          const bool same =
              std::memcmp(&loops[i], &xnn_y[i], sizeof(float)) == 0 ||
              (kArm && m > 1 &&
               std::fabs(loops[i] - xnn_y[i]) <= 4e-7f * std::fabs(xnn_y[i]) + 1e-30f);
          mismatches += same ? 0 : 1;
        }
        CHECK(mismatches == 0);
        ++compared;
      }
    }
  }
  // int8's qd8 kernel is right on every CPU tern has run on: the test is not vacuous.
  CHECK(compared >= 6);
}

// The vocabulary shortlist's row kernel (kernels/vectorized/linear_rows.h) must give a candidate
// the logit the full projection gives it, bit for bit, or the shortlist changes translations
// whose argmax it holds: the qd8 emulation against XNNPACK's qd8 operators, rows listed in any
// order, with and without bias, odd K (int4's padding nibble), and rows whose quantization is
// an edge case (all positive, constant, all zero, one huge value).
TEST_CASE("the shortlist's qd8 row kernel gives XNNPACK's qd8 logits to the bit",
          "[xnnpack][linear][shortlist]") {
  uint32_t seed = 700;
  // K 100 and 257: tails after the AVX2 kernels' 16 / 32 columns (even and odd).
  const Case shapes[] = {{7, 13, 0},   {33, 17, 0},   {64, 96, 0},
                         {40, 100, 0}, {130, 257, 0}, {300, 512, 0}};
  for (DType dtype : {DType::kI8, DType::kI4}) {
    for (const Case& c : shapes) {
      for (bool bias : {false, true}) {
        const Weight w = MakeWeight(c.n, c.k, dtype, 0, seed, seed % 3 == 0);
        std::mt19937 rng(seed + 1);
        ++seed;
        std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
        std::vector<float> b(static_cast<size_t>(c.n));
        for (auto& v : b) v = dist(rng);
        // Six rows in one call, and the first row alone (XNNPACK picks its kernels by rows).
        const int64_t m = 6;
        std::vector<float> x(static_cast<size_t>(m * c.k) + kPad);
        for (auto& v : x) v = dist(rng);
        for (int64_t i = 0; i < c.k; ++i) {
          x[c.k + i] = std::fabs(x[c.k + i]);  // all positive
          x[2 * c.k + i] = -0.375f;            // constant
          x[3 * c.k + i] = 0.0f;               // all zero
        }
        x[4 * c.k + c.k / 2] = 1e4f;  // one value dominates the range

        const xnn::LinearSpec spec = DenseSpec(w.view(), bias ? b.data() : nullptr, m);
        OneLinear one;
        INFO(DTypeName(dtype) << " n=" << c.n << " k=" << c.k << " bias=" << bias);
        REQUIRE(Make(spec, &one).ok());
        const LinearPath qd8 = dtype == DType::kI8 ? LinearPath::kQd8Qc8w : LinearPath::kQd8Qc4w;
        // Where XNNPACK's kernel is wrong on this CPU (kernel_check.h) there is nothing to match.
        if (!xnn::PathTrusted(qd8)) continue;
        REQUIRE(one.choice.path == qd8);
        REQUIRE(ops::QuantizesRowsToInt8(&one.kernel));
        REQUIRE(vec::Qd8Rows(spec.weight));
        std::vector<float> full(static_cast<size_t>(m * c.n) + kPad);
        REQUIRE(xnn::RunLinear(one.kernel, x.data(), m, c.k, full.data(), c.n));
        std::vector<float> alone(static_cast<size_t>(c.n) + kPad);
        REQUIRE(xnn::RunLinear(one.kernel, x.data(), 1, c.k, alone.data(), c.n));

        std::vector<int32_t> rows(static_cast<size_t>(c.n));
        for (int64_t j = 0; j < c.n; ++j) rows[j] = static_cast<int32_t>(c.n - 1 - j);
        std::shuffle(rows.begin(), rows.end(), rng);
        std::vector<int16_t> xq(static_cast<size_t>(c.k));
        std::vector<float> y(static_cast<size_t>(c.n));
        int mismatches = 0;
        for (int64_t i = 0; i < m; ++i) {
          const vec::Qd8Row p = vec::QuantizeQd8(x.data() + i * c.k, c.k, xq.data());
          vec::LinearRowsQd8(xq.data(), p, spec.weight, spec.bias, rows.data(), c.n, y.data());
          for (int64_t j = 0; j < c.n; ++j) {
            const float want = full[i * c.n + rows[j]];
            if (i == 0) CHECK(std::memcmp(&y[j], &alone[rows[j]], sizeof(float)) == 0);
            // On ARM, XNNPACK's multi-row assembly kernels for dot-product CPUs without i8mm
            // fold the two scales in another order (linear_rows.cc): a several-row call then
            // equals the row kernel to rounding only. qemu's CPUs (max, cortex-a72) do not run
            // those kernels.
            const bool same = std::memcmp(&y[j], &want, sizeof(float)) == 0 ||
                              (kArm && std::fabs(y[j] - want) <= 4e-7f * std::fabs(want) + 1e-30f);
            if (!same && ++mismatches <= 3) {
              UNSCOPED_INFO("row " << i << " column " << rows[j] << ": " << y[j] << " vs XNNPACK "
                                   << want);
            }
          }
        }
        CHECK(mismatches == 0);
      }
    }
  }
}

TEST_CASE("layers are cut into one operator per thread only when every part keeps 32 rows",
          "[xnnpack][linear]") {
  CHECK(xnn::LargeLayerParts(1) == 1);
  CHECK(xnn::LargeLayerParts(2) == 2);
  CHECK(xnn::LargeLayerParts(xnn::kMaxParts) == xnn::kMaxParts);
  CHECK(xnn::LargeLayerParts(xnn::kMaxParts + 1) == 1);
  CHECK(xnn::CutParts(1, 4096) == 1);
  CHECK(xnn::CutParts(2, 63) == 1);
  CHECK(xnn::CutParts(2, 64) == 2);
  CHECK(xnn::CutParts(3, 95) == 1);
  CHECK(xnn::CutParts(3, 96) == 3);
  CHECK(xnn::CutParts(xnn::kMaxParts, 32000) == xnn::kMaxParts);
  CHECK(xnn::CutParts(xnn::kMaxParts + 1, 32000) == 1);  // XNNPACK's tiling spreads it instead
  for (int64_t n : {64, 96, 130, 300, 512, 32000}) {
    for (int parts = 2; parts <= xnn::kMaxParts; ++parts) {
      if (xnn::CutParts(parts, n) != parts) continue;
      INFO("n " << n << " parts " << parts);
      CHECK(xnn::PartBegin(n, parts, 0) == 0);
      CHECK(xnn::PartBegin(n, parts, parts) == n);
      for (int p = 1; p < parts; ++p) {
        CHECK(xnn::PartBegin(n, parts, p) % xnn::kPartAlign == 0);
        CHECK(xnn::PartBegin(n, parts, p) > xnn::PartBegin(n, parts, p - 1));
      }
      CHECK(xnn::PartBegin(n, parts, parts - 1) < n);
    }
  }
  // A cut the planner cannot make is refused, not planned.
  const Weight w = MakeWeight(40, 16, DType::kF32, 0, 3, false);
  xnn::LinearSpec spec;
  spec.weight = w.view();
  spec.input_stride = 16;
  spec.output_stride = 40;
  spec.parts = 2;
  xnn::LinearPlanner planner;
  xnn::LinearChoice choice;
  const Status refused = planner.Choose(spec, &choice);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(refused.message()) == "linear layer [40, 16]: cannot cut into 2 parts");
}

TEST_CASE("a layer cut into one operator per thread gives the whole layer's bits",
          "[xnnpack][linear]") {
  // n x k, parts: cuts at 32-row boundaries that are not XNNPACK's tiles of 64 (130 into 3:
  // rows 0-31, 32-95, 96-129), every part with a bias and scales of its own rows.
  struct Cut {
    int64_t n, k;
    int parts;
  };
  const Cut cuts[] = {{64, 96, 2}, {130, 256, 2}, {130, 256, 3}, {300, 512, 4}};
  uint32_t seed = 900;
  for (const PathCase& pc : CutPaths()) {
    for (const Cut& cut : cuts) {
      for (int64_t m : {1, 5, 70}) {
        const Weight w = MakeWeight(cut.n, cut.k, pc.dtype, pc.group, seed, seed % 2 == 0);
        std::mt19937 rng(seed++);
        std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
        std::vector<float> b(static_cast<size_t>(cut.n));
        for (auto& v : b) v = dist(rng);
        const int64_t ldx = cut.k + 3, ldy = cut.n + 2;
        std::vector<float> x(static_cast<size_t>(m * ldx) + kPad);
        for (auto& v : x) v = dist(rng);
        xnn::LinearSpec spec;
        spec.weight = w.view();
        spec.bias = b.data();
        spec.max_rows = m;
        spec.input_stride = ldx;
        spec.output_stride = ldy;
        INFO(xnn::LinearPathName(pc.path)
             << " n=" << cut.n << " k=" << cut.k << " parts " << cut.parts << " m=" << m);
        xnn::SetUnsupportedPathsForTesting(pc.unsupported);
        OneLinear whole, parts;
        const Status made_whole = Make(spec, &whole);
        spec.parts = cut.parts;
        const Status made_parts = Make(spec, &parts);
        xnn::SetUnsupportedPathsForTesting(0);
        REQUIRE(made_whole.ok());
        REQUIRE(made_parts.ok());
        REQUIRE(whole.choice.path == pc.path);
        REQUIRE(parts.choice.path == pc.path);
        CHECK(parts.choice.parts == cut.parts);
        CHECK(parts.kernel.parts == cut.parts);
        CHECK(parts.region_used == parts.region_bytes);  // measured exactly, part by part
        // Each part packs only its rows: the packed bytes grow by at most a tile of 32 rows a
        // part (padding), not by another copy.
        REQUIRE(parts.choice.shareable);
        CHECK(parts.choice.packed_bytes <=
              whole.choice.packed_bytes +
                  static_cast<size_t>(cut.parts) *
                      (whole.choice.packed_bytes / static_cast<size_t>(cut.n) + 1) * 32);
        std::vector<float> want(static_cast<size_t>(m * ldy) + kPad, -7.0f), got(want);
        REQUIRE(xnn::RunLinear(whole.kernel, x.data(), m, ldx, want.data(), ldy));
        REQUIRE(xnn::RunLinear(parts.kernel, x.data(), m, ldx, got.data(), ldy));
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        CHECK(parts.context.fallback_calls == 0);
      }
    }
  }
}

TEST_CASE("a cut layer on a thread pool: one part per task, the same bits", "[xnnpack][linear]") {
  // Every path, parts as pool tasks (f16 writes its parts' columns of the context's f16 output
  // concurrently); layers large enough (a call over the cut layers' 5 us on one thread) for the
  // governor to try the pool on the second call (pool_governor.h). 17 rows; int8 also one row
  // (a decode step) and 70 (the activations converted on the pool).
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  uint32_t seed = 950;
  const int64_t n = 2048, k = 1024;
  for (const PathCase& pc : CutPaths()) {
    const bool int8 = pc.path == LinearPath::kQd8Qc8w;
    for (int64_t m : {int64_t{1}, int64_t{17}, int64_t{70}}) {
      if (m != 17 && !int8) continue;
      const Weight w = MakeWeight(n, k, pc.dtype, pc.group, seed, false);
      std::mt19937 rng(seed++);
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      std::vector<float> x(static_cast<size_t>(m * k) + kPad);
      for (auto& v : x) v = dist(rng);
      std::vector<float> b(static_cast<size_t>(n));
      for (auto& v : b) v = dist(rng);
      xnn::LinearSpec spec;
      spec.weight = w.view();
      spec.bias = b.data();
      spec.max_rows = m;
      spec.input_stride = k;
      spec.output_stride = n;
      OneLinear whole, parts;
      xnn::SetUnsupportedPathsForTesting(pc.unsupported);
      const Status made_whole = Make(spec, &whole);
      spec.parts = 2;
      const Status made_parts = Make(spec, &parts, pool);
      xnn::SetUnsupportedPathsForTesting(0);
      REQUIRE(made_whole.ok());
      REQUIRE(made_parts.ok());
      REQUIRE(parts.choice.path == pc.path);
      std::vector<float> want(static_cast<size_t>(m * n) + kPad, -7.0f);
      REQUIRE(xnn::RunLinear(whole.kernel, x.data(), m, k, want.data(), n));
      for (int call = 0; call < 4; ++call) {  // the first call measures one thread, then the pool
        std::vector<float> got(want.size(), -7.0f);
        REQUIRE(xnn::RunLinear(parts.kernel, x.data(), m, k, got.data(), n));
        INFO(xnn::LinearPathName(pc.path) << " m " << m << " call " << call);
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        if (call == 1) xnn::ParkWorkers(pool);  // sleeping workers take the next task as before
      }
      INFO(xnn::LinearPathName(pc.path) << " m " << m);
      CHECK(parts.kernel.governors().For(m).single_ns() > 0.0f);
      CHECK(parts.kernel.governors().For(m).pooled_ns() > 0.0f);
      CHECK(parts.context.fallback_calls == 0);
    }
  }
  pthreadpool_destroy(pool);
}

TEST_CASE("the dry run measures without packing and is memoized", "[xnnpack][linear]") {
  // A layer far above the measuring cap: the dry run takes no time and little memory, and the
  // bytes it reports are what creating takes (checked exactly in CheckPath for small layers and
  // by the arena tests end to end).
  const int64_t n = 4096, k = 1024;
  std::vector<float> weights(static_cast<size_t>(n * k), 0.25f);
  WeightView view;
  view.dtype = DType::kF32;
  view.data = weights.data();
  view.rows = n;
  view.cols = k;
  xnn::LinearSpec spec;
  spec.weight = view;
  spec.max_rows = 8;
  spec.input_stride = k;
  spec.output_stride = n;
  xnn::LinearPlanner planner;
  xnn::LinearChoice first, second;
  REQUIRE(planner.Choose(spec, &first).ok());
  REQUIRE(planner.Choose(spec, &second).ok());
  CHECK(first.path == LinearPath::kF32);
  CHECK(first.xnn_bytes >= static_cast<size_t>(n * k) * sizeof(float));  // the packed weights
  CHECK(first.xnn_bytes < static_cast<size_t>(n * k) * sizeof(float) * 11 / 10);
  CHECK(second.xnn_bytes == first.xnn_bytes);
}

}  // namespace
}  // namespace tern

#endif  // TERN_WITH_XNNPACK
