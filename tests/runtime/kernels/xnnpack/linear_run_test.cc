// Several linear layers that read one input, run as one group (xnn::RunLinears): the bits of one
// RunLinear per layer on every path, one thread and a pool, the group's own pool governors, and
// the groups that cannot run together (each layer then runs alone, through ops::Linears). Also a
// layer without an operator, its loops cut over a pool (xnn::RunLinearLoops).
#include <catch2/catch_test_macros.hpp>

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

#include <pthreadpool.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/kernels/ops.h"
#include "runtime/kernels/vectorized/linear_qd8.h"
#include "runtime/kernels/vectorized/linear_sign.h"
#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/linear.h"
#include "tests/runtime/kernels/xnnpack/linear_fixtures.h"

namespace tern {
namespace {

using namespace xnn_test;  // NOLINT: the fixtures of linear_fixtures.h

// Layers of one session: one context (conversion operators, activation buffers) and their
// operators in one region, as Prepare makes them.
struct Layers {
  Aligned region{0}, scratch{0};
  ActivationBuffers activations;
  xnn::Context context;
  std::vector<xnn::LinearKernel> kernels;
};

Status Make(const std::vector<xnn::LinearSpec>& specs, Layers* out, pthreadpool* pool) {
  xnn::LinearPlanner planner;
  std::vector<xnn::LinearChoice> choices(specs.size());
  xnn::ContextNeeds needs;
  size_t bytes = 0, scratch = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    TERN_RETURN_IF_ERROR(planner.Choose(specs[i], &choices[i]));
    needs.Add(specs[i], choices[i].path);
    bytes += choices[i].xnn_bytes;
    scratch = std::max(scratch, choices[i].scratch_bytes);
  }
  size_t context_bytes = 0;
  TERN_RETURN_IF_ERROR(xnn::MeasureContext(needs, &context_bytes));
  bytes += context_bytes;
  out->region = Aligned(bytes);
  out->scratch = Aligned(scratch);
  xnn::Context& c = out->context;
  out->activations.Bind(needs, pool, &c);
  out->kernels.resize(specs.size());
  xnn::ArenaScope scope(out->region.data(), bytes);
  TERN_RETURN_IF_ERROR(xnn::CreateContext(needs, &c));
  for (size_t i = 0; i < specs.size(); ++i) {
    TERN_RETURN_IF_ERROR(
        xnn::CreateLinear(specs[i], choices[i], &c, out->scratch.data(), &out->kernels[i]));
  }
  return Status::Ok();
}

// A group like an attention's Q, K and V: layers of n_i output rows over one input of k
// columns, each writing its own output with its own row stride (K/V into a cache's rows).
struct Group {
  std::vector<Weight> weights;
  std::vector<std::vector<float>> biases;
  std::vector<xnn::LinearSpec> specs;
  std::vector<int64_t> ldys;
};

Group MakeGroup(const std::vector<int64_t>& ns, int64_t k, int64_t max_rows, int64_t ldx,
                const PathCase& pc, int parts, uint32_t seed) {
  Group g;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (size_t i = 0; i < ns.size(); ++i) {
    g.weights.push_back(MakeWeight(ns[i], k, pc.dtype, pc.group, seed + 7 * i, i == 1));
    g.biases.emplace_back(static_cast<size_t>(ns[i]));
    for (auto& v : g.biases.back()) v = dist(rng);
    g.ldys.push_back(ns[i] + 3 * static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < ns.size(); ++i) {
    xnn::LinearSpec spec;
    spec.weight = g.weights[i].view();
    spec.bias = i == 2 ? nullptr : g.biases[i].data();  // a layer without bias too
    spec.max_rows = max_rows;
    spec.input_stride = ldx;
    spec.output_stride = g.ldys[i];
    spec.parts = parts;
    g.specs.push_back(spec);
  }
  return g;
}

std::vector<float> Input(int64_t m, int64_t ldx, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(m * ldx) + kPad);
  for (auto& v : x) v = dist(rng);
  return x;
}

// Outputs of every layer of `layers` for x: one RunLinear each (grouped = false) or one
// RunLinears call; false when that call refused.
bool Run(Layers& layers, const Group& g, const std::vector<float>& x, int64_t m, int64_t ldx,
         bool grouped, std::vector<std::vector<float>>* ys) {
  const int count = static_cast<int>(g.specs.size());
  ys->assign(g.specs.size(), {});
  xnn::LinearKernel* kernels[8];  // room for groups RunLinears refuses as too large
  float* outputs[8];
  for (int i = 0; i < count; ++i) {
    (*ys)[i].assign(static_cast<size_t>(m * g.ldys[i]) + kPad, -7.0f);
    kernels[i] = &layers.kernels[i];
    outputs[i] = (*ys)[i].data();
  }
  if (grouped) return xnn::RunLinears(kernels, count, x.data(), m, ldx, outputs, g.ldys.data());
  for (int i = 0; i < count; ++i) {
    if (!xnn::RunLinear(layers.kernels[i], x.data(), m, ldx, outputs[i], g.ldys[i])) return false;
  }
  return true;
}

bool SameBits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

TEST_CASE("layers that read one input run as one group with each layer's bits",
          "[xnnpack][linear]") {
  // Q, K, V with fewer K/V rows (grouped-query attention), and a pair (a gated FFN's W1, W3);
  // 1, 5, 70 and kTiledPartsRows rows (70: the int8 rows converted on the pool; from
  // kTiledPartsRows each part tiled over the pool in turn), whole layers on one thread and
  // layers cut in two on a pool. The f16 path converts each layer's output through one shared
  // buffer: its layers run alone (RunLinears refuses, ops::Linears runs them one by one).
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  const int64_t k = 160, ldx = 165;
  const std::vector<std::vector<int64_t>> shapes = {{128, 64, 64}, {96, 96}};
  uint32_t seed = 1200;
  for (const PathCase& pc : CutPaths()) {
    const bool groups = pc.path != LinearPath::kF16;
    for (const auto& ns : shapes) {
      for (int parts : {1, 2}) {
        for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{70}, xnn::kTiledPartsRows}) {
          INFO(xnn::LinearPathName(pc.path)
               << " layers " << ns.size() << " parts " << parts << " m " << m);
          const Group g = MakeGroup(ns, k, m, ldx, pc, parts, seed);
          const std::vector<float> x = Input(m, ldx, seed++);
          Layers alone, together;
          xnn::SetUnsupportedPathsForTesting(pc.unsupported);
          const Status made_alone = Make(g.specs, &alone, nullptr);
          const Status made_together = Make(g.specs, &together, parts > 1 ? pool : nullptr);
          xnn::SetUnsupportedPathsForTesting(0);
          REQUIRE(made_alone.ok());
          REQUIRE(made_together.ok());
          REQUIRE(together.kernels[0].path == pc.path);
          std::vector<std::vector<float>> want, got;
          REQUIRE(Run(alone, g, x, m, ldx, false, &want));
          // Several calls: with a pool the governor runs the first on the calling thread and
          // probes the pool on the next (pool_governor.h).
          for (int call = 0; call < 3; ++call) {
            INFO("call " << call);
            CHECK(Run(together, g, x, m, ldx, true, &got) == groups);
            if (!groups) break;
            CHECK(SameBits(got, want));
          }
          CHECK(together.context.group_calls == (groups ? 3u : 0u));
          CHECK(together.context.fallback_calls == 0);
          // Through the layers' entry point: the same bits, grouped or not.
          std::vector<ops::LinearTarget> targets;
          std::vector<std::vector<float>> through(g.specs.size());
          for (size_t i = 0; i < g.specs.size(); ++i) {
            through[i].assign(want[i].size(), -7.0f);
            targets.push_back({&g.specs[i].weight, g.specs[i].bias, &together.kernels[i],
                               through[i].data(), g.ldys[i]});
          }
          ops::Linears(x.data(), m, ldx, targets.data(), static_cast<int>(targets.size()));
          CHECK(SameBits(through, want));
        }
      }
    }
  }
  pthreadpool_destroy(pool);
}

