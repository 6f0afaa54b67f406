// The fully-connected paths of the XNNPACK backend, one table row each (linear_paths.cc): what
// differs between them (how activations reach the operator, the scratch each needs, who adds
// the bias) and the XNNPACK calls that create, reshape and set up each operator. Internal to
// kernels/xnnpack/linear.cc, which plans, creates and runs them.
#pragma once

#include <xnnpack.h>

#include <cstddef>
#include <cstdint>

#include "runtime/kernels/xnnpack/linear.h"

namespace tern::xnn {

inline size_t Align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// How a path's operator takes its activations: decides what RunLinear does around it, the
// strides it is created with and what the per-session context must hold (ContextNeeds::Add).
enum class Activations : uint8_t {
  kNone,  // kReference: no operator
  kF32,   // the caller's x and y, at the strides of the spec
  kQd8,   // x quantized per row into the context's int8 buffer (convert_nc_f32_qd8) first
  kF16,   // x converted to f16 into the context's buffer, the f16 result converted back into y
};

// The small part of a path's scratch: what it hands XNNPACK besides the kernel.
enum class Small : uint8_t {
  kNothing,
  kF16Bias,     // the bias in f16: XNNPACK takes it so next to f16 weights
  kRowScales,   // an f32 scale per row
  kBlockScales  // a bf16 scale per block, as XNNPACK's blockwise int4 takes them
};

// Whether the file's int4 nibbles (two's complement, a padding nibble ending odd rows) are
// repacked into scratch for the operator.
enum class Repack : uint8_t {
  kNever,
  // Zero point 0, the file's signed nibbles; only odd K is repacked: the padding nibble, which
  // XNNPACK reads as a weight, cleared.
  kClearPadding,
  // The operator reads nibbles as unsigned with zero point 8: always repacked, each nibble's top
  // bit flipped (a cleared padding nibble becomes 8, a zero weight).
  kToUnsigned,
};

// Who adds the bias. XNNPACK 2024-11's f32_qc8w / f32_qc4w operators multiply the bias by the
// channel's weight scale (measured: y = x W^T + scale * b): those paths get no bias from XNNPACK;
// RunLinear adds it.
enum class BiasBy : uint8_t { kOperator, kRunLinear };

// What CreateOperator hands XNNPACK, in its units.
struct Operands {
  size_t k = 0, n = 0;
  size_t input_stride = 0, output_stride = 0;
  size_t block_size = 0;  // kQd8Qb4w
  uint8_t zero_point = 0;
  const void* kernel = nullptr;
  const void* scales = nullptr;  // f32 per row, or bf16 per block
  const void* bias = nullptr;    // f32, or f16 next to f16 weights
  // Where the packed weights go (weights_cache.h); null: the operator packs its own copy.
  xnn_weights_cache_t cache = nullptr;
};

// Everything that differs between the paths, one row per LinearPath in its order: the path, its
// XNNPACK operator, the enums above, then the operator's create and reshape and the setup of its
// activations (one of f32, qd8, f16; the others null).
struct PathTraits {
  LinearPath path;
  const char* name;  // the XNNPACK operator, for reports
  Activations activations;
  Small small;
  Repack repack;
  BiasBy bias_by;
  xnn_status (*create)(const Operands& o, xnn_operator_t* op);
  xnn_status (*reshape)(xnn_operator_t op, size_t rows, pthreadpool_t pool);
  xnn_status (*setup_f32)(xnn_operator_t op, const float* x, float* y);
  xnn_status (*setup_qd8)(xnn_operator_t op, const int8_t* x, float* y,
                          const xnn_quantization_params* params);
  xnn_status (*setup_f16)(xnn_operator_t op, const void* x, void* y);
};

// The row of `path`.
const PathTraits& Traits(LinearPath path);

// Whether fully_connected_nc_f32_qc4w is used for rows of `cols` weights (not odd ones on ARM).
bool F32Qc4wTakes(int64_t cols);

// Prepare-time inputs of a path that differ from the file's bytes. Scratch layout: the small
// part (scales, f16 bias) first, then the repacked kernel when the path needs one.
struct ScratchLayout {
  size_t small_bytes = 0;   // scales or f16 bias
  size_t kernel_bytes = 0;  // repacked int4 nibbles
  size_t total() const { return small_bytes + kernel_bytes; }
};
ScratchLayout Layout(LinearPath path, const LinearSpec& spec);

// Fills scratch (Layout(path, spec).total() bytes) and says what to hand XNNPACK's create for
// `path` (linear.cc). With repack_kernel false (the dry run) the kernel stays the file's bytes.
// whole_n: the output rows of the whole layer (spec may be one part of it).
Operands PrepareOperands(LinearPath path, const LinearSpec& spec, int64_t whole_n, uint8_t* scratch,
                         bool repack_kernel);

// The context's activation buffers a call of `rows` rows needs (ContextNeeds::Add plans them,
// RunLinear checks them).
inline size_t Qd8InputBytes(size_t rows, size_t k) { return rows * k + XNN_EXTRA_BYTES; }
inline size_t Qd8ParamsBytes(size_t rows) {
  return (rows + XNN_EXTRA_QUANTIZATION_PARAMS) * sizeof(xnn_quantization_params);
}
inline size_t F16Bytes(size_t rows, size_t channels) {
  return rows * channels * sizeof(uint16_t) + XNN_EXTRA_BYTES;
}

}  // namespace tern::xnn
