#include "runtime/kernels/xnnpack/attention.h"

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cmath>
#include <cstring>

#include "runtime/kernels/vectorized/attention.h"
#include "runtime/kernels/vectorized/vector_math.h"
#include "runtime/kernels/xnnpack/allocator.h"

namespace tern::xnn {

namespace {

size_t Align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Offsets of the Q, K, V, O blocks in the gather buffer (floats).
struct GatherLayout {
  size_t q, k, v, o, bytes;
};

GatherLayout Gather(const AttentionShape& s) {
  const size_t f = sizeof(float);
  const size_t queries = static_cast<size_t>(s.heads * s.max_queries * s.d_head) * f;
  const size_t keys = static_cast<size_t>(s.heads * s.max_keys * s.d_head) * f;
  GatherLayout l;
  l.q = 0;
  l.k = Align64(queries);
  l.v = l.k + Align64(keys);
  l.o = l.v + Align64(keys);
  l.bytes = l.o + Align64(queries) + XNN_EXTRA_BYTES;
  return l;
}

xnn_status CreateOperators(Attention* a) {
  xnn_status s = xnn_create_batch_matrix_multiply_nc_f32(XNN_FLAG_TRANSPOSE_B, &a->qk);
  if (s == xnn_status_success) s = xnn_create_batch_matrix_multiply_nc_f32(0, &a->av);
  if (s == xnn_status_success) s = xnn_create_softmax_nc_f32(0, &a->softmax);
  return s;
}

bool Ok(xnn_status s) { return s == xnn_status_success; }

// Reshapes for tq queries and n keys; false when a workspace would not fit.
bool Reshape(Attention& a, int64_t tq, int64_t n) {
  if (a.reshaped[0] == tq && a.reshaped[1] == n) return true;
  a.reshaped[0] = -1;
  const size_t batch[1] = {static_cast<size_t>(a.shape.heads)};
  const size_t m = static_cast<size_t>(tq), keys = static_cast<size_t>(n),
               dh = static_cast<size_t>(a.shape.d_head);
  size_t qk_bytes = 0, qk_align = 0, av_bytes = 0, av_align = 0;
  if (!Ok(xnn_reshape_batch_matrix_multiply_nc_f32(a.qk, 1, batch, batch, m, dh, keys, &qk_bytes,
                                                   &qk_align, a.pool)) ||
      !Ok(xnn_reshape_batch_matrix_multiply_nc_f32(a.av, 1, batch, batch, m, keys, dh, &av_bytes,
                                                   &av_align, a.pool)) ||
      !Ok(xnn_reshape_softmax_nc_f32(a.softmax, keys, keys, keys, batch[0] * m, a.pool))) {
    return false;
  }
  if (qk_bytes > a.qk_workspace_bytes || av_bytes > a.av_workspace_bytes || qk_align > 64 ||
      av_align > 64) {
    return false;
  }
  a.reshaped[0] = tq;
  a.reshaped[1] = n;
  return true;
}

TERN_VECTOR_CLONES
// Head h of the block is column slice h / group of src (group > 1: K/V heads shared by groups of
// query heads, copied once per query head so the batched products keep one shape).
void GatherHeads(const float* src, int64_t ld, int64_t rows, int64_t heads, int64_t group,
                 int64_t dh, float scale, float* dst) {
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* from = src + r * ld + (h / group) * dh;
      float* to = dst + (h * rows + r) * dh;
      for (int64_t c = 0; c < dh; ++c) to[c] = from[c] * scale;
    }
  }
}

// scores [heads, tq, n] += the T5 bias of each head for distance j - (query_position + i).
TERN_VECTOR_CLONES
void AddBias(const ref::RelativePositions& rel, int64_t heads, int64_t tq, int64_t n,
             float* scores) {
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < tq; ++i) {
      const float* b = rel.bias + h * rel.bias_stride + rel.bias_center - (rel.query_position + i);
      float* row = scores + (h * tq + i) * n;
      for (int64_t j = 0; j < n; ++j) row[j] += b[j];
    }
  }
}

