#include "runtime/kernels/xnnpack/attention.h"

#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
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

xnn_status CreateOperators(int parts, Attention* a) {
  xnn_status s = xnn_status_success;
  for (int p = 0; p < parts && s == xnn_status_success; ++p) {
    s = xnn_create_batch_matrix_multiply_nc_f32(XNN_FLAG_TRANSPOSE_B, &a->qk[p]);
    if (s == xnn_status_success) s = xnn_create_batch_matrix_multiply_nc_f32(0, &a->av[p]);
    if (s == xnn_status_success) s = xnn_create_softmax_nc_f32(0, &a->softmax[p]);
  }
  return s;
}

void DeleteOperators(Attention* a) {
  for (int p = 0; p < kMaxAttentionParts; ++p) {
    xnn_delete_operator(a->qk[p]);
    xnn_delete_operator(a->av[p]);
    xnn_delete_operator(a->softmax[p]);
  }
}

bool Ok(xnn_status s) { return s == xnn_status_success; }

// Heads of part p.
int64_t PartHeads(const AttentionShape& s, int p) {
  return HeadBegin(s.heads, s.parts, p + 1) - HeadBegin(s.heads, s.parts, p);
}

// Reshapes every part for tq queries and n keys; false when a workspace would not fit. One part
// is reshaped for the pool (XNNPACK tiles its products over it); the parts of a split for one
// thread each.
bool Reshape(Attention& a, int64_t tq, int64_t n) {
  if (a.reshaped[0] == tq && a.reshaped[1] == n) return true;
  a.reshaped[0] = -1;
  const int parts = a.shape.parts;
  pthreadpool* pool = parts == 1 ? a.pool : nullptr;
  const size_t m = static_cast<size_t>(tq), keys = static_cast<size_t>(n),
               dh = static_cast<size_t>(a.shape.d_head);
  for (int p = 0; p < parts; ++p) {
    const size_t batch[1] = {static_cast<size_t>(PartHeads(a.shape, p))};
    size_t qk_bytes = 0, qk_align = 0, av_bytes = 0, av_align = 0;
    if (!Ok(xnn_reshape_batch_matrix_multiply_nc_f32(a.qk[p], 1, batch, batch, m, dh, keys,
                                                     &qk_bytes, &qk_align, pool)) ||
        !Ok(xnn_reshape_batch_matrix_multiply_nc_f32(a.av[p], 1, batch, batch, m, keys, dh,
                                                     &av_bytes, &av_align, pool)) ||
        !Ok(xnn_reshape_softmax_nc_f32(a.softmax[p], keys, keys, keys, batch[0] * m, pool))) {
      return false;
    }
    if (qk_bytes > a.qk_workspace_bytes / static_cast<size_t>(parts) ||
        av_bytes > a.av_workspace_bytes / static_cast<size_t>(parts) || qk_align > 64 ||
        av_align > 64) {
      return false;
    }
  }
  a.reshaped[0] = tq;
  a.reshaped[1] = n;
  return true;
}

TERN_VECTOR_CLONES
// Heads [h0, h1) of the block: head h is column slice h / group of src (group > 1: K/V heads
// shared by groups of query heads, copied once per query head so the batched products keep one
// shape).
void GatherHeads(const float* src, int64_t ld, int64_t rows, int64_t h0, int64_t h1, int64_t group,
                 int64_t dh, float scale, float* dst) {
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t r = 0; r < rows; ++r) {
      const float* from = src + r * ld + (h / group) * dh;
      float* to = dst + (h * rows + r) * dh;
      for (int64_t c = 0; c < dh; ++c) to[c] = from[c] * scale;
    }
  }
}

// scores [heads, tq, n] += the T5 bias of each head in [h0, h1) for distance
// j - (query_position + i).
TERN_VECTOR_CLONES
void AddBias(const ref::RelativePositions& rel, int64_t h0, int64_t h1, int64_t tq, int64_t n,
             float* scores) {
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t i = 0; i < tq; ++i) {
      const float* b = rel.bias + h * rel.bias_stride + rel.bias_center - (rel.query_position + i);
      float* row = scores + (h * tq + i) * n;
      for (int64_t j = 0; j < n; ++j) row[j] += b[j];
    }
  }
}

