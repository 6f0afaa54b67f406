// The calls of prepared linear layers (linear.h): one layer (RunLinear), or several layers that
// read the same input (RunLinears). Allocates nothing.
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>

#include "runtime/kernels/vectorized/linear_qd8.h"
#include "runtime/kernels/xnnpack/linear.h"
#include "runtime/kernels/xnnpack/linear_paths.h"

namespace tern::xnn {

namespace {

bool Check(xnn_status status) { return status == xnn_status_success; }

bool Fallback(Context& c) {
  ++c.fallback_calls;
  return false;
}

// Reshapes a conversion operator unless it was last reshaped for this shape (rows, channels,
// input stride, output stride, remembered in `last`); false when XNNPACK refuses, with the
// shape forgotten.
bool ReshapeConvert(xnn_status (*reshape)(xnn_operator_t, size_t, size_t, size_t, size_t,
                                          pthreadpool_t),
                    xnn_operator_t op, int64_t* last, int64_t rows, int64_t channels,
                    int64_t input_stride, int64_t output_stride, pthreadpool_t pool) {
  const int64_t pooled = pool != nullptr ? 1 : 0;
  if (last[0] == rows && last[1] == channels && last[2] == input_stride &&
      last[3] == output_stride && last[4] == pooled) {
    return true;
  }
  last[0] = rows;
  last[1] = channels;
  last[2] = input_stride;
  last[3] = output_stride;
  last[4] = pooled;
  if (Check(reshape(op, static_cast<size_t>(rows), static_cast<size_t>(channels),
                    static_cast<size_t>(input_stride), static_cast<size_t>(output_stride), pool))) {
    return true;
  }
  last[0] = -1;
  return false;
}

// Whether a cut layer's parts run one after another, each tiled by XNNPACK over `pool`, rather
// than as one pool task each (kTiledPartsRows).
bool TiledParts(const LinearKernel& kn, int64_t m, pthreadpool_t pool) {
  return kn.parts > 1 && pool != nullptr && m >= kTiledPartsRows;
}

// A whole operator is reshaped for the session's pool (XNNPACK tiles it for that many threads;
// run without the pool it walks the same tiles on the calling thread); the parts of a cut
// layer for one thread each, or for the pool where they run tiled (TiledParts).
bool ReshapeFc(LinearKernel& kn, int64_t m, bool tiled) {
  if (kn.reshaped_rows == m && kn.reshaped_tiled == tiled) return true;
  kn.reshaped_rows = -1;
  const PathTraits& t = Traits(kn.path);
  if (kn.parts == 1) {
    if (!Check(t.reshape(kn.op, static_cast<size_t>(m), kn.context->pool))) return false;
  } else {
    pthreadpool_t pool = tiled ? kn.context->pool : nullptr;
    for (int p = 0; p < kn.parts; ++p) {
      if (!Check(t.reshape(kn.part_ops[p], static_cast<size_t>(m), pool))) return false;
    }
  }
  kn.reshaped_rows = m;
  kn.reshaped_tiled = tiled;
  return true;
}

// Operators run as one fork-join, one pool task each: the parts of a cut layer, or those of
// a group of layers.
struct Tasks {
  int count = 0;
  xnn_operator_t ops[kMaxGroup * kMaxParts];
  xnn_status status[kMaxGroup * kMaxParts];
};

void RunTask(void* context, size_t i) {
  auto* tasks = static_cast<Tasks*>(context);
  tasks->status[i] = xnn_run_operator(tasks->ops[i], nullptr);
}

// One pool task per operator, or one after another on the calling thread: alone (pool null) or
// each tiled over the pool (tiled).
bool RunTasks(Tasks& tasks, pthreadpool_t pool, bool tiled) {
  if (pool == nullptr || tiled) {
    for (int i = 0; i < tasks.count; ++i) {
      if (!Check(xnn_run_operator(tasks.ops[i], pool))) return false;
    }
    return true;
  }
  pthreadpool_parallelize_1d(pool, RunTask, &tasks, static_cast<size_t>(tasks.count), 0);
  for (int i = 0; i < tasks.count; ++i) {
    if (!Check(tasks.status[i])) return false;
  }
  return true;
}

// Reshapes the layer for m rows, points each of its operators at its inputs and at output row
// `first` (setup(op, first)), and adds them to `tasks`.
template <typename Setup>
bool SetUp(LinearKernel& kn, int64_t m, bool tiled, Setup&& setup, Tasks* tasks) {
  if (!ReshapeFc(kn, m, tiled)) return false;
  for (int p = 0; p < kn.parts; ++p) {
    if (!Check(setup(kn.part_ops[p], kn.begin[p]))) return false;
    tasks->ops[tasks->count++] = kn.part_ops[p];
  }
  return true;
}

// Sets up and runs one layer: the whole operator on `pool` (null: the calling thread), or each
// part as one task of `pool` (null: one after another on the calling thread).
template <typename Setup>
bool RunOperators(LinearKernel& kn, pthreadpool_t pool, int64_t m, Setup&& setup) {
  Tasks tasks;
  const bool tiled = TiledParts(kn, m, pool);
  if (!SetUp(kn, m, tiled, setup, &tasks)) return false;
  if (kn.parts == 1) return Check(xnn_run_operator(kn.op, pool));
  return RunTasks(tasks, pool, tiled);
}

// The pool for the activation conversions: those of a cut layer run on the calling thread
// below 64 rows, where a fork-join over the pool costs more than converting the rows (the
// parts then run as tasks).
pthreadpool_t ConvertPool(const LinearKernel& kn, int64_t m, pthreadpool_t pool) {
  return kn.parts > 1 && m < 64 ? nullptr : pool;
}

bool Qd8Fits(const Context& c, int64_t m, int64_t k, int64_t ldx) {
  return ldx >= k &&
         Qd8InputBytes(static_cast<size_t>(m), static_cast<size_t>(k)) <= c.qd8_input_bytes &&
         Qd8ParamsBytes(static_cast<size_t>(m)) <= c.qd8_params_bytes;
}

// x[m, k] (row stride ldx) quantized per row into the context's int8 buffer and parameters.
bool ToQd8(Context& c, const float* x, int64_t m, int64_t k, int64_t ldx, pthreadpool_t pool) {
  return ReshapeConvert(xnn_reshape_convert_nc_f32_qd8, c.to_qd8, c.qd8_shape, m, k, ldx, k,
                        pool) &&
         Check(xnn_setup_convert_nc_f32_qd8(c.to_qd8, x, c.qd8_input,
                                            static_cast<xnn_quantization_params*>(c.qd8_params))) &&
         Check(xnn_run_operator(c.to_qd8, pool));
}

// The bias of the paths whose operator takes none (BiasBy::kRunLinear).
void AddBias(const LinearKernel& kn, float* y, int64_t m, int64_t ldy) {
  if (kn.bias_after_run == nullptr) return;
  for (int64_t i = 0; i < m; ++i) {
    float* yi = y + i * ldy;
    for (int64_t j = 0; j < kn.n; ++j) yi[j] += kn.bias_after_run[j];
  }
}

bool RunOnce(LinearKernel& kn, pthreadpool_t pool, const float* x, int64_t m, int64_t ldx, float* y,
             int64_t ldy) {
  Context& c = *kn.context;
  const PathTraits& t = Traits(kn.path);
  const size_t rows = static_cast<size_t>(m);
  const size_t k = static_cast<size_t>(kn.k);
  const size_t n = static_cast<size_t>(kn.n);
  pthreadpool_t convert_pool = ConvertPool(kn, m, pool);
  switch (t.activations) {
    case Activations::kNone:
      return false;
    case Activations::kF32: {
      if (ldx != kn.input_stride || ldy != kn.output_stride) return Fallback(c);
      if (!RunOperators(kn, pool, m, [&](xnn_operator_t op, int64_t first) {
            return t.setup_f32(op, x, y + first);
          })) {
        return Fallback(c);
      }
      AddBias(kn, y, m, ldy);
      return true;
    }
    case Activations::kQd8: {
      if (ldy != kn.output_stride || !Qd8Fits(c, m, kn.k, ldx)) return Fallback(c);
      auto* params = static_cast<xnn_quantization_params*>(c.qd8_params);
      if (!ToQd8(c, x, m, kn.k, ldx, convert_pool) ||
          !RunOperators(kn, pool, m, [&](xnn_operator_t op, int64_t first) {
            return t.setup_qd8(op, c.qd8_input, y + first, params);
          })) {
        return Fallback(c);
      }
      return true;
    }
    case Activations::kF16: {
      if (ldx < kn.k || ldy < kn.n || F16Bytes(rows, k) > c.f16_input_bytes ||
          F16Bytes(rows, n) > c.f16_output_bytes) {
        return Fallback(c);
      }
      if (!ReshapeConvert(xnn_reshape_unary_elementwise_nc, c.to_f16, c.to_f16_shape, m, kn.k, ldx,
                          kn.k, convert_pool) ||
          !Check(xnn_setup_unary_elementwise_nc(c.to_f16, x, c.f16_input)) ||
          !Check(xnn_run_operator(c.to_f16, convert_pool)) ||
          !RunOperators(kn, pool, m,
                        [&](xnn_operator_t op, int64_t first) {
                          return t.setup_f16(op, c.f16_input, c.f16_output + first);
                        }) ||
          !ReshapeConvert(xnn_reshape_unary_elementwise_nc, c.from_f16, c.from_f16_shape, m, kn.n,
                          kn.n, ldy, convert_pool) ||
          !Check(xnn_setup_unary_elementwise_nc(c.from_f16, c.f16_output, y)) ||
          !Check(xnn_run_operator(c.from_f16, convert_pool))) {
        return Fallback(c);
      }
      return true;
    }
  }
  return Fallback(c);
}

// Whether the layers can run as one group: operators of one session whose activations are
// converted the same way (int8 rows, or none), with the strides they were planned for. The
// f16 paths convert each layer's output through one shared buffer, so they run alone. With a
// pool every layer must be cut: a whole operator is tiled over the pool by XNNPACK itself and
// cannot be one task among others.
bool Groupable(LinearKernel* const* kernels, int count, int64_t ldx, const int64_t* ldys) {
  if (count < 2 || count > kMaxGroup || kernels[0]->op == nullptr) return false;
  const LinearKernel& lead = *kernels[0];
  const Activations activations = Traits(lead.path).activations;
  if (activations != Activations::kQd8 && activations != Activations::kF32) return false;
  for (int i = 0; i < count; ++i) {
    const LinearKernel& kn = *kernels[i];
    if (kn.op == nullptr || kn.context != lead.context || kn.k != lead.k ||
        Traits(kn.path).activations != activations || ldys[i] != kn.output_stride ||
        (activations == Activations::kF32 && ldx != kn.input_stride) ||
        (lead.context->pool != nullptr && kn.parts == 1)) {
      return false;
    }
  }
  return true;
}

bool RunGroupOnce(LinearKernel* const* kernels, int count, pthreadpool_t pool, const float* x,
                  int64_t m, int64_t ldx, float* const* ys, const int64_t* ldys) {
  const LinearKernel& lead = *kernels[0];
  Context& c = *lead.context;
  const bool qd8 = Traits(lead.path).activations == Activations::kQd8;
  auto* params = static_cast<xnn_quantization_params*>(c.qd8_params);
  if (qd8 &&
      (!Qd8Fits(c, m, lead.k, ldx) || !ToQd8(c, x, m, lead.k, ldx, ConvertPool(lead, m, pool)))) {
    return false;
  }
  Tasks tasks;
  const bool tiled = TiledParts(lead, m, pool);
  for (int i = 0; i < count; ++i) {
    const PathTraits& t = Traits(kernels[i]->path);
    float* y = ys[i];
    const bool ok =
        qd8 ? SetUp(
                  *kernels[i], m, tiled,
                  [&](xnn_operator_t op, int64_t first) {
                    return t.setup_qd8(op, c.qd8_input, y + first, params);
                  },
                  &tasks)
            : SetUp(
                  *kernels[i], m, tiled,
                  [&](xnn_operator_t op, int64_t first) { return t.setup_f32(op, x, y + first); },
                  &tasks);
    if (!ok) return false;
  }
  if (!RunTasks(tasks, pool, tiled)) return false;
  for (int i = 0; i < count; ++i) AddBias(*kernels[i], ys[i], m, ldys[i]);
  return true;
}

// One part of a layer run by its vectorizable loops: output rows [begin[p], begin[p + 1]).
struct LoopParts {
  LinearLoops loops;
  const float* x;
  int64_t m, ldx;
  const WeightView* w;
  const float* bias;
  float* y;
  int64_t ldy;
  int64_t begin[kMaxParts + 1];
};

// Rows [begin, end) of w as a weight of their own (a thread's part of a layer).
WeightView RowsOf(const WeightView& w, int64_t begin, int64_t end) {
  WeightView part = w;
  part.data = w.row(begin);
  part.rows = end - begin;
  if (part.scales != nullptr) part.scales += begin * w.groups_per_row();
  if (part.row_sums != nullptr) part.row_sums += begin;
  return part;
}

// The pool tasks of a group's layers, each cut into CutParts parts: task p is output rows
// [begin[p], end[p]) of layer layer[p].
struct GroupTasks {
  int tasks = 0;
  int layer[kMaxGroup * kMaxParts] = {};
  int64_t begin[kMaxGroup * kMaxParts] = {};
  int64_t end[kMaxGroup * kMaxParts] = {};