bool Batched(Attention& a, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
             int64_t ldv, int64_t tq, int64_t n, float* out, int64_t ldo,
             const ref::RelativePositions* rel, int64_t group) {
  const AttentionShape& s = a.shape;
  if (!Reshape(a, tq, n)) return false;
  const GatherLayout l = Gather(s);
  float* qh = a.gather + l.q / sizeof(float);
  float* kh = a.gather + l.k / sizeof(float);
  float* vh = a.gather + l.v / sizeof(float);
  float* oh = a.gather + l.o / sizeof(float);
  const int64_t dh = s.d_head;
  GatherHeads(q, ldq, tq, s.heads, 1, dh, 1.0f / std::sqrt(static_cast<float>(dh)), qh);
  GatherHeads(k, ldk, n, s.heads, group, dh, 1.0f, kh);
  GatherHeads(v, ldv, n, s.heads, group, dh, 1.0f, vh);
  // With a pool: the way measured faster for this session's attention (pool_governor.h; the
  // operators were reshaped for the pool and walk the same tiles without it).
  const float units = static_cast<float>(tq * n);
  auto products = [&](bool pooled) {
    pthreadpool* pool = pooled ? a.pool : nullptr;
    if (!Ok(xnn_setup_batch_matrix_multiply_nc_f32(a.qk, a.qk_workspace, qh, kh, a.scores)) ||
        !Ok(xnn_run_operator(a.qk, pool))) {
      return false;
    }
    if (rel != nullptr && rel->bias != nullptr) AddBias(*rel, s.heads, tq, n, a.scores);
    return Ok(xnn_setup_softmax_nc_f32(a.softmax, a.scores, a.scores)) &&
           Ok(xnn_run_operator(a.softmax, pool)) &&
           Ok(xnn_setup_batch_matrix_multiply_nc_f32(a.av, a.av_workspace, a.scores, vh, oh)) &&
           Ok(xnn_run_operator(a.av, pool));
  };
  const bool ok = a.pool != nullptr && a.pool_budget != nullptr
                      ? RunGoverned(a.pool_choice, units, a.pool_budget, a.pool, products)
                      : products(a.pool != nullptr);
  if (!ok) {
    a.reshaped[0] = -1;
    return false;
  }
  for (int64_t h = 0; h < s.heads; ++h) {
    for (int64_t i = 0; i < tq; ++i) {
      std::memcpy(out + i * ldo + h * dh, oh + (h * tq + i) * dh,
                  static_cast<size_t>(dh) * sizeof(float));
    }
  }
  return true;
}

}  // namespace

Status MeasureAttention(const AttentionShape& shape, AttentionNeeds* needs) {
  *needs = AttentionNeeds();
  TERN_RETURN_IF_ERROR(Initialize());
  Attention a;
  a.shape = shape;
  xnn_status s;
  size_t qk_bytes = 0, qk_align = 0, av_bytes = 0, av_align = 0;
  {
    MeasureScope scope(SIZE_MAX);
    s = CreateOperators(&a);
    needs->xnn_bytes = scope.bytes();
    if (s == xnn_status_success) {
      const size_t batch[1] = {static_cast<size_t>(shape.heads)};
      const size_t m = static_cast<size_t>(shape.max_queries),
                   n = static_cast<size_t>(shape.max_keys);
      const size_t dh = static_cast<size_t>(shape.d_head);
      s = xnn_reshape_batch_matrix_multiply_nc_f32(a.qk, 1, batch, batch, m, dh, n, &qk_bytes,
                                                   &qk_align, nullptr);
      if (s == xnn_status_success) {
        s = xnn_reshape_batch_matrix_multiply_nc_f32(a.av, 1, batch, batch, m, n, dh, &av_bytes,
                                                     &av_align, nullptr);
      }
    }
    xnn_delete_operator(a.qk);
    xnn_delete_operator(a.av);
    xnn_delete_operator(a.softmax);
  }
  if (s != xnn_status_success || qk_align > 64 || av_align > 64) {
    // No batched attention here: the loops run every call, nothing is planned for it.
    *needs = AttentionNeeds();
    return Status::Ok();
  }
  needs->gather_bytes = Gather(shape).bytes;
  needs->scores_bytes =
      static_cast<size_t>(shape.heads * shape.max_queries * shape.max_keys) * sizeof(float) +
      XNN_EXTRA_BYTES;
  needs->qk_workspace_bytes = qk_bytes;
  needs->av_workspace_bytes = av_bytes;
  return Status::Ok();
}

Status CreateAttention(const AttentionShape& shape, Attention* a) {
  a->shape = shape;
  const xnn_status s = CreateOperators(a);
  if (s != xnn_status_success) {
    return Status::Error(
        s == xnn_status_out_of_memory ? StatusCode::kArenaTooSmall : StatusCode::kInternal,
        "XNNPACK attention operators: status %d at prepare", static_cast<int>(s));
  }
  return Status::Ok();
}

