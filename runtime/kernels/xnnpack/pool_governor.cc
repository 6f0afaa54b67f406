#include "runtime/kernels/xnnpack/pool_governor.h"

#include <pthreadpool.h>

#include <algorithm>
#include <array>
#include <chrono>

namespace tern::xnn {

namespace {
void Nothing(void*, size_t) {}
}  // namespace

void ParkWorkers(pthreadpool* pool) {
  if (pool == nullptr) return;
  // One empty task per thread with the yield flag: every worker takes the command, then waits
  // in the kernel instead of spinning (PTHREADPOOL_FLAG_YIELD_WORKERS).
  pthreadpool_parallelize_1d(pool, Nothing, nullptr, pthreadpool_get_threads_count(pool),
                             PTHREADPOOL_FLAG_YIELD_WORKERS);
}

PoolGovernor::Run PoolGovernor::Choose(float units, const PoolBudget& budget) const {
  if (budget.pool_off) return Run::kUnmeasured;  // a pass without the pool (PassGovernor)
  if (single_ns_ == 0.0f) return Run::kSingle;   // the calling thread is measured first
  if (single_ns_ * units < min_pooled_ns_) {
    return unmeasured_ >= kRemeasureAfter ? Run::kSingle : Run::kUnmeasured;
  }
  if (!next_pooled_) return Run::kSingle;
  // A probe of a pool that is not (yet) winning: only within the session's budget. (Run
  // single instead; the probe stays due and comes once the budget allows.)
  // A retry of a stalled probe (see Update) runs whatever the budget: it may refund the stall.
  if (!prefer_pool_ && !retry_ && budget.lost_ns > kProbeAllowanceNs &&
      budget.lost_ns * kProbeBudget > budget.measured_ns) {
    return Run::kSingle;
  }
  return Run::kPooled;
}

bool PoolGovernor::Record(Run run, float ns, float units, PoolBudget* budget) {
  Update(run, ns, units, budget);
  const float single = single_ns_ * units;
  // Not while a stalled probe is retried: the retry would pay the workers' wake-up.
  return run == Run::kPooled && !prefer_pool_ && !retry_ && ns > kParkAfter * single &&
         ns - single > kParkMinLossNs;
}

void PoolGovernor::Update(Run run, float ns, float units, PoolBudget* budget) {
  if (run == Run::kUnmeasured || !(units > 0.0f)) return;
  const bool pooled = run == Run::kPooled;
  const float per_unit = ns / units;
  // A call measured after kRemeasureAfter unmeasured ones replaces the calling thread's average,
  // as a probe does: the average is as old as those calls.
  const bool remeasure = !pooled && unmeasured_ >= kRemeasureAfter;
  unmeasured_ = 0;
  budget->measured_ns += ns;
  const float lost =
      pooled && !prefer_pool_ && per_unit > single_ns_ ? (per_unit - single_ns_) * units : 0.0f;
  budget->lost_ns += lost;
  // A probe of the pool that stalled (over kParkAfter times the calling thread's time: a worker
  // that waited for a core, a page fault, the VM's host) is run again at once, unless the
  // probe before it stalled too. On a quiet machine such a stall is rare, and one of them, early
  // in a session, used to keep a layer on the calling thread for thousands of calls (the wait
  // below grows with the loss) and, through the shared budget, every layer whose pool was not
  // yet measured: 2 threads then ran a paper-base translation at one thread's speed in 6 of 8
  // runs. A retry that does not stall takes the stall's loss back from the budget and decides
  // alone; a busy machine stalls again, and pays one more probe.
  bool stalled_twice = false;  // this run retried a stalled probe and stalled too
  if (cap_outliers_ && pooled) {
    const bool stalled = single_ns_ > 0.0f && per_unit > kParkAfter * single_ns_;
    if (retry_) {
      retry_ = false;
      if (!stalled) budget->lost_ns -= stalled_loss_;
      stalled_twice = stalled;
    } else if (stalled && !prefer_pool_ && !stalled_before_) {
      retry_ = true;
      stalled_loss_ = lost;
      stalled_before_ = true;
      next_pooled_ = true;
      return;
    }
    stalled_before_ = stalled;
  }
  if (single_ns_ == 0.0f) {  // the first measurement; the pool is probed next or after the wait
    single_ns_ = per_unit;
    next_pooled_ = until_probe_ == 0;
    return;
  }
  // A run of the preferred way moves its average a quarter of the way (smooths noise). A probe
  // replaces the average of its way: the old one may date from another load on the machine,
  // and a wrong switch is corrected by the next runs, which all measure the way switched to.
  const bool probe = pooled != prefer_pool_;
  float& average = pooled ? pooled_ns_ : single_ns_;
  // A run of the preferred way counts at most twice its average: one pooled run whose worker
  // was descheduled (10-100x) would otherwise flip the choice by itself, and the calling thread
  // would run the next ~64 calls (the wait after a switch, see kProbeBudget) for nothing. A
  // lasting change of the machine's load still moves the average within a few runs.
  const float sample = cap_outliers_ && !probe && average > 0.0f && per_unit > 2.0f * average
                           ? 2.0f * average
                           : per_unit;
  average = probe || remeasure || average == 0.0f ? per_unit : average + 0.25f * (sample - average);
  if (pooled_ns_ == 0.0f) {  // not probed yet: the first wait runs down
    if (until_probe_ > 0) --until_probe_;
    next_pooled_ = until_probe_ == 0;
    return;
  }
  const bool pool_wins = pooled_ns_ < margin_ * single_ns_;
  if (pool_wins != prefer_pool_ || probe) {
    prefer_pool_ = pool_wins;
    if (pool_wins) {  // probe the calling thread soon after a switch, then ever more rarely
      interval_ = probe && !pooled ? (interval_ >= kMaxInterval / 2 ? kMaxInterval : 2 * interval_)
                                   : kFirstInterval;
    } else {  // the pool loses: wait in proportion to what a probe of it costs
      float by_loss = kProbeBudget * pooled_ns_ / single_ns_;
      // ...except after two stalls in a row early in a session (its first kProbeAllowanceNs of
      // losses): those are more often the session's start than the pool's speed. The base
      // model's first batch-16 decoder steps fault in the K/V caches' pages (huge pages zeroed
      // by the kernel): a probe and its retry of the Q/K/V group took 4.1 and 3.1 ms against
      // 0.37 on one thread, and the wait in proportion (64 x 10 calls) kept that group off the
      // pool, which takes 0.21 ms, for the rest of the run (6% of every step). The next probe
      // comes after kProbeBudget x kParkAfter calls; the allowance bounds what such early
      // probes lose on a machine that is busy from the start.
      if (stalled_twice && budget->lost_ns <= kProbeAllowanceNs &&
          by_loss > kProbeBudget * kParkAfter) {
        by_loss = kProbeBudget * kParkAfter;
      }
      const float twice = 2.0f * static_cast<float>(interval_);
      const float wait = by_loss > twice ? by_loss : twice;
      interval_ = wait >= static_cast<float>(kMaxLosingInterval) ? kMaxLosingInterval
                                                                 : static_cast<uint32_t>(wait);
    }
    until_probe_ = interval_;
  } else if (until_probe_ > 0) {
    --until_probe_;
  }
  next_pooled_ = until_probe_ == 0 ? !prefer_pool_ : prefer_pool_;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void PassGovernor::Begin(Pass pass, int64_t rows, PoolBudget* budget, pthreadpool* pool) {
  budget->pool_off = false;
  current_ = nullptr;
  if (pool == nullptr) return;
  ++passes_;
  start_ns_ = NowNs();
  Windows& w = windows_[static_cast<int>(pass)][RowClassGovernors::ClassOf(rows)];
  current_ = &w;
  rows_ = static_cast<float>(rows > 1 ? rows : 1);
  if (w.left == 0) {  // a new window: its way
    w.run = w.warm ? w.governor.Choose(rows_, probes_) : PoolGovernor::Run::kUnmeasured;
    w.warm = true;
    w.left = kWindow;
    w.rows = 0.0f;
  }
  // This governor's "pooled" way is the pass with the pool off (see the header).
  const bool off = w.run == PoolGovernor::Run::kPooled;
  if (off) {
    ++off_passes_;
    // Workers that spin after the last pooled call would take CPU from this pass.
    if (!was_off_) ParkWorkers(pool);
  }
  budget->pool_off = off;
  was_off_ = off;
}

void PassGovernor::End(PoolBudget* budget) {
  EndTimed(current_ != nullptr ? static_cast<float>(NowNs() - start_ns_) : 0.0f, budget);
}

void PassGovernor::EndTimed(float ns, PoolBudget* budget) {
  budget->pool_off = false;
  if (current_ == nullptr) return;
  Windows& w = *current_;
  current_ = nullptr;
  w.per_row[kWindow - w.left] = ns / rows_;
  w.rows += rows_;
  if (--w.left > 0) return;
  // The window's time: its median pass (per row) times its rows. A mean let one stalled pass
  // decide: on the AMX VM a pass with the pool that waited 5-20 ms for the idle core made the
  // window with the pool look slower than one without it, and the session then ran 64 passes
  // on one thread. A busy machine slows most passes of a window with the pool, and its median.
  std::array<float, kWindow> sorted;
  std::copy(w.per_row, w.per_row + kWindow, sorted.begin());
  std::sort(sorted.begin(), sorted.end());
  static_assert(kWindow % 2 == 0, "the median of an even window: the middle two's mean");
  const float median = 0.5f * (sorted[kWindow / 2 - 1] + sorted[kWindow / 2]);
  // Record's answer (park after a slow "pooled" run) is for operators: a pass without the pool
  // has parked its workers already.
  (void)w.governor.Record(w.run, median * w.rows, w.rows, &probes_);
}

}  // namespace tern::xnn
