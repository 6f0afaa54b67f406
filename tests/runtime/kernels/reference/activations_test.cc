// ref::Relu / Gelu / GeluTanh / Swish / Activate against the formulas in double.
// Tolerance: |y - ref| <= 1e-5 * |ref| + 1e-6 (float erf/tanh/exp are within a few ulps; the
// absolute floor covers 1 + erf(x) cancelling for negative x).
#include "runtime/kernels/reference/activations.h"

#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

using tern::ref::Activation;

double RefRelu(double x) { return x > 0 ? x : 0.0; }
double RefGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double RefGeluTanh(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}
double RefSwish(double x) { return x / (1.0 + std::exp(-x)); }

double Ref(Activation act, double x) {
  switch (act) {
    case Activation::kReLU:
      return RefRelu(x);
    case Activation::kGELU:
      return RefGelu(x);
    case Activation::kSwish:
    case Activation::kSwiGLU:  // the gate's nonlinearity; the FFN multiplies by fc3
      return RefSwish(x);
    case Activation::kGELUTanh:
    case Activation::kGeGLU:  // the gate's nonlinearity (Gemma's FFN)
      return RefGeluTanh(x);
  }
  return std::nan("");
}

std::vector<float> Inputs(uint32_t seed, int64_t n) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-8.0f, 8.0f);
  std::vector<float> x = {0.0f,  -0.0f, 1.0f,   -1.0f,  0.5f,    -0.5f, 3.0f,
                          -3.0f, 30.0f, -30.0f, 100.0f, -100.0f, 1e-7f, -1e-7f};
  while (static_cast<int64_t>(x.size()) < n) x.push_back(value(rng));
  return x;
}

void CheckAgainst(Activation act, void (*fn)(float*, int64_t), const char* label) {
  for (int64_t n : {1, 3, 7, 33, 257}) {
    std::vector<float> x = Inputs(401 + static_cast<uint32_t>(n), n);
    x.resize(static_cast<size_t>(n));
    const std::vector<float> in = x;
    x.push_back(-5.0f);  // sentinel past n: must stay
    fn(x.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double want = Ref(act, in[static_cast<size_t>(i)]);
      const double got = x[static_cast<size_t>(i)];
      INFO(label << " n " << n << " x " << in[static_cast<size_t>(i)] << " got " << got << " want "
                 << want);
      REQUIRE(std::isfinite(got));
      REQUIRE(std::fabs(got - want) <= 1e-5 * std::fabs(want) + 1e-6);
    }
    REQUIRE(x.back() == -5.0f);
  }
}

}  // namespace

TEST_CASE("Activations: ReLU", "[kernels][activations]") {
  CheckAgainst(Activation::kReLU, tern::ref::Relu, "relu");
  float x[4] = {-0.0f, -1e-30f, 2.5f, -3.0f};
  tern::ref::Relu(x, 4);
  REQUIRE(x[0] == 0.0f);
  REQUIRE(x[1] == 0.0f);
  REQUIRE(x[2] == 2.5f);
  REQUIRE(x[3] == 0.0f);
}

TEST_CASE("Activations: GELU, exact erf form", "[kernels][activations]") {
  CheckAgainst(Activation::kGELU, tern::ref::Gelu, "gelu");
  // Spot values: GELU(1) = 0.841344746, GELU(-1) = -0.158655254.
  float x[2] = {1.0f, -1.0f};
  tern::ref::Gelu(x, 2);
  REQUIRE(std::fabs(x[0] - 0.841344746) <= 1e-6);
  REQUIRE(std::fabs(x[1] + 0.158655254) <= 1e-6);
}

TEST_CASE("Activations: GELU tanh approximation", "[kernels][activations]") {
  CheckAgainst(Activation::kGELUTanh, tern::ref::GeluTanh, "gelu_tanh");
  // GELU_tanh(-1) = -0.158808 differs from the exact -0.158655 by 1.5e-4: the forms are distinct.
  float x[1] = {-1.0f};
  tern::ref::GeluTanh(x, 1);
  REQUIRE(std::fabs(x[0] + 0.1588080) <= 1e-6);
}

TEST_CASE("Activations: Swish / SiLU", "[kernels][activations]") {
  CheckAgainst(Activation::kSwish, tern::ref::Swish, "swish");
  float x[2] = {1.0f, -2.0f};
  tern::ref::Swish(x, 2);
  REQUIRE(std::fabs(x[0] - 0.7310585786) <= 1e-6);
  REQUIRE(std::fabs(x[1] + 0.2384058440) <= 1e-6);
}

TEST_CASE("Activations: Activate dispatches each kind to its own function",
          "[kernels][activations]") {
  const Activation kinds[] = {Activation::kReLU,     Activation::kGELU,   Activation::kSwish,
                              Activation::kGELUTanh, Activation::kSwiGLU, Activation::kGeGLU};
  for (Activation act : kinds) {
    // -1 gives a different value under every kind (0, -0.15866, -0.26894, -0.15881).
    std::vector<float> x = Inputs(499, 33);
    x[0] = -1.0f;
    const std::vector<float> in = x;
    tern::ref::Activate(act, x.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = Ref(act, in[i]);
      INFO("kind " << static_cast<int>(act) << " x " << in[i] << " got " << x[i]);
      REQUIRE(std::fabs(x[i] - want) <= 1e-5 * std::fabs(want) + 1e-6);
    }
  }
}

TEST_CASE("Activations: SwiGLU = silu(gate) * up", "[kernels][activations]") {
  // FFN(x) = W2 (silu(W1 x) * W3 x): Activate(kSwiGLU) on the gate, then Multiply by the up.
  std::vector<float> gate = Inputs(512, 37), up = Inputs(513, 37);
  const std::vector<float> in = gate;
  tern::ref::Activate(Activation::kSwiGLU, gate.data(), 37);
  tern::ref::Multiply(gate.data(), up.data(), 37);
  for (size_t i = 0; i < gate.size(); ++i) {
    const double want = RefSwish(in[i]) * up[i];
    INFO("gate " << in[i] << " up " << up[i]);
    REQUIRE(std::fabs(gate[i] - want) <= 1e-5 * std::fabs(want) + 1e-5);
  }
}

TEST_CASE("Activations: n = 0 changes nothing", "[kernels][activations]") {
  float x[1] = {-4.0f};
  tern::ref::Relu(x, 0);
  tern::ref::Gelu(x, 0);
  tern::ref::GeluTanh(x, 0);
  tern::ref::Swish(x, 0);
  REQUIRE(x[0] == -4.0f);
}