// One batched call: what each part of the heads runs (RunPart).
struct BatchedCall {
  Attention* a;
  const float *q, *k, *v;
  int64_t ldq, ldk, ldv, tq, n, ldo, group;
  const ref::RelativePositions* rel;
  float* out;
  bool ok[kMaxAttentionParts];
};

// Part p's heads: gathered, S = Q K^T, bias, softmax, O = S V, scattered into out; the products
// on `pool` (null: the calling thread).
bool RunPart(const BatchedCall& c, int p, pthreadpool* pool) {
  Attention& a = *c.a;
  const AttentionShape& s = a.shape;
  const GatherLayout l = Gather(s);
  const int64_t dh = s.d_head, tq = c.tq, n = c.n;
  const int64_t h0 = HeadBegin(s.heads, s.parts, p), h1 = HeadBegin(s.heads, s.parts, p + 1);
  float* qh = a.gather + l.q / sizeof(float);
  float* kh = a.gather + l.k / sizeof(float);
  float* vh = a.gather + l.v / sizeof(float);
  float* oh = a.gather + l.o / sizeof(float);
  GatherHeads(c.q, c.ldq, tq, h0, h1, 1, dh, 1.0f / std::sqrt(static_cast<float>(dh)), qh);
  GatherHeads(c.k, c.ldk, n, h0, h1, c.group, dh, 1.0f, kh);
  GatherHeads(c.v, c.ldv, n, h0, h1, c.group, dh, 1.0f, vh);
  const size_t parts = static_cast<size_t>(s.parts);
  void* qk_workspace = static_cast<uint8_t*>(a.qk_workspace) + p * (a.qk_workspace_bytes / parts);
  void* av_workspace = static_cast<uint8_t*>(a.av_workspace) + p * (a.av_workspace_bytes / parts);
  float* scores = a.scores + h0 * tq * n;
  if (!Ok(xnn_setup_batch_matrix_multiply_nc_f32(a.qk[p], qk_workspace, qh + h0 * tq * dh,
                                                 kh + h0 * n * dh, scores)) ||
      !Ok(xnn_run_operator(a.qk[p], pool))) {
    return false;
  }
  if (c.rel != nullptr && c.rel->bias != nullptr) AddBias(*c.rel, h0, h1, tq, n, a.scores);
  if (!Ok(xnn_setup_softmax_nc_f32(a.softmax[p], scores, scores)) ||
      !Ok(xnn_run_operator(a.softmax[p], pool)) ||
      !Ok(xnn_setup_batch_matrix_multiply_nc_f32(a.av[p], av_workspace, scores, vh + h0 * n * dh,
                                                 oh + h0 * tq * dh)) ||
      !Ok(xnn_run_operator(a.av[p], pool))) {
    return false;
  }
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t i = 0; i < tq; ++i) {
      std::memcpy(c.out + i * c.ldo + h * dh, oh + (h * tq + i) * dh,
                  static_cast<size_t>(dh) * sizeof(float));
    }
  }
  return true;
}

void RunPartTask(void* context, size_t p) {
  auto* c = static_cast<BatchedCall*>(context);
  c->ok[p] = RunPart(*c, static_cast<int>(p), nullptr);
}