TEST_CASE("a group on a pool learns with governors of its own", "[xnnpack][linear]") {
  // Three 1024 x 512 int8 layers at 17 rows: over the 5 us under which cut layers stay on the
  // calling thread, so the governor measures the group both ways within a few calls. The
  // layers' own governors (for their calls alone) learn nothing from the group's calls.
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  const PathCase int8{DType::kI8, 0, LinearPath::kQd8Qc8w, 0};
  const int64_t k = 512, m = 17;
  const Group g = MakeGroup({1024, 1024, 1024}, k, m, k, int8, 2, 1300);
  const std::vector<float> x = Input(m, k, 1301);
  Layers alone, together;
  REQUIRE(Make(g.specs, &alone, nullptr).ok());
  REQUIRE(Make(g.specs, &together, pool).ok());
  std::vector<std::vector<float>> want, got;
  REQUIRE(Run(alone, g, x, m, k, false, &want));
  for (int call = 0; call < 6; ++call) {
    // A fresh probe budget: on a loaded machine (the suite runs tests side by side) a losing
    // probe would defer the next first probe (pool_governor.h).
    together.context.pool_budget = xnn::PoolBudget();
    REQUIRE(Run(together, g, x, m, k, true, &got));
    CHECK(SameBits(got, want));
    if (call == 2) xnn::ParkWorkers(pool);  // sleeping workers take the next tasks as before
  }
  const xnn::PoolGovernor& group = together.kernels[0].group_governors().For(m);
  CHECK(group.single_ns() > 0.0f);
  CHECK(group.pooled_ns() > 0.0f);
  for (xnn::LinearKernel& kn : together.kernels) {
    CHECK(kn.governors().For(m).single_ns() == 0.0f);
    CHECK(kn.governors().For(m).pooled_ns() == 0.0f);
  }
  // A layer that shares the lead's governors (as a session's layers of one shape do) shares
  // its groups' too.
  together.kernels[1].shared_group = &together.kernels[0].own_group;
  CHECK(&together.kernels[1].group_governors() == &together.kernels[0].group_governors());
  CHECK(together.context.fallback_calls == 0);
  pthreadpool_destroy(pool);
}

