#include "runtime/kernels/xnnpack/row_loops.h"

#include <pthreadpool.h>

namespace tern::xnn {

namespace {

struct Split {
  void (*loop)(void*, int64_t, int64_t);
  void* context;
  int64_t rows, per_task;
};

void RunTask(void* context, size_t task) {
  const Split& s = *static_cast<const Split*>(context);
  const int64_t begin = static_cast<int64_t>(task) * s.per_task;
  const int64_t end = begin + s.per_task < s.rows ? begin + s.per_task : s.rows;
  if (begin < end) s.loop(s.context, begin, end);
}

}  // namespace

bool ForRows(RowLoops& loops, RowLoop kind, int64_t rows, float units,
             void (*loop)(void* context, int64_t begin, int64_t end), void* context) {
  if (loops.pool == nullptr || loops.budget == nullptr || rows < 2) return false;
  const int64_t threads = static_cast<int64_t>(pthreadpool_get_threads_count(loops.pool));
  Split s{loop, context, rows, (rows + threads - 1) / threads};
  const int64_t tasks = (rows + s.per_task - 1) / s.per_task;
  PoolGovernor& governor = loops.governors[static_cast<int>(kind)].For(rows);
  return RunGoverned(governor, units, loops.budget, loops.pool, [&](bool pooled) {
    if (pooled) {
      pthreadpool_parallelize_1d(loops.pool, RunTask, &s, static_cast<size_t>(tasks), 0);
    } else {
      loop(context, 0, rows);
    }
    return true;
  });
}

}  // namespace tern::xnn