bool Batched(Attention& a, const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
             int64_t ldv, int64_t tq, int64_t n, float* out, int64_t ldo,
             const ref::RelativePositions* rel, int64_t group) {
  if (!Reshape(a, tq, n)) return false;
  BatchedCall c{&a, q, k, v, ldq, ldk, ldv, tq, n, ldo, group, rel, out, {}};
  const int parts = a.shape.parts;
  // With a pool: the way measured faster for this session's attention (pool_governor.h): one
  // part's products tiled over the pool by XNNPACK, or the parts as pool tasks; otherwise on
  // the calling thread (one part's operators were reshaped for the pool and walk the same tiles
  // without it).
  const float units = static_cast<float>(tq * n);
  auto run = [&](bool pooled) {
    if (parts == 1) return RunPart(c, 0, pooled ? a.pool : nullptr);
    if (pooled) {
      pthreadpool_parallelize_1d(a.pool, RunPartTask, &c, static_cast<size_t>(parts), 0);
    } else {
      for (int p = 0; p < parts; ++p) c.ok[p] = RunPart(c, p, nullptr);
    }
    for (int p = 0; p < parts; ++p) {
      if (!c.ok[p]) return false;
    }
    return true;
  };
  const bool ok = a.pool != nullptr && a.pool_budget != nullptr
                      ? RunGoverned(a.pool_choice, units, a.pool_budget, a.pool, run)
                      : run(a.pool != nullptr);
  if (!ok) {
    a.reshaped[0] = -1;
    return false;
  }
  return true;
}

}  // namespace

int AttentionParts(int threads, int64_t heads) {
  return threads >= 2 && threads <= kMaxAttentionParts && heads >= threads ? threads : 1;
}

Status MeasureAttention(const AttentionShape& shape, AttentionNeeds* needs) {
  *needs = AttentionNeeds();
  if (shape.parts < 1 || shape.parts > kMaxAttentionParts || shape.parts > shape.heads) {
    return Status::Error(StatusCode::kInvalidArgument, "attention: %d parts of %lld heads",
                         shape.parts, static_cast<long long>(shape.heads));
  }
  TERN_RETURN_IF_ERROR(Initialize());
  Attention a;
  a.shape = shape;
  xnn_status s;
  size_t qk_bytes = 0, qk_align = 0, av_bytes = 0, av_align = 0;
  {
    MeasureScope scope(SIZE_MAX);
    s = CreateOperators(shape.parts, &a);
    needs->xnn_bytes = scope.bytes();
    // Each part's workspace, for the most heads a part has (the first parts have no more).
    int64_t most = 0;
    for (int p = 0; p < shape.parts; ++p) most = std::max(most, PartHeads(shape, p));
    if (s == xnn_status_success) {
      const size_t batch[1] = {static_cast<size_t>(most)};
      const size_t m = static_cast<size_t>(shape.max_queries),
                   n = static_cast<size_t>(shape.max_keys);
      const size_t dh = static_cast<size_t>(shape.d_head);
      s = xnn_reshape_batch_matrix_multiply_nc_f32(a.qk[0], 1, batch, batch, m, dh, n, &qk_bytes,
                                                   &qk_align, nullptr);
      if (s == xnn_status_success) {
        s = xnn_reshape_batch_matrix_multiply_nc_f32(a.av[0], 1, batch, batch, m, n, dh, &av_bytes,
                                                     &av_align, nullptr);
      }
    }
    DeleteOperators(&a);
  }
  if (s != xnn_status_success || qk_align > 64 || av_align > 64) {
    // No batched attention here: the loops run every call, nothing is planned for it.
    *needs = AttentionNeeds();
    return Status::Ok();
  }
  const size_t parts = static_cast<size_t>(shape.parts);
  needs->gather_bytes = Gather(shape).bytes;
  needs->scores_bytes =
      static_cast<size_t>(shape.heads * shape.max_queries * shape.max_keys) * sizeof(float) +
      XNN_EXTRA_BYTES;
  // Parts' workspaces start at multiples of 64 bytes.
  needs->qk_workspace_bytes = parts == 1 ? qk_bytes : parts * Align64(qk_bytes);
  needs->av_workspace_bytes = parts == 1 ? av_bytes : parts * Align64(av_bytes);
  return Status::Ok();
}

Status CreateAttention(const AttentionShape& shape, Attention* a) {
  a->shape = shape;
  const xnn_status s = CreateOperators(shape.parts, a);
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
  if (a.qk[0] != nullptr && tq > 1 && !mask.causal && !shaw && visible > 0 &&
      heads == a.shape.heads && d_head == a.shape.d_head && tq <= a.shape.max_queries &&
      visible <= a.shape.max_keys &&
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