TEST_CASE("a layer without an operator runs its loops on a pool with the bits of one thread",
          "[xnnpack][linear]") {
  // int4 in blocks of 8 (the portable integer loops on every CPU) and in blocks of 64, which do
  // not divide the rows of 288 (no XNNPACK operator; the widest integer loops this CPU has,
  // the last block partial), 2 threads: the output rows cut at a multiple of 32 (200 rows:
  // parts of 96 and 104), each part's weights, scales, bias and outputs offset to its rows. The
  // governor measures both ways within a few calls (each over its threshold), so pooled calls are
  // among those compared. Its threshold is a cut operator's (one task per thread), not an uncut
  // one's; without a pool, or with too few rows to cut, the default.
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  const int64_t n = 200, k = 288, m = 17, ldx = k + 5;
  const std::vector<float> x = Input(m, ldx, 1500);
  for (const PathCase& pc : {PathCase{DType::kI4, 8, LinearPath::kReference, 0},
                             PathCase{DType::kI4, 64, LinearPath::kReference, 0}}) {
    for (bool with_bias : {true, false}) {
      INFO(DTypeName(pc.dtype) << " blocks of " << pc.group << (with_bias ? ", bias" : ""));
      Group g = MakeGroup({n}, k, m, ldx, pc, 1, 1501);
      if (!with_bias) g.specs[0].bias = nullptr;
      Layers alone, pooled;
      REQUIRE(Make(g.specs, &alone, nullptr).ok());
      REQUIRE(Make(g.specs, &pooled, pool).ok());
      REQUIRE(pooled.kernels[0].op == nullptr);
      const int64_t ldy = g.ldys[0];
      std::vector<float> want(static_cast<size_t>(m * ldy) + kPad, -7.0f);
      ops::Linear(x.data(), m, ldx, g.specs[0].weight, g.specs[0].bias, &alone.kernels[0],
                  want.data(), ldy);
      for (int call = 0; call < 8; ++call) {
        pooled.context.pool_budget = xnn::PoolBudget();  // as in the group test above
        std::vector<float> got(want.size(), -7.0f);
        ops::Linear(x.data(), m, ldx, g.specs[0].weight, g.specs[0].bias, &pooled.kernels[0],
                    got.data(), ldy);
        CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
      }
      const xnn::PoolGovernor& governor = pooled.kernels[0].governors().For(m);
      CHECK(governor.single_ns() > 0.0f);
      CHECK(governor.pooled_ns() > 0.0f);
      CHECK(pooled.context.fallback_calls == 0);
      CHECK(governor.min_pooled_ns() == xnn::PoolGovernor::kMinCutPooledNs);
      CHECK(pooled.kernels[0].group_governors().For(m).min_pooled_ns() ==
            xnn::PoolGovernor::kMinCutPooledNs);
      CHECK(alone.kernels[0].governors().For(m).min_pooled_ns() == xnn::PoolGovernor::kMinPooledNs);
      Group narrow = MakeGroup({32}, k, m, ldx, pc, 1, 1502);  // under 2 x 32 rows: not cut
      Layers uncut;
      REQUIRE(Make(narrow.specs, &uncut, pool).ok());
      CHECK(uncut.kernels[0].governors().For(m).min_pooled_ns() == xnn::PoolGovernor::kMinPooledNs);
    }
  }
  pthreadpool_destroy(pool);
}

