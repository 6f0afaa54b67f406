// The float loops between the layers split by rows over a thread pool (xnn::ForRows through
// ops::LayerNorm, ops::AddRows, ops::Activate): the bits of one call on the calling thread, for
// every row count and width, whichever way the governor chooses.
#include <catch2/catch_test_macros.hpp>

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

#include <pthreadpool.h>

#include <cstring>
#include <random>
#include <vector>

#include "runtime/kernels/ops.h"
#include "runtime/kernels/xnnpack/row_loops.h"

namespace tern {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Pooled {
  pthreadpool* pool = pthreadpool_create(2);
  xnn::PoolBudget budget;
  xnn::RowLoops loops;
  ops::Kernels kernels;
  ops::Kernels alone;  // the same loops on the calling thread
  Pooled() {
    loops.pool = pool;
    loops.budget = &budget;
    kernels.vectorized = alone.vectorized = true;
    kernels.rows = &loops;
  }
  ~Pooled() { pthreadpool_destroy(pool); }
};

TEST_CASE("LayerNorm, residual adds and activations split over a pool give the same bits",
          "[xnnpack][rows][pool]") {
  Pooled p;
  REQUIRE(p.pool != nullptr);
  // Small calls stay on the calling thread (under the governors' threshold); the large ones
  // (1029 x 1024: about a millisecond) are measured both ways within the first calls.
  const int64_t shapes[][2] = {{1, 64}, {3, 96}, {70, 100}, {1029, 1024}};
  uint32_t seed = 40;
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0], d = shape[1];
    const size_t n = static_cast<size_t>(rows * d);
    const std::vector<float> x = Random(n, seed++), y = Random(n, seed++);
    const std::vector<float> gamma = Random(static_cast<size_t>(d), seed++),
                             beta = Random(static_cast<size_t>(d), seed++);
    for (int call = 0; call < 6; ++call) {
      INFO("rows " << rows << " d " << d << " call " << call);
      // A fresh probe budget: on a loaded machine (the suite runs tests side by side) a losing
      // probe would defer the next governor's first probe (pool_governor.h).
      p.budget = xnn::PoolBudget();
      for (ref::NormKind kind :
           {ref::NormKind::kLayerNorm, ref::NormKind::kLayerNormStdEps, ref::NormKind::kRMSNorm}) {
        const float* b = kind == ref::NormKind::kRMSNorm ? nullptr : beta.data();
        std::vector<float> want(n), got(n, 9.0f);
        ops::LayerNorm(p.alone, x.data(), rows, d, gamma.data(), b, 1e-5f, kind, want.data());
        ops::LayerNorm(p.kernels, x.data(), rows, d, gamma.data(), b, 1e-5f, kind, got.data());
        CHECK(Same(got, want));
        got = x;  // in place, as a post-LN residual normalizes x
        ops::LayerNorm(p.kernels, got.data(), rows, d, gamma.data(), b, 1e-5f, kind, got.data());
        CHECK(Same(got, want));
      }
      std::vector<float> want = x, got = x;
      ops::AddRows(p.alone, want.data(), y.data(), rows, d);
      ops::AddRows(p.kernels, got.data(), y.data(), rows, d);
      CHECK(Same(got, want));
      // Activations over n elements, n not always a multiple of the 64-element blocks.
      for (ref::Activation act : {ref::Activation::kReLU, ref::Activation::kGELU,
                                  ref::Activation::kSwish, ref::Activation::kGELUTanh}) {
        const int64_t count = static_cast<int64_t>(n) - (rows > 1 ? 5 : 0);
        want = x;
        got = x;
        ops::Activate(p.alone, act, want.data(), count);
        ops::Activate(p.kernels, act, got.data(), count);
        CHECK(Same(got, want));
      }
    }
  }
  // The large calls learned both ways; a one-row call never asks the pool.
  for (int kind = 0; kind < xnn::kRowLoops; ++kind) {
    INFO("loop " << kind);
    const xnn::PoolGovernor& large =
        p.loops.governors[kind].For(kind == 2 ? 1029 * 1024 / 64 : 1029);
    CHECK(large.single_ns() > 0.0f);
    CHECK(large.pooled_ns() > 0.0f);
  }
  CHECK(p.loops.governors[0].For(1).single_ns() == 0.0f);
}

TEST_CASE("row loops run on the calling thread without a pool or for one row", "[xnnpack][rows]") {
  xnn::RowLoops none;
  int runs = 0;
  auto count = [](void* c, int64_t, int64_t) { ++*static_cast<int*>(c); };
  CHECK_FALSE(xnn::ForRows(none, xnn::RowLoop::kAdd, 100, 1e6f, count, &runs));
  Pooled p;
  CHECK_FALSE(xnn::ForRows(p.loops, xnn::RowLoop::kAdd, 1, 1e6f, count, &runs));
  CHECK(runs == 0);  // the caller runs the loop
  CHECK(xnn::ForRows(p.loops, xnn::RowLoop::kAdd, 100, 1e6f, count, &runs));
  CHECK(runs >= 1);
}

}  // namespace
}  // namespace tern

#endif  // TERN_WITH_XNNPACK