namespace {

// The loops for a subset of heads: head h as a one-head call of vec::MultiHeadAttention (its
// K/V head h / group), scoring in its own row of loop_scores. Each head's arithmetic is the
// all-heads call's, so the outputs are the same bits whichever thread runs it (as long as the
// workers' floating-point environment is the caller's: an application that sets flush-to-zero
// on its thread after Prepare changes only the calling thread's).
struct HeadLoops {
  const float *q, *k, *v;
  int64_t ldq, ldk, ldv, tq, tk, d_head, group, ldo, loop_keys;
  const ref::AttentionMask* mask;
  float* scores;
  float* out;
};

void RunHead(void* context, size_t head) {
  const HeadLoops& c = *static_cast<const HeadLoops*>(context);
  const int64_t h = static_cast<int64_t>(head);
  const int64_t kv = (h / c.group) * c.d_head;
  vec::MultiHeadAttention(c.q + h * c.d_head, c.ldq, c.k + kv, c.ldk, c.v + kv, c.ldv, c.tq, c.tk,
                          1, c.d_head, *c.mask, c.scores + h * c.loop_keys, c.out + h * c.d_head,
                          c.ldo, nullptr, 1);
}

// A decoder step's attention over its caches (or a causal prompt's) on the pool, head by head,
// or on the calling thread, as the governor measures faster; false: not a call for the pool (the
// caller runs the loops).
// Relative positions keep to the calling thread (T5's bias and Shaw's scratch are per call).
bool LoopsOnPool(Attention& a, const float* q, int64_t ldq, const float* k, int64_t ldk,
                 const float* v, int64_t ldv, int64_t tq, int64_t tk, int64_t heads, int64_t d_head,
                 const ref::AttentionMask& mask, float* scores, float* out, int64_t ldo,
                 const ref::RelativePositions* rel, int64_t kv_heads) {
  if (a.loop_scores == nullptr || a.pool == nullptr || a.pool_budget == nullptr || rel != nullptr ||
      heads < 2 || heads > a.shape.heads || tk > a.shape.loop_keys) {
    return false;
  }
  const int64_t visible = mask.key_length < tk ? mask.key_length : tk;
  const float units = static_cast<float>(heads * tq * (visible > 0 ? visible : 1));
  return RunGoverned(a.loop_choice.For(tq), units, a.pool_budget, a.pool, [&](bool pooled) {
    if (pooled) {
      HeadLoops c{q,      k,
                  v,      ldq,
                  ldk,    ldv,
                  tq,     tk,
                  d_head, ref::HeadGroup(heads, kv_heads),
                  ldo,    a.shape.loop_keys,
                  &mask,  a.loop_scores,
                  out};
      pthreadpool_parallelize_1d(a.pool, RunHead, &c, static_cast<size_t>(heads), 0);
    } else {
      vec::MultiHeadAttention(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo,
                              nullptr, kv_heads);
    }
    return true;
  });
}

// vec::MultiHeadAttention for one K/V element type (an overload set cannot be passed as such).
template <typename KV>
void Loops(const float* q, int64_t ldq, const KV* k, int64_t ldk, const KV* v, int64_t ldv,
           int64_t tq, int64_t tk, int64_t heads, int64_t d_head, const ref::AttentionMask& mask,
           float* scores, float* out, int64_t ldo, const ref::RelativePositions* rel,
           int64_t kv_heads) {
  vec::MultiHeadAttention(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo,
                          rel, kv_heads);
}

// A decoder step's rows x heads as pool tasks (StepAttention): task i is head i % heads of row
// i / heads, one head of vec::MultiHeadAttention as RunHead, scoring in the row of loop_scores
// of the thread that runs it.
template <typename KV>
struct StepLoops {
  const float* q;
  const KV *k, *v;
  int64_t ldq, ldk, ldv, sequence_stride, heads, d_head, group, ldo, loop_keys;
  const ref::StepKeys* keys;
  float* scores;
  float* out;
};

template <typename KV>
void RunStepHead(void* context, size_t thread, size_t task) {
  const StepLoops<KV>& c = *static_cast<const StepLoops<KV>*>(context);
  const int64_t r = static_cast<int64_t>(task) / c.heads, h = static_cast<int64_t>(task) % c.heads;
  const int64_t at = c.keys->Sequence(r) * c.sequence_stride + (h / c.group) * c.d_head;
  ref::AttentionMask mask;
  mask.key_length = c.keys->Visible(r);
  vec::MultiHeadAttention(c.q + r * c.ldq + h * c.d_head, c.ldq, c.k + at, c.ldk, c.v + at, c.ldv,
                          1, c.keys->Keys(r), 1, c.d_head, mask,
                          c.scores + static_cast<int64_t>(thread) * c.loop_keys,
                          c.out + r * c.ldo + h * c.d_head, c.ldo, nullptr, 1);
}

template <typename KV>
void Step(Attention& a, const float* q, int64_t ldq, const KV* k, int64_t ldk, const KV* v,
          int64_t ldv, int64_t sequence_stride, const ref::StepKeys& keys, int64_t rows,
          int64_t heads, int64_t d_head, float* scores, float* out, int64_t ldo, int64_t kv_heads) {
  const size_t threads = a.pool != nullptr ? pthreadpool_get_threads_count(a.pool) : 1;
  const int64_t score_rows = a.loop_score_rows > 0 ? a.loop_score_rows : a.shape.heads;
  if (a.loop_scores == nullptr || a.pool_budget == nullptr || threads < 2 ||
      static_cast<int64_t>(threads) > score_rows || rows * heads < 2 ||
      keys.capacity > a.shape.loop_keys) {
    ref::StepRowByRow(Loops<KV>, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads, d_head,
                      scores, out, ldo, kv_heads);
    return;
  }
  // Work: the keys every row's heads see (the time of a step's attention is in proportion).
  int64_t visible = 0;
  for (int64_t r = 0; r < rows; ++r) visible += keys.Visible(r) > 0 ? keys.Visible(r) : 1;
  const float units = static_cast<float>(heads * visible);
  RunGoverned(a.step_choice.For(rows), units, a.pool_budget, a.pool, [&](bool pooled) {
    if (pooled) {
      StepLoops<KV> c{q,
                      k,
                      v,
                      ldq,
                      ldk,
                      ldv,
                      sequence_stride,
                      heads,
                      d_head,
                      ref::HeadGroup(heads, kv_heads),
                      ldo,
                      a.shape.loop_keys,
                      &keys,
                      a.loop_scores,
                      out};
      pthreadpool_parallelize_1d_with_thread(a.pool, RunStepHead<KV>, &c,
                                             static_cast<size_t>(rows * heads), 0);
    } else {
      ref::StepRowByRow(Loops<KV>, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads,
                        d_head, scores, out, ldo, kv_heads);
    }
    return true;
  });
}

}  // namespace