  void Add(int l, int64_t rows, int threads) {
    const int parts = CutParts(threads, rows);
    for (int p = 0; p < parts; ++p) {
      layer[tasks] = l;
      begin[tasks] = PartBegin(rows, parts, p);
      end[tasks] = PartBegin(rows, parts, p + 1);
      ++tasks;
    }
  }
};

// Layers of a group on tern's loops (vec::LinearQd8), each task quantizing x itself (a few rows).
struct GroupLoopParts {
  const float* x;
  int64_t m, ldx;
  const WeightView* const* w;
  const float* const* bias;
  float* const* y;
  const int64_t* ldy;
  GroupTasks t;
};

void GroupLoopPart(void* context, size_t p) {
  const auto* g = static_cast<const GroupLoopParts*>(context);
  const int l = g->t.layer[p];
  const int64_t begin = g->t.begin[p];
  vec::LinearQd8(g->x, g->m, g->ldx, RowsOf(*g->w[l], begin, g->t.end[p]),
                 g->bias[l] != nullptr ? g->bias[l] + begin : nullptr, g->y[l] + begin, g->ldy[l]);
}

void RunLoopPart(void* context, size_t p) {
  const auto* t = static_cast<const LoopParts*>(context);
  const int64_t begin = t->begin[p];
  const WeightView part = RowsOf(*t->w, begin, t->begin[p + 1]);
  t->loops(t->x, t->m, t->ldx, part, t->bias != nullptr ? t->bias + begin : nullptr, t->y + begin,
           t->ldy);
}

// One or more layers (kMaxGroup at most) on one pass of quantized rows, on a pool: task p of
// the first fork-join quantizes its share of the rows (`shares` of them), task p of the second
// is the group's task p (GroupTasks) on all of them.
struct RowsParts {
  const float* x;
  int64_t ldx;
  const vec::QuantizedRows* rows;
  int shares;
  const WeightView* w[kMaxGroup];
  const float* bias[kMaxGroup];
  float* y[kMaxGroup];
  int64_t ldy[kMaxGroup];
  GroupTasks t;
};

void QuantizeRowsPart(void* context, size_t p) {
  const auto* t = static_cast<const RowsParts*>(context);
  const int share = static_cast<int>(p);
  vec::QuantizeQd8Rows(t->x, t->ldx, PartBegin(t->rows->m, t->shares, share),
                       PartBegin(t->rows->m, t->shares, share + 1), *t->rows);
}

void RowsPart(void* context, size_t p) {
  const auto* t = static_cast<const RowsParts*>(context);
  const int l = t->t.layer[p];
  const int64_t begin = t->t.begin[p];
  vec::LinearQd8Rows(*t->rows, RowsOf(*t->w[l], begin, t->t.end[p]),
                     t->bias[l] != nullptr ? t->bias[l] + begin : nullptr, t->y[l] + begin,
                     t->ldy[l]);
}

// Layers [0, count) on rows of x quantized once per pass (vec::QuantizedRows in the context's
// scratch), with a pool in two fork-joins per pass: the rows quantized a share per thread, then
// every layer's parts (CutParts of its rows; a layer too small to cut is one task).
void RunRows(Context& c, const WeightView* const* ws, const float* const* biases, int count,
             pthreadpool_t pool, const float* x, int64_t m, int64_t ldx, float* const* ys,
             const int64_t* ldys) {
  const int64_t k = ws[0]->cols;
  const int threads = pool != nullptr ? static_cast<int>(pthreadpool_get_threads_count(pool)) : 1;
  for (int64_t i0 = 0; i0 < m; i0 += vec::kQd8PassRows) {
    const vec::QuantizedRows rows = vec::QuantizedRowsIn(c.qd8_rows, m - i0, k);
    if (pool == nullptr) {
      vec::QuantizeQd8Rows(x + i0 * ldx, ldx, 0, rows.m, rows);
      for (int l = 0; l < count; ++l) {
        vec::LinearQd8Rows(rows, *ws[l], biases[l], ys[l] + i0 * ldys[l], ldys[l]);
      }
      continue;
    }
    RowsParts t{};
    t.x = x + i0 * ldx;
    t.ldx = ldx;
    t.rows = &rows;
    t.shares = std::min(threads, kMaxParts);
    for (int l = 0; l < count; ++l) {
      t.w[l] = ws[l];
      t.bias[l] = biases[l];
      t.y[l] = ys[l] + i0 * ldys[l];
      t.ldy[l] = ldys[l];
      t.t.Add(l, ws[l]->rows, threads);
    }
    pthreadpool_parallelize_1d(pool, QuantizeRowsPart, &t, static_cast<size_t>(t.shares), 0);
    pthreadpool_parallelize_1d(pool, RowsPart, &t, static_cast<size_t>(t.t.tasks), 0);
  }
}

}  // namespace

bool RunLinear(LinearKernel& kn, const float* x, int64_t m, int64_t ldx, float* y, int64_t ldy) {
  if (kn.op == nullptr || m < 1) return m == 0 && kn.op != nullptr;
  pthreadpool_t pool = kn.context->pool;
  if (pool == nullptr) return RunOnce(kn, nullptr, x, m, ldx, y, ldy);
  // With a pool: run the way this layer has measured faster (pool_governor.h): a whole operator
  // on the pool or on the calling thread; a cut layer's parts as pool tasks or one after another
  // on the calling thread.
  return RunGoverned(
      kn.governors().For(m), static_cast<float>(m), &kn.context->pool_budget, pool,
      [&](bool pooled) { return RunOnce(kn, pooled ? pool : nullptr, x, m, ldx, y, ldy); });
}

bool RunLinears(LinearKernel* const* kernels, int count, const float* x, int64_t m, int64_t ldx,
                float* const* ys, const int64_t* ldys) {
  if (m < 1 || !Groupable(kernels, count, ldx, ldys)) return false;
  LinearKernel& lead = *kernels[0];
  pthreadpool_t pool = lead.context->pool;
  bool ran;
  if (pool == nullptr) {
    ran = RunGroupOnce(kernels, count, nullptr, x, m, ldx, ys, ldys);
  } else {
    // The group's own governors: its calls do `count` layers' work for one dispatch, so they
    // measure neither like the lead layer's calls alone nor like one another's in other groups.
    // Units: rows times layers, so that groups of two and three of one shape compare.
    ran = RunGoverned(lead.group_governors().For(m), static_cast<float>(m * count),
                      &lead.context->pool_budget, pool, [&](bool pooled) {
                        return RunGroupOnce(kernels, count, pooled ? pool : nullptr, x, m, ldx, ys,
                                            ldys);
                      });
  }
  if (ran) ++lead.context->group_calls;
  return ran;
}

void RunLinearLoops(LinearKernel& kn, LinearLoops loops, const float* x, int64_t m, int64_t ldx,
                    const WeightView& w, const float* bias, float* y, int64_t ldy) {
  pthreadpool_t pool = kn.context != nullptr ? kn.context->pool : nullptr;
  const int parts =
      pool != nullptr ? CutParts(static_cast<int>(pthreadpool_get_threads_count(pool)), w.rows) : 1;
  if (parts < 2 || m < 1) {
    loops(x, m, ldx, w, bias, y, ldy);
    return;
  }
  LoopParts t{loops, x, m, ldx, &w, bias, y, ldy, {}};
  for (int p = 0; p <= parts; ++p) t.begin[p] = PartBegin(w.rows, parts, p);
  RunGoverned(kn.governors().For(m), static_cast<float>(m), &kn.context->pool_budget, pool,
              [&](bool pooled) {
                if (pooled) {
                  pthreadpool_parallelize_1d(pool, RunLoopPart, &t, static_cast<size_t>(parts), 0);
                } else {
                  loops(x, m, ldx, w, bias, y, ldy);
                }
                return true;
              });
}

void RunQd8Loops(LinearKernel& kn, const float* x, int64_t m, int64_t ldx, const WeightView& w,
                 const float* bias, float* y, int64_t ldy) {
  Context* c = kn.context;
  if (c == nullptr || m < 1 || !vec::LinearQd8TakesRows(w, m, c->qd8_rows_bytes)) {
    RunLinearLoops(kn, vec::LinearQd8, x, m, ldx, w, bias, y, ldy);
    return;
  }
  pthreadpool_t pool = c->pool;
  const WeightView* ws[1] = {&w};
  const float* biases[1] = {bias};
  float* ys[1] = {y};
  const int64_t ldys[1] = {ldy};
  const int parts =
      pool != nullptr ? CutParts(static_cast<int>(pthreadpool_get_threads_count(pool)), w.rows) : 1;
  if (parts < 2) {
    RunRows(*c, ws, biases, 1, nullptr, x, m, ldx, ys, ldys);
    return;
  }
  RunGoverned(kn.governors().For(m), static_cast<float>(m), &c->pool_budget, pool,
              [&](bool pooled) {
                RunRows(*c, ws, biases, 1, pooled ? pool : nullptr, x, m, ldx, ys, ldys);
                return true;
              });
}

bool RunQd8LoopsGroup(LinearKernel* const* kernels, const WeightView* const* weights,
                      const float* const* biases, int count, const float* x, int64_t m, int64_t ldx,
                      float* const* ys, const int64_t* ldys) {
  if (count < 2 || count > kMaxGroup || m < 1) return false;
  Context* c = kernels[0]->context;
  bool rows = true;
  for (int i = 0; i < count; ++i) {
    if (kernels[i]->op != nullptr || kernels[i]->context != c || c == nullptr ||
        weights[i]->cols != weights[0]->cols || !vec::LinearQd8Takes(*weights[i])) {
      return false;
    }
    rows = rows && vec::LinearQd8TakesRows(*weights[i], m, c->qd8_rows_bytes);
  }
  pthreadpool_t pool = c->pool;
  if (!rows) {
    // Rows the loops quantize themselves (fewer than the rows path takes: a decode step), on a
    // pool: every layer's parts in one fork-join. Alone, a 512 x 512 int4 layer at one row takes
    // about as long as a fork-join (13.7 us on the AMX machine), so its governor keeps it on one
    // thread, and two threads did nothing for Q, K and V; together they are worth splitting.
    if (pool == nullptr) return false;
    const int threads = static_cast<int>(pthreadpool_get_threads_count(pool));
    GroupLoopParts g{x, m, ldx, weights, biases, ys, ldys, GroupTasks()};
    for (int l = 0; l < count; ++l) g.t.Add(l, weights[l]->rows, threads);
    RunGoverned(kernels[0]->group_governors().For(m), static_cast<float>(m * count),
                &c->pool_budget, pool, [&](bool pooled) {
                  if (pooled) {
                    pthreadpool_parallelize_1d(pool, GroupLoopPart, &g,
                                               static_cast<size_t>(g.t.tasks), 0);
                  } else {
                    for (int l = 0; l < count; ++l) {
                      vec::LinearQd8(x, m, ldx, *weights[l], biases[l], ys[l], ldys[l]);
                    }
                  }
                  return true;
                });
    ++c->group_calls;
    return true;
  }
  if (pool == nullptr) {
    RunRows(*c, weights, biases, count, nullptr, x, m, ldx, ys, ldys);
  } else {
    // The group's own governors, in rows times layers (as RunLinears').
    RunGoverned(kernels[0]->group_governors().For(m), static_cast<float>(m * count),
                &c->pool_budget, pool, [&](bool pooled) {
                  RunRows(*c, weights, biases, count, pooled ? pool : nullptr, x, m, ldx, ys, ldys);
                  return true;
                });
  }
  ++c->group_calls;
  return true;
}

}  // namespace tern::xnn
