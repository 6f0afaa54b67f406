// The known-answer check of XNNPACK's linear kernels (kernel_check.h): it passes the kernels
// that compute right, fails a kernel given one wrong weight, and the planner never takes a path
// the check refused.
#include <catch2/catch_test_macros.hpp>

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

#include <cstring>
#include <string>
#include <vector>

#include "runtime/kernels/xnnpack/kernel_check.h"
#include "runtime/kernels/xnnpack/linear.h"

namespace tern {
namespace {

using xnn::KernelVerdict;
using xnn::LinearPath;

const char* VerdictName(KernelVerdict v) {
  switch (v) {
    case KernelVerdict::kRight:
      return "right";
    case KernelVerdict::kWrong:
      return "wrong";
    case KernelVerdict::kUnsupported:
      return "unsupported";
  }
  return "?";
}

TEST_CASE("the kernel check refuses the paths it finds wrong, and only those are listed",
          "[xnnpack][kernel_check]") {
  std::string listed_want;
  for (int p = 1; p < xnn::kLinearPathCount; ++p) {
    const auto path = static_cast<LinearPath>(p);
    const KernelVerdict verdict = xnn::CheckKernel(path);
    const bool trusted = xnn::PathTrusted(path);
    // What this CPU gives, in the test log.
    WARN(xnn::LinearPathName(path)
         << ": " << VerdictName(verdict) << (trusted ? "" : ", not used"));
    // A wrong kernel is never trusted; a right one only when a rule (qb4w on AVX512-VNNI) says so.
    if (verdict == KernelVerdict::kWrong) CHECK_FALSE(trusted);
    if (verdict != KernelVerdict::kWrong && path != LinearPath::kQd8Qb4w) CHECK(trusted);
    // The same answer when asked again (cached) and when checked again (deterministic).
    CHECK(xnn::PathTrusted(path) == trusted);
    CHECK(xnn::CheckKernel(path) == verdict);
    if (!trusted) {
      listed_want += (listed_want.empty() ? "" : ", ");
      listed_want += xnn::LinearPathName(path);
    }
  }
  char listed[256];
  xnn::UntrustedPaths(listed, sizeof listed);
  CHECK(std::string(listed) == listed_want);
  // A short buffer stays terminated.
  char tiny[4];
  xnn::UntrustedPaths(tiny, sizeof tiny);
  CHECK(std::strlen(tiny) < sizeof tiny);
}

TEST_CASE("the kernel check fails a kernel given one wrong weight", "[xnnpack][kernel_check]") {
  int checked = 0;
  for (int p = 1; p < xnn::kLinearPathCount; ++p) {
    const auto path = static_cast<LinearPath>(p);
    if (xnn::CheckKernel(path) != KernelVerdict::kRight) continue;
    INFO(xnn::LinearPathName(path));
    CHECK(xnn::CheckKernel(path, /*corrupt=*/true) == KernelVerdict::kWrong);
    ++checked;
  }
  // f32 and int8 pass on every CPU tern has run on: the check is not vacuous.
  CHECK(checked >= 2);
  CHECK(xnn::CheckKernel(LinearPath::kReference) == KernelVerdict::kUnsupported);
}

TEST_CASE("the planner takes no path the kernel check refused", "[xnnpack][kernel_check]") {
  struct Weight {
    DType dtype;
    int64_t group_size;
  };
  const Weight weights[] = {{DType::kF32, 0}, {DType::kF16, 0}, {DType::kI8, 0},
                            {DType::kI4, 0},  {DType::kI4, 32}, {DType::kI4, 64}};
  for (const Weight& w : weights) {
    WeightView view;
    view.dtype = w.dtype;
    view.rows = 64;
    view.cols = 128;
    view.group_size = w.group_size;
    const LinearPath path = xnn::PreferredPath(view);
    INFO(DTypeName(w.dtype) << " group " << w.group_size << ": " << xnn::LinearPathName(path));
    CHECK(xnn::PathTrusted(path));
    // The best path of the dtype is taken whenever it is trusted.
    const LinearPath best = w.dtype == DType::kF32   ? LinearPath::kF32
                            : w.dtype == DType::kF16 ? LinearPath::kF16
                            : w.dtype == DType::kI8  ? LinearPath::kQd8Qc8w
                            : w.group_size == 0      ? LinearPath::kQd8Qc4w
                                                     : LinearPath::kQd8Qb4w;
    if (xnn::PathTrusted(best)) CHECK(path == best);
    if (!xnn::PathTrusted(best)) CHECK(path != best);
  }
}

}  // namespace
}  // namespace tern

#endif