void StepAttention(Attention& a, const float* q, int64_t ldq, const float* k, int64_t ldk,
                   const float* v, int64_t ldv, int64_t sequence_stride, const ref::StepKeys& keys,
                   int64_t rows, int64_t heads, int64_t d_head, float* scores, float* out,
                   int64_t ldo, int64_t kv_heads) {
  Step(a, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads, d_head, scores, out, ldo,
       kv_heads);
}

void StepAttention(Attention& a, const float* q, int64_t ldq, const Half* k, int64_t ldk,
                   const Half* v, int64_t ldv, int64_t sequence_stride, const ref::StepKeys& keys,
                   int64_t rows, int64_t heads, int64_t d_head, float* scores, float* out,
                   int64_t ldo, int64_t kv_heads) {
  Step(a, q, ldq, k, ldk, v, ldv, sequence_stride, keys, rows, heads, d_head, scores, out, ldo,
       kv_heads);
}

void MultiHeadAttention(Attention& a, const float* q, int64_t ldq, const float* k, int64_t ldk,
                        const float* v, int64_t ldv, int64_t tq, int64_t tk, int64_t heads,
                        int64_t d_head, const ref::AttentionMask& mask, float* scores, float* out,
                        int64_t ldo, const ref::RelativePositions* rel, int64_t kv_heads) {
  const int64_t visible = mask.key_length < tk ? mask.key_length : tk;
  const bool shaw = rel != nullptr && rel->shaw_key != nullptr;
  if (a.qk != nullptr && tq > 1 && !mask.causal && !shaw && visible > 0 && heads == a.shape.heads &&
      d_head == a.shape.d_head && tq <= a.shape.max_queries && visible <= a.shape.max_keys &&
      Batched(a, q, ldq, k, ldk, v, ldv, tq, visible, out, ldo, rel,
              ref::HeadGroup(heads, kv_heads))) {
    return;
  }
  if (LoopsOnPool(a, q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo, rel,
                  kv_heads)) {
    return;
  }
  vec::MultiHeadAttention(q, ldq, k, ldk, v, ldv, tq, tk, heads, d_head, mask, scores, out, ldo,
                          rel, kv_heads);
}

}  // namespace tern::xnn
