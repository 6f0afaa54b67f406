// What the XNNPACK linear tests share: weights in the file's encodings, 64-byte aligned buffers,
// and the paths XNNPACK runs on this CPU (linear_test.cc, linear_run_test.cc).
#pragma once

#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "converter/quantize.h"
#include "runtime/core/tensor.h"
#include "runtime/kernels/xnnpack/kernel_check.h"
#include "runtime/kernels/xnnpack/linear.h"

struct pthreadpool;

namespace tern::xnn_test {

using xnn::LinearPath;

// Generous room past every buffer: XNNPACK may read XNN_EXTRA_BYTES (16) beyond an input.
constexpr size_t kPad = 64;

// Whether this CPU has what XNNPACK's native f16 GEMM needs, found without asking XNNPACK (the
// kernel's own choice is what is tested): ARMv8.2 half-precision arithmetic on aarch64 (absent
// on ARMv8.0 cores such as qemu's cortex-a72); none on armv7, where XNNPACK has no f16 GEMM;
// AVX2 + F16C + FMA on x86-64.
inline bool CpuHasF16Gemm() {
#if defined(__aarch64__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDHP) != 0;
#elif defined(__arm__)
  return false;
#else
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
#endif
}

class Aligned {
 public:
  explicit Aligned(size_t bytes) : storage_(bytes + 64 + kPad, 0) {
    shift_ = (64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64;
  }
  uint8_t* data() { return storage_.data() + shift_; }

 private:
  std::vector<uint8_t> storage_;
  size_t shift_ = 0;
};

// A session context's activation buffers, sized for `needs`, with the context pointed at them
// (what Prepare does in the arena).
struct ActivationBuffers {
  Aligned qd8_input{0}, qd8_params{0}, f16_input{0}, f16_output{0}, qd8_rows{0};
  void Bind(const xnn::ContextNeeds& needs, pthreadpool* pool, xnn::Context* c) {
    qd8_input = Aligned(needs.qd8_input_bytes);
    qd8_params = Aligned(needs.qd8_params_bytes);
    f16_input = Aligned(needs.f16_input_bytes);
    f16_output = Aligned(needs.f16_output_bytes);
    c->pool = pool;
    c->qd8_input = reinterpret_cast<int8_t*>(qd8_input.data());
    c->qd8_input_bytes = needs.qd8_input_bytes;
    c->qd8_params = qd8_params.data();
    c->qd8_params_bytes = needs.qd8_params_bytes;
    c->f16_input = reinterpret_cast<uint16_t*>(f16_input.data());
    c->f16_input_bytes = needs.f16_input_bytes;
    c->f16_output = reinterpret_cast<uint16_t*>(f16_output.data());
    c->f16_output_bytes = needs.f16_output_bytes;
    qd8_rows = Aligned(needs.qd8_rows_bytes);
    c->qd8_rows = qd8_rows.data();
    c->qd8_rows_bytes = needs.qd8_rows_bytes;
  }
};

struct Weight {
  convert::EncodedTensor encoded;
  std::vector<float> values;  // what the encoding stands for (dequantized)
  WeightView view() const {
    WeightView w;
    w.dtype = encoded.dtype;
    w.data = encoded.data.data();
    w.rows = encoded.shape[0];
    w.cols = encoded.shape[1];
    w.scales = encoded.scales.empty() ? nullptr : encoded.scales.data();
    w.group_size = encoded.group_size;
    return w;
  }
};

inline Weight MakeWeight(int64_t n, int64_t k, DType dtype, int64_t group, uint32_t seed,
                         bool zero_row) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  convert::HostTensor t;
  t.name = "w";
  t.shape = {n, k};
  t.values.resize(static_cast<size_t>(n * k));
  for (auto& v : t.values) v = dist(rng) / std::sqrt(static_cast<float>(k));
  if (zero_row) std::fill(t.values.begin(), t.values.begin() + k, 0.0f);  // scale 0
  Weight w;
  w.encoded = convert::Encode(t, dtype, group);
  w.values = convert::Decode(w.encoded);
  return w;
}

struct PathCase {
  DType dtype;
  int64_t group;
  LinearPath path;
  uint32_t unsupported;  // paths switched off to reach it
};

// Every path XNNPACK runs here, the f32-activation fallbacks forced.
inline std::vector<PathCase> CutPaths() {
  const std::vector<PathCase> all = {
      {DType::kF32, 0, LinearPath::kF32, 0},
      {DType::kF16, 0, LinearPath::kF16AsF32, xnn::PathBit(LinearPath::kF16)},
      {DType::kI8, 0, LinearPath::kQd8Qc8w, 0},
      {DType::kI8, 0, LinearPath::kF32Qc8w, xnn::PathBit(LinearPath::kQd8Qc8w)},
      {DType::kI4, 0, LinearPath::kQd8Qc4w, 0},
      {DType::kI4, 0, LinearPath::kF32Qc4w, xnn::PathBit(LinearPath::kQd8Qc4w)},
      {DType::kF16, 0, LinearPath::kF16, 0},
      {DType::kI4, 32, LinearPath::kQd8Qb4w, 0},
  };
  // Not the paths this CPU lacks, nor those whose XNNPACK kernels are wrong on it (kernel_check.h).
  std::vector<PathCase> paths;
  for (const PathCase& c : all) {
    if (c.path == LinearPath::kF16 && !CpuHasF16Gemm()) continue;
    // An f32-activation path is reached only past a trusted qd8 path (linear.cc, Chain).
    const bool past_qd8 = c.path == LinearPath::kF32Qc8w || c.path == LinearPath::kF32Qc4w;
    const LinearPath qd8 =
        c.path == LinearPath::kF32Qc8w ? LinearPath::kQd8Qc8w : LinearPath::kQd8Qc4w;
    if (xnn::PathTrusted(c.path) && (!past_qd8 || xnn::PathTrusted(qd8))) paths.push_back(c);
  }
  return paths;
}

}  // namespace tern::xnn_test
