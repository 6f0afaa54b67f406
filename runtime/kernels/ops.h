// The kernels the layers call. Layers never know which backend runs:
//  - Linear: the layer's prepared XNNPACK operator when it has one (runtime/kernels/xnnpack/,
//    built with TERN_WITH_XNNPACK and chosen per session by Limits::backend); on that backend a
//    layer XNNPACK has no operator for runs the vectorizable loops (kernels/vectorized/linear.h);
//    on the reference backend, the portable reference kernel. A call XNNPACK cannot run is
//    answered by the reference kernel. Linears: layers that read one input, as one group where
//    XNNPACK's backend can (one conversion of the input, one fork-join), else one Linear each.
//  - MultiHeadAttention, LayerNorm, Activate: the reference kernels, or the XNNPACK backend's
//    choice (attention through batch_matrix_multiply for many queries and the vectorizable
//    loops of kernels/vectorized/ for one; LayerNorm and activations as those loops), per the
//    session's Kernels. StepAttention is a decoder step's attention for all its rows in one
//    call (on XNNPACK's backend with threads: one fork-join over rows x heads).
//  - Embedding, positions, rotary rotations, SwiGLU's product and the beam's cache gather: the
//    reference kernels (row copies and one multiply-add per element, the same on both backends).
#pragma once

#include <cstdint>
#include <type_traits>

#include "runtime/kernels/reference/activations.h"
#include "runtime/kernels/reference/attention.h"
#include "runtime/kernels/reference/embedding.h"
#include "runtime/kernels/reference/gather.h"
#include "runtime/kernels/reference/layer_norm.h"
#include "runtime/kernels/reference/linear.h"
#include "runtime/kernels/reference/positions.h"
#include "runtime/kernels/reference/relative_position.h"
#include "runtime/kernels/reference/rotary.h"
#include "runtime/kernels/reference/softmax.h"
#include "runtime/kernels/vectorized/activations.h"
#include "runtime/kernels/vectorized/half.h"
#include "runtime/kernels/vectorized/layer_norm.h"
#include "runtime/kernels/vectorized/linear.h"
#include "runtime/kernels/vectorized/linear_qd8.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/xnnpack/attention.h"
#include "runtime/kernels/xnnpack/linear.h"
#include "runtime/kernels/xnnpack/row_loops.h"
#define TERN_OPS_XNNPACK 1
#else
#define TERN_OPS_XNNPACK 0
#endif

