// Multi-head attention for the XNNPACK backend: the contract of ref::MultiHeadAttention
// (runtime/kernels/reference/attention.h), computed two ways, picked per call:
//
//  - many queries, no causal mask (the encoder): XNNPACK's batch_matrix_multiply. Heads are
//    column slices of [t, d_model] rows, so each call gathers Q (pre-scaled by 1/sqrt(d_head)),
//    K and V into contiguous [heads, t, d_head] blocks, runs S = Q K^T (one batch per head),
//    softmax_nc_f32 over each row of S, O = S V, and scatters O back. All buffers and both
//    operators' workspaces are planned in the arena; reshapes happen only when the shape
//    changes and allocate nothing.
//  - one query (a decoder step), or a causal mask: our own vectorizable loops, skipping keys the
//    query cannot see.
//
// Relative positions (ref::RelativePositions): a T5 bias is added to the score buffer between
// Q K^T and the softmax on the batched path and to each score in the loops; Shaw's a^K / a^V
// terms run in the loops only (one extra d_head dot product per clipped distance and query,
// and one axpy per distance for the values), on either path's shapes.
//
// Measured on this project's 2-core x86 machine (Zen 4, AVX-512), 8 heads x 64, CPU time per
// call (other processes running):
//   1 query x 32 keys:    loops 4.2 us,  batch_matrix_multiply (+ gathers) 7.8-8.8 us
//   1 query x 128 keys:   loops 18.5 us, batch_matrix_multiply 39-40 us
//   32 x 32:              loops 130 us,  batch_matrix_multiply 41 us
//   128 x 128:            loops 2200 us, batch_matrix_multiply 470-490 us
// For one query the products are tiny (64-value dot products) and the gathers and XNNPACK's
// packing of K into its workspace cost more than they save.
//
// Results agree with the reference to float rounding (different summation orders, scale
// applied to Q instead of to the scores, XNNPACK's exp approximation in softmax).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/kernels/reference/attention.h"
#include "runtime/kernels/vectorized/attention.h"
#include "runtime/kernels/xnnpack/pool_governor.h"

struct xnn_operator;
struct pthreadpool;