// int4 per row on tern's integer loops on every CPU: XNNPACK's qc4w paths switched off.
const PathCase kInt4Loops{DType::kI4, 0, LinearPath::kReference,
                          xnn::PathBit(LinearPath::kQd8Qc4w) | xnn::PathBit(LinearPath::kF32Qc4w)};

Status MakeInt4Loops(const std::vector<xnn::LinearSpec>& specs, Layers* out, pthreadpool* pool) {
  xnn::SetUnsupportedPathsForTesting(kInt4Loops.unsupported);
  const Status made = Make(specs, out, pool);
  xnn::SetUnsupportedPathsForTesting(0);
  return made;
}

TEST_CASE("an int4 layer without an operator quantizes its rows once, on a pool too",
          "[xnnpack][linear]") {
  // int4 per row with XNNPACK's qc4w paths off: tern's integer loops, which on a CPU with AMX
  // take 32 rows of x or more quantized once into the context's scratch (vec::QuantizedRows;
  // planned by ContextNeeds), with a pool each thread quantizing a share of the rows and then
  // computing its part of the output rows from all of them. 300 rows: two passes of rows.
  // The bits of vec::LinearQd8 on the same call, alone and pooled; elsewhere no scratch is
  // planned and the same loops run as before.
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  const int64_t n = 200, k = 256, ldx = k + 5;
  const PathCase pc = kInt4Loops;
  for (int64_t m : {int64_t{40}, int64_t{300}}) {
    INFO("m " << m);
    const std::vector<float> x = Input(m, ldx, 1600);
    Group g = MakeGroup({n}, k, m, ldx, pc, 1, 1601);
    Layers alone, pooled;
    REQUIRE(MakeInt4Loops(g.specs, &alone, nullptr).ok());
    REQUIRE(MakeInt4Loops(g.specs, &pooled, pool).ok());
    REQUIRE(pooled.kernels[0].op == nullptr);
    const WeightView& w = g.specs[0].weight;
    const size_t rows_bytes = vec::LinearQd8ScratchBytes(w, m);
    CHECK(alone.context.qd8_rows_bytes == rows_bytes);
    CHECK(vec::LinearQd8TakesRows(w, m, pooled.context.qd8_rows_bytes) == (rows_bytes > 0));
    const int64_t ldy = g.ldys[0];
    std::vector<float> want(static_cast<size_t>(m * ldy) + kPad, -7.0f);
    vec::LinearQd8(x.data(), m, ldx, w, g.specs[0].bias, want.data(), ldy);
    std::vector<float> got(want.size(), -7.0f);
    ops::Linear(x.data(), m, ldx, w, g.specs[0].bias, &alone.kernels[0], got.data(), ldy);
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    for (int call = 0; call < 8; ++call) {
      pooled.context.pool_budget = xnn::PoolBudget();
      std::fill(got.begin(), got.end(), -7.0f);
      ops::Linear(x.data(), m, ldx, w, g.specs[0].bias, &pooled.kernels[0], got.data(), ldy);
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
    // 300 rows are over the governor's threshold: both ways measured, so pooled calls ran.
    if (m == 300) {
      const xnn::PoolGovernor& governor = pooled.kernels[0].governors().For(m);
      CHECK(governor.single_ns() > 0.0f);
      CHECK(governor.pooled_ns() > 0.0f);
    }
  }
  pthreadpool_destroy(pool);
}

TEST_CASE("int4 layers without an operator that read one input quantize it once, as a group",
          "[xnnpack][linear]") {
  // Three int4 layers of 200, 64 and 96 rows (the 64 and 96 too small to cut over 2 threads: one
  // task each) through ops::Linears, as an attention's Q, K and V: on a CPU with AMX one group
  // (xnn::RunQd8LoopsGroup: x quantized once per pass), the bits of vec::LinearQd8 per layer,
  // alone and pooled; elsewhere, and at 1 and 4 rows (a decode step), one group on a pool (every
  // layer's parts in one fork-join) and each layer alone without one: the same bits.
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  const int64_t k = 128, ldx = k + 1;
  const PathCase pc = kInt4Loops;
  for (int64_t m : {int64_t{1}, int64_t{4}, int64_t{33}, int64_t{300}}) {
    INFO("m " << m);
    const std::vector<float> x = Input(m, ldx, 1700);
    const Group g = MakeGroup({200, 64, 96}, k, m, ldx, pc, 1, 1701);
    Layers alone, pooled;
    REQUIRE(MakeInt4Loops(g.specs, &alone, nullptr).ok());
    REQUIRE(MakeInt4Loops(g.specs, &pooled, pool).ok());
    const bool rows = vec::LinearQd8ScratchBytes(g.specs[0].weight, m) > 0;
    std::vector<std::vector<float>> want(3);
    for (size_t i = 0; i < 3; ++i) {
      want[i].assign(static_cast<size_t>(m * g.ldys[i]) + kPad, -7.0f);
      vec::LinearQd8(x.data(), m, ldx, g.specs[i].weight, g.specs[i].bias, want[i].data(),
                     g.ldys[i]);
    }
    // Calls this small stay on one thread under the governors' threshold: none here.
    pooled.kernels[0].own_group = xnn::RowClassGovernors(0.0f);
    for (Layers* layers : {&alone, &pooled}) {
      for (int call = 0; call < 6; ++call) {
        layers->context.pool_budget = xnn::PoolBudget();
        std::vector<std::vector<float>> got(3);
        std::vector<ops::LinearTarget> targets;
        for (size_t i = 0; i < 3; ++i) {
          got[i].assign(want[i].size(), -7.0f);
          targets.push_back(
              {&g.specs[i].weight, g.specs[i].bias, &layers->kernels[i], got[i].data(), g.ldys[i]});
        }
        ops::Linears(x.data(), m, ldx, targets.data(), 3);
        CHECK(SameBits(got, want));
      }
      CHECK(layers->context.group_calls == (rows || layers == &pooled ? 6u : 0u));
      if (layers == &pooled) {  // the group's pool was tried (so its parts' bits were checked)
        CHECK(layers->kernels[0].group_governors().For(m).pooled_ns() > 0.0f);
      }
    }
  }
  pthreadpool_destroy(pool);
}

TEST_CASE(
    "int8 / int4 layers on the sign loops run on a pool, alone and as a group, with XNNPACK's bits",
    "[xnnpack][linear]") {
  // Where sessions run int8 / int4 per row on tern's AVX2 loops (vec::SignPanelsBeatXnnpack), the
  // packed copy is cut over the pool by rows as the rows are: 192 rows in parts of 96, each
  // part's panels, scales, rows' sums and bias offset to its rows. Three layers of 192, 64 and
  // 96 rows through ops::Linears (one group on a pool: every part in one fork-join) and each
  // alone, 1, 4 and 17 rows of x: the bits of XNNPACK's qc8w / qc4w operators on the same
  // weights.
  const int64_t k = 128, ldx = k + 1;
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  for (const PathCase& pc : {PathCase{DType::kI8, 0, LinearPath::kQd8Qc8w, 0},
                             PathCase{DType::kI4, 0, LinearPath::kQd8Qc4w, 0}}) {
    if (!xnn::PathTrusted(pc.path)) continue;  // no operator to compare with on this CPU
    for (int64_t m : {int64_t{1}, int64_t{4}, int64_t{17}}) {
      INFO(DTypeName(pc.dtype) << ", m " << m);
      const std::vector<float> x = Input(m, ldx, 1800);
      Group g = MakeGroup({192, 64, 96}, k, m, ldx, pc, 1, 1801);
      if (!vec::SignPanelsBeatXnnpack(g.specs[0].weight)) {
        SUCCEED("this CPU keeps XNNPACK's int8 GEMM");
        break;
      }
      Layers operators;
      REQUIRE(Make(g.specs, &operators, nullptr).ok());
      std::vector<std::vector<float>> want;
      REQUIRE(Run(operators, g, x, m, ldx, false, &want));
      for (xnn::LinearSpec& spec : g.specs) {
        spec.copy_weight = true;
        spec.prefer_loops = true;
      }
      Layers alone, pooled;
      REQUIRE(Make(g.specs, &alone, nullptr).ok());
      REQUIRE(Make(g.specs, &pooled, pool).ok());
      for (size_t i = 0; i < 3; ++i) REQUIRE(pooled.kernels[i].panel_weight.data != nullptr);
      // Calls this small stay on one thread under the governors' threshold: none here.
      pooled.kernels[0].own = xnn::RowClassGovernors(0.0f);
      pooled.kernels[0].own_group = xnn::RowClassGovernors(0.0f);
      for (Layers* layers : {&alone, &pooled}) {
        for (int call = 0; call < 6; ++call) {
          layers->context.pool_budget = xnn::PoolBudget();
          std::vector<std::vector<float>> got(3);
          std::vector<ops::LinearTarget> targets;
          for (size_t i = 0; i < 3; ++i) {
            got[i].assign(want[i].size(), -7.0f);
            targets.push_back({&g.specs[i].weight, g.specs[i].bias, &layers->kernels[i],
                               got[i].data(), g.ldys[i]});
          }
          ops::Linears(x.data(), m, ldx, targets.data(), 3);
          CHECK(SameBits(got, want));
          // The first layer alone (RunQd8Loops: its parts on the pool).
          std::fill(got[0].begin(), got[0].end(), -7.0f);
          ops::Linear(x.data(), m, ldx, g.specs[0].weight, g.specs[0].bias, &layers->kernels[0],
                      got[0].data(), g.ldys[0]);
          CHECK(std::memcmp(got[0].data(), want[0].data(), want[0].size() * sizeof(float)) == 0);
        }
        if (layers == &pooled) {  // both ways tried, so pooled parts' bits were checked
          CHECK(layers->kernels[0].group_governors().For(m).pooled_ns() > 0.0f);
          CHECK(layers->kernels[0].governors().For(m).pooled_ns() > 0.0f);
        }
      }
    }
  }
  pthreadpool_destroy(pool);
}

TEST_CASE("layers that cannot run as one group run one by one", "[xnnpack][linear]") {
  pthreadpool* pool = pthreadpool_create(2);
  REQUIRE(pool != nullptr);
  const PathCase int8{DType::kI8, 0, LinearPath::kQd8Qc8w, 0};
  const int64_t k = 96, m = 4;
  const std::vector<float> x = Input(m, k, 1400);
  auto refused_then_alone = [&](const Group& g, Layers& layers, int64_t ldx) {
    // Each layer alone through ops::Linear (the vectorizable loops for a layer without an
    // operator), in layers of their own.
    Layers reference;
    REQUIRE(Make(g.specs, &reference, nullptr).ok());
    std::vector<std::vector<float>> want(g.specs.size()), got;
    for (size_t i = 0; i < g.specs.size(); ++i) {
      want[i].assign(static_cast<size_t>(m * g.ldys[i]) + kPad, -7.0f);
      ops::Linear(x.data(), m, ldx, g.specs[i].weight, g.specs[i].bias, &reference.kernels[i],
                  want[i].data(), g.ldys[i]);
    }
    CHECK_FALSE(Run(layers, g, x, m, ldx, true, &got));
    CHECK(layers.context.group_calls == 0);
    CHECK(layers.context.fallback_calls == 0);  // a refused group counts nothing
    std::vector<ops::LinearTarget> targets;
    std::vector<std::vector<float>> through(g.specs.size());
    for (size_t i = 0; i < g.specs.size(); ++i) {
      through[i].assign(want[i].size(), -7.0f);
      targets.push_back(
          {&g.specs[i].weight, g.specs[i].bias, &layers.kernels[i], through[i].data(), g.ldys[i]});
    }
    ops::Linears(x.data(), m, ldx, targets.data(), static_cast<int>(targets.size()));
    CHECK(SameBits(through, want));
  };
  SECTION("whole layers beside a pool (XNNPACK tiles each over the pool itself)") {
    const Group g = MakeGroup({64, 64}, k, m, k, int8, 1, 1401);
    Layers layers;
    REQUIRE(Make(g.specs, &layers, pool).ok());
    refused_then_alone(g, layers, k);
  }
  SECTION("more layers than a group takes") {
    const Group g = MakeGroup({64, 64, 64, 64}, k, m, k, int8, 1, 1402);
    Layers layers;
    REQUIRE(Make(g.specs, &layers, nullptr).ok());
    refused_then_alone(g, layers, k);
  }
  SECTION("a layer XNNPACK has no operator for (int4 in blocks of 16)") {
    Group g = MakeGroup({64, 64}, k, m, k, int8, 1, 1403);
    g.weights[1] = MakeWeight(64, k, DType::kI4, 16, 1404, false);
    g.specs[1].weight = g.weights[1].view();
    Layers layers;
    REQUIRE(Make(g.specs, &layers, nullptr).ok());
    REQUIRE(layers.kernels[1].op == nullptr);
    refused_then_alone(g, layers, k);
  }
  SECTION("an output stride other than planned (that layer's call falls back)") {
    Group g = MakeGroup({64, 64}, k, m, k, int8, 1, 1405);
    Layers layers;
    REQUIRE(Make(g.specs, &layers, nullptr).ok());
    std::vector<float> y0(static_cast<size_t>(m * 64) + kPad), y1(static_cast<size_t>(m * 80));
    xnn::LinearKernel* kernels[] = {&layers.kernels[0], &layers.kernels[1]};
    float* ys[] = {y0.data(), y1.data()};
    const int64_t ldys[] = {g.ldys[0], 80};
    CHECK_FALSE(xnn::RunLinears(kernels, 2, x.data(), m, k, ys, ldys));
    CHECK(layers.context.fallback_calls == 0);
  }
  SECTION("layers of different input widths") {
    Group g = MakeGroup({64, 64}, k, m, k, int8, 1, 1406);
    g.weights[1] = MakeWeight(64, k - 32, DType::kI8, 0, 1407, false);
    g.specs[1].weight = g.weights[1].view();
    Layers layers;
    REQUIRE(Make(g.specs, &layers, nullptr).ok());
    refused_then_alone(g, layers, k);
  }
  pthreadpool_destroy(pool);
}

}  // namespace
}  // namespace tern

#endif  // TERN_WITH_XNNPACK