namespace tern {

namespace xnn {
struct Attention;
struct LinearKernel;
struct RowLoops;
}  // namespace xnn

// A backend's prepared linear layer (an XNNPACK operator in the arena); layers only pass it on.
using LinearKernel = xnn::LinearKernel;

namespace ops {

using ref::AddRows;
using ref::ApplyRotary;
using ref::Embedding;
using ref::GatherRowsInGroups;
using ref::Linear;
using ref::Multiply;
using ref::RotaryTables;
using ref::SinusoidalPositions;
using ref::T5BiasByDistance;

// Which kernels a session runs besides its linear layers' (set at prepare; the default is the
// reference).
struct Kernels {
  xnn::Attention* attention = nullptr;  // XNNPACK backend's attention; null: reference
  bool vectorized = false;              // LayerNorm and activations: vectorizable float loops
  // With a thread pool on XNNPACK's backend: LayerNorm, residual adds and activations split by
  // rows over it when their governors measure that faster (xnn::ForRows); null: the calling
  // thread.
  xnn::RowLoops* rows = nullptr;
};

// y = x W^T + b (see ref::Linear). kernel: the layer's XNNPACK operator, or null.
inline void Linear(const float* x, int64_t m, int64_t ldx, const WeightView& w, const float* bias,
                   xnn::LinearKernel* kernel, float* y, int64_t ldy) {
#if TERN_OPS_XNNPACK
  if (kernel != nullptr) {
    if (kernel->op == nullptr) {  // no XNNPACK operator for this weight: the vectorizable
      // loops, integer ones for int8 / int4 (as XNNPACK's qd8 paths: linear_qd8.h)
      if (kernel->panel_weight.data != nullptr) {  // packed for AVX2's loops (linear_sign.h)
        xnn::RunQd8Loops(*kernel, x, m, ldx, kernel->panel_weight, bias, y, ldy);
      } else if (vec::LinearQd8Takes(w)) {
        xnn::RunQd8Loops(*kernel, x, m, ldx, w, bias, y, ldy);
      } else {
        xnn::RunLinearLoops(*kernel, vec::Linear, x, m, ldx, w, bias, y, ldy);
      }
      return;
    }
    if (xnn::RunLinear(*kernel, x, m, ldx, y, ldy)) return;
  }
#else
  (void)kernel;
#endif
  ref::Linear(x, m, ldx, w, bias, y, ldy);
}

// One layer of a Linears call: its weights, bias, XNNPACK record (or null) and output.
struct LinearTarget {
  const WeightView* weight;
  const float* bias;
  xnn::LinearKernel* kernel;
  float* y;
  int64_t ldy;
};
// Most layers one Linears call takes.
inline constexpr int kMaxLinearGroup = 3;

// Linear for each of `count` layers (at most kMaxLinearGroup) that read the same x, with the
// same outputs: on XNNPACK's backend as one group when it can (xnn::RunLinears: x converted once,
// one fork-join for all), else one call per layer.
inline void Linears(const float* x, int64_t m, int64_t ldx, const LinearTarget* targets,
                    int count) {
#if TERN_OPS_XNNPACK
  static_assert(kMaxLinearGroup == xnn::kMaxGroup, "one limit for both");
  if (count >= 2 && count <= kMaxLinearGroup) {
    xnn::LinearKernel* kernels[kMaxLinearGroup];
    float* ys[kMaxLinearGroup];
    int64_t ldys[kMaxLinearGroup];
    bool all = true;
    for (int i = 0; i < count; ++i) {
      all = all && targets[i].kernel != nullptr;
      kernels[i] = targets[i].kernel;
      ys[i] = targets[i].y;
      ldys[i] = targets[i].ldy;
    }
    if (all && xnn::RunLinears(kernels, count, x, m, ldx, ys, ldys)) return;
    if (all) {  // layers without an operator: int4 per row on tern's loops, x quantized once
      const WeightView* weights[kMaxLinearGroup];
      const float* biases[kMaxLinearGroup];
      for (int i = 0; i < count; ++i) {
        const WeightView& panels = targets[i].kernel->panel_weight;
        weights[i] = panels.data != nullptr ? &panels : targets[i].weight;
        biases[i] = targets[i].bias;
      }
      if (xnn::RunQd8LoopsGroup(kernels, weights, biases, count, x, m, ldx, ys, ldys)) return;
    }
  }
#endif
  for (int i = 0; i < count; ++i) {
    const LinearTarget& t = targets[i];
    Linear(x, m, ldx, *t.weight, t.bias, t.kernel, t.y, t.ldy);
  }
}

// Whether a layer's calls quantize each row of activations to int8 first (XNNPACK's qd8 paths,
// and the integer loops that run int8 / int4 layers without an operator: vec::LinearQd8)
// instead of computing in float.
inline bool QuantizesRowsToInt8(const xnn::LinearKernel* kernel) {
#if TERN_OPS_XNNPACK
  return kernel != nullptr &&
         (kernel->path == xnn::LinearPath::kQd8Qc8w || kernel->path == xnn::LinearPath::kQd8Qc4w ||
          (kernel->op == nullptr && (kernel->dtype == DType::kI8 || kernel->dtype == DType::kI4)));
#else
  (void)kernel;
  return false;
#endif
}

// See ref::MultiHeadAttention.
inline void MultiHeadAttention(const Kernels& kernels, const float* q, int64_t ldq, const float* k,
                               int64_t ldk, const float* v, int64_t ldv, int64_t tq, int64_t tk,
                               int64_t heads, int64_t d_head, const ref::AttentionMask& mask,
                               float* scores, float* out, int64_t ldo,
                               const ref::RelativePositions* rel = nullptr, int64_t kv_heads = 0) {
#if TERN_OPS_XNNPACK
  if (kernels.attention != nullptr) {
    xnn::MultiHeadAttention(*kernels.attention, q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask,
                            scores, out, ldo, rel, kv_heads);
    return;
  }
#else
  (void)kernels;
#endif
  ref::MultiHeadAttention(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo,
                          rel, kv_heads);
}

// See ref::StepAttention. KV: float, or Half for fp16 caches (Limits::kv_cache = kFloat16).
template <typename KV>
inline void StepAttention(const Kernels& kernels, const float* q, int64_t ldq, const KV* k,
                          int64_t ldk, const KV* v, int64_t ldv, int64_t sequence_stride,
                          const ref::StepKeys& keys, int64_t rows, int64_t heads, int64_t d_head,
                          float* scores, float* out, int64_t ldo, int64_t kv_heads = 0) {
#if TERN_OPS_XNNPACK
  if (kernels.attention != nullptr) {
    xnn::StepAttention(*kernels.attention, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows,
                       heads, d_head, scores, out, ldo, kv_heads);
    return;
  }
#else
  (void)kernels;
#endif
  ref::StepAttention(q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads, d_head, scores,
                     out, ldo, kv_heads);
}

// y[0, n) = x[0, n) rounded to fp16 (to nearest even; beyond fp16's range, +-65504): a K/V row
// into an fp16 cache. The same bits from either kernel.
inline void ToHalf(const Kernels& kernels, const float* x, int64_t n, Half* y) {
  if (kernels.vectorized) {
    vec::ToHalf(x, n, y);
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = tern::ToHalf(vec::Saturate(x[i]));
}

#if TERN_OPS_XNNPACK
// Runs rows(begin, end) over [0, count) split over the session's pool when kernels.rows' governor
// for `kind` measures that faster (xnn::ForRows); false: the caller runs the loop itself.
template <typename Rows>
bool SplitRows(const Kernels& kernels, xnn::RowLoop kind, int64_t count, float units, Rows&& rows) {
  if (kernels.rows == nullptr) return false;
  using R = std::remove_reference_t<Rows>;
  auto call = [](void* f, int64_t begin, int64_t end) { (*static_cast<R*>(f))(begin, end); };
  return xnn::ForRows(*kernels.rows, kind, count, units, call, &rows);
}
#endif

// See ref::LayerNorm.
inline void LayerNorm(const Kernels& kernels, const float* x, int64_t m, int64_t d,
                      const float* gamma, const float* beta, float eps, ref::NormKind kind,
                      float* y) {
  if (kernels.vectorized) {
#if TERN_OPS_XNNPACK
    if (SplitRows(kernels, xnn::RowLoop::kLayerNorm, m, static_cast<float>(m * d),
                  [&](int64_t begin, int64_t end) {
                    vec::LayerNorm(x + begin * d, end - begin, d, gamma, beta, eps, kind,
                                   y + begin * d);
                  })) {
      return;
    }
#endif
    vec::LayerNorm(x, m, d, gamma, beta, eps, kind, y);
    return;
  }
  ref::LayerNorm(x, m, d, gamma, beta, eps, kind, y);
}

// x[rows, d] += y[rows, d] (see ref::AddRows): a residual.
inline void AddRows(const Kernels& kernels, float* x, const float* y, int64_t rows, int64_t d) {
#if TERN_OPS_XNNPACK
  if (SplitRows(kernels, xnn::RowLoop::kAdd, rows, static_cast<float>(rows * d),
                [&](int64_t begin, int64_t end) {
                  ref::AddRows(x + begin * d, y + begin * d, end - begin, d);
                })) {
    return;
  }
#else
  (void)kernels;
#endif
  ref::AddRows(x, y, rows, d);
}

// See ref::Activate. With a pool the elements are split at multiples of 64, so that every
// element is computed where the whole call's vector loop computes it.
inline void Activate(const Kernels& kernels, ref::Activation act, float* x, int64_t n) {
  if (kernels.vectorized) {
#if TERN_OPS_XNNPACK
    constexpr int64_t kBlock = 64;
    if (SplitRows(kernels, xnn::RowLoop::kActivate, (n + kBlock - 1) / kBlock,
                  static_cast<float>(n), [&](int64_t begin, int64_t end) {
                    const int64_t last = end * kBlock < n ? end * kBlock : n;
                    vec::Activate(act, x + begin * kBlock, last - begin * kBlock);
                  })) {
      return;
    }
#endif
    vec::Activate(act, x, n);
    return;
  }
  ref::Activate(act, x, n);
}

}  // namespace ops
}  // namespace tern