namespace tern::xnn {

// With a pool of 2 to kMaxAttentionParts threads, the batched path's heads are split into one
// part per thread (AttentionParts), each with operators and workspaces of its own, and a call
// runs each part (gather, Q K^T, softmax, S V, scatter of its heads) as one pool task. With one
// set of operators on the pool, XNNPACK tiled each of the three products over the threads while
// the gathers and scatters stayed on the calling thread: the encoder's attention took the same
// time with two threads as with one (base model, 16 sentences). Each head is computed by the
// same micro-kernels either way: the same bits.
inline constexpr int kMaxAttentionParts = 8;
// threads when 2 <= threads <= kMaxAttentionParts and heads >= threads, else 1.
int AttentionParts(int threads, int64_t heads);
// The first head of part p of `parts` (p == parts: heads).
inline int64_t HeadBegin(int64_t heads, int parts, int p) { return heads * p / parts; }

struct AttentionShape {
  int64_t heads = 0;
  int64_t d_head = 0;
  int64_t max_queries = 0;  // most queries of a batched call (the encoder's max source length)
  int64_t max_keys = 0;
  int64_t loop_keys = 0;  // most keys of a call of the loops (backend.h's AttentionCall)
  int32_t parts = 1;      // AttentionParts
};

struct AttentionNeeds {
  size_t xnn_bytes = 0;           // arena bytes of the three operators (of every part)
  size_t gather_bytes = 0;        // Q, K, V, O blocks
  size_t scores_bytes = 0;        // [heads, queries, keys]
  size_t qk_workspace_bytes = 0;  // every part's, each a multiple of 64 bytes
  size_t av_workspace_bytes = 0;
};

// Dry run: creates the operators up to their memory requests and reshapes them for the largest
// shape to learn their workspaces (allocator.h's MeasureScope).
Status MeasureAttention(const AttentionShape& shape, AttentionNeeds* needs);

// Per session, in the arena. A zero-initialized one (no operators) runs the loops only.
struct Attention {
  // Per part of the heads (shape.parts): batch_matrix_multiply_nc_f32 (B transposed),
  // batch_matrix_multiply_nc_f32, softmax_nc_f32.
  xnn_operator* qk[kMaxAttentionParts] = {};
  xnn_operator* av[kMaxAttentionParts] = {};
  xnn_operator* softmax[kMaxAttentionParts] = {};
  pthreadpool* pool = nullptr;
  AttentionShape shape;
  float* gather = nullptr;
  size_t gather_bytes = 0;
  float* scores = nullptr;
  size_t scores_bytes = 0;
  void* qk_workspace = nullptr;  // part p's at p * qk_workspace_bytes / shape.parts
  size_t qk_workspace_bytes = 0;
  void* av_workspace = nullptr;
  size_t av_workspace_bytes = 0;
  int64_t reshaped[2] = {-1, -1};     // (queries, keys) the operators were last reshaped for
  PoolGovernor pool_choice;           // with a pool: whether the products and softmax use it
  PoolBudget* pool_budget = nullptr;  // the session's (xnn::Context's); set with the pool
  // With a pool: the loops' heads run as the pool's tasks, head h scoring in
  // loop_scores[h * shape.loop_keys, ...) (null: the loops run on the calling thread).
  float* loop_scores = nullptr;
  // Rows of shape.loop_keys floats in loop_scores (0: shape.heads). StepAttention on the pool
  // scores in the row of the thread running a task, so it needs one per thread.
  int64_t loop_score_rows = 0;
  // Whether the loops use the pool, by query count (a decoder step's one query against a
  // prompt's many: their work per unit differs). Both are one fork-join of a task per head (or
  // row and head), as a cut linear layer's parts are, so they take its lower threshold: with
  // the default one SmolLM-135M's step attention stayed on the calling thread up to 95 keys
  // (12-17 us, where the pool took 8-12; AMD EPYC, 2 threads).
  RowClassGovernors loop_choice{PoolGovernor::kMinCutPooledNs};
  // Whether a decoder step's attention (StepAttention) uses the pool, by its row count: one
  // fork-join for rows x heads tasks, whose share of the dispatch and join shrinks as rows grow.
  RowClassGovernors step_choice{PoolGovernor::kMinCutPooledNs};
};

// Creates the operators inside an ArenaScope; the caller has set the buffers and the pool.
Status CreateAttention(const AttentionShape& shape, Attention* attention);

// See ref::MultiHeadAttention. attention: the session's (never null on this backend).
void MultiHeadAttention(Attention& attention, const float* q, int64_t ldq, const float* k,
                        int64_t ldk, const float* v, int64_t ldv, int64_t tq, int64_t tk,
                        int64_t heads, int64_t d_head, const ref::AttentionMask& mask,
                        float* scores, float* out, int64_t ldo,
                        const ref::RelativePositions* rel = nullptr, int64_t kv_heads = 0);

// See ref::StepAttention. With the pool (when its governor measures it faster), the rows x
// heads one-head calls are the pool's tasks, each scoring in its thread's row of loop_scores;
// otherwise row by row on the calling thread. The same bits either way.
void StepAttention(Attention& attention, const float* q, int64_t ldq, const float* k, int64_t ldk,
                   const float* v, int64_t ldv, int64_t sequence_stride, const ref::StepKeys& keys,
                   int64_t rows, int64_t heads, int64_t d_head, float* scores, float* out,
                   int64_t ldo, int64_t kv_heads = 0);
// Over fp16 caches (Limits::kv_cache = kFloat16): the same, each value widened exactly.
void StepAttention(Attention& attention, const float* q, int64_t ldq, const Half* k, int64_t ldk,
                   const Half* v, int64_t ldv, int64_t sequence_stride, const ref::StepKeys& keys,
                   int64_t rows, int64_t heads, int64_t d_head, float* scores, float* out,
                   int64_t ldo, int64_t kv_heads = 0);

}  // namespace tern::xnn
