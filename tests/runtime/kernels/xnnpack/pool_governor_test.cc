// The per-operator thread-pool choice (kernels/xnnpack/pool_governor.h) on synthetic timings:
// a pool that wins is kept, one that loses is dropped and probed ever more rarely (at a bounded
// cost however badly it loses), tiny calls never use it, and a change of the machine's load is
// followed both ways. And the same per pass of the model (PassGovernor): a pass with the pool
// against one without it.
#include <catch2/catch_test_macros.hpp>

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK

#include <pthreadpool.h>

#include "runtime/kernels/xnnpack/pool_governor.h"

namespace tern::xnn {
namespace {

using Run = PoolGovernor::Run;

struct Totals {
  int pooled = 0;
  double ns = 0.0;  // time of all calls
};

// `calls` calls of `units` units each at the given ns per unit with and without the pool.
Totals Calls(PoolGovernor& g, PoolBudget& budget, int calls, float pooled_ns, float single_ns,
             float units = 1.0f) {
  Totals t;
  for (int i = 0; i < calls; ++i) {
    const Run run = g.Choose(units, budget);
    const float ns = (run == Run::kPooled ? pooled_ns : single_ns) * units;
    t.pooled += run == Run::kPooled;
    t.ns += ns;
    g.Record(run, ns, units, &budget);
  }
  return t;
}

Totals Calls(PoolGovernor& g, int calls, float pooled_ns, float single_ns, float units = 1.0f) {
  PoolBudget own;
  return Calls(g, own, calls, pooled_ns, single_ns, units);
}

TEST_CASE("a pool that wins is used, with rare probes of one thread", "[xnnpack][pool]") {
  PoolGovernor g;
  CHECK(g.Choose(1.0f, PoolBudget()) == Run::kSingle);  // the calling thread is measured first
  const Totals first = Calls(g, 4000, 30000.0f, 50000.0f);
  CHECK(first.pooled >= 4000 - 4000 / static_cast<int>(PoolGovernor::kFirstInterval));
  CHECK(first.pooled < 4000);  // the calling thread is measured now and then
  // Probes back off to one per kMaxInterval calls.
  CHECK(Calls(g, 4000, 30000.0f, 50000.0f).pooled >= 4000 - 8);
  CHECK(g.Choose(1.0f, PoolBudget()) == Run::kPooled);
}

TEST_CASE("a pool that loses costs about 1/kProbeBudget, however badly", "[xnnpack][pool]") {
  for (float slowdown : {2.0f, 16.0f, 1000.0f}) {
    // A busy machine: the pool's join waits for a descheduled worker (16x; 1000x: a 5 ms time
    // slice against a layer of 5 us... here 50 us, above kMinPooledNs).
    PoolGovernor g;
    const int calls = 200000;
    const float single = 50000.0f;
    const Totals t = Calls(g, calls, slowdown * single, single);
    INFO("slowdown " << slowdown << ": " << t.pooled << " pooled calls");
    // Against never using the pool: the probes' cost over the run, plus the first probe.
    CHECK(t.ns < (1.0 + 2.0 / PoolGovernor::kProbeBudget) * calls * single + slowdown * single);
    CHECK(g.Choose(1.0f, PoolBudget()) == Run::kSingle);
  }
}

TEST_CASE("a call too short to win anything never uses the pool", "[xnnpack][pool]") {
  PoolGovernor g;
  // 5 us on one thread (the demo model's 256 x 256 layers at one row).
  const Totals t = Calls(g, 1000, 1000.0f, 5000.0f);
  CHECK(t.pooled == 0);
  CHECK(g.pooled_ns() == 0.0f);
  // The same layer on a 32-row encoder call (160 us) is worth measuring.
  CHECK(g.Choose(32.0f, PoolBudget()) == Run::kPooled);
}

// Calls as RunGoverned makes them: a call chosen kUnmeasured is counted, not timed.
Totals GovernedCalls(PoolGovernor& g, int calls, float pooled_ns, float single_ns) {
  PoolBudget budget;
  Totals t;
  for (int i = 0; i < calls; ++i) {
    const Run run = g.Choose(1.0f, budget);
    const float ns = run == Run::kPooled ? pooled_ns : single_ns;
    t.pooled += run == Run::kPooled;
    t.ns += ns;
    if (run == Run::kUnmeasured) {
      g.Unmeasured();
    } else {
      g.Record(run, ns, 1.0f, &budget);
    }
  }
  return t;
}

TEST_CASE("a layer first measured under the threshold is measured again later", "[xnnpack][pool]") {
  // Its first calls ran at 10 us (its weights still in cache), its later ones at 50 us on one
  // thread and 30 us on the pool: it must not stay on the calling thread for good.
  PoolGovernor g;
  CHECK(GovernedCalls(g, 200, 6000.0f, 10000.0f).pooled == 0);
  const Totals later = GovernedCalls(g, 1000, 30000.0f, 50000.0f);
  CHECK(later.pooled >= 1000 - 2 * static_cast<int>(PoolGovernor::kRemeasureAfter));
  CHECK(g.Choose(1.0f, PoolBudget()) == Run::kPooled);
  // Calls that stay under it stay on the calling thread, measured one in kRemeasureAfter.
  PoolGovernor small;
  CHECK(GovernedCalls(small, 1000, 1000.0f, 5000.0f).pooled == 0);
  CHECK(small.pooled_ns() == 0.0f);
}

TEST_CASE("a cut layer's lower threshold lets its shorter calls use the pool", "[xnnpack][pool]") {
  // 8 us on one thread, 5 us cut over two (a 512 x 512 layer at a few rows).
  PoolGovernor whole;
  CHECK(GovernedCalls(whole, 500, 5000.0f, 8000.0f).pooled == 0);
  RowClassGovernors cut(PoolGovernor::kMinCutPooledNs);
  CHECK(GovernedCalls(cut.For(16), 500, 5000.0f, 8000.0f).pooled >= 400);
}

TEST_CASE("one slow pooled run does not flip a pool that wins", "[xnnpack][pool]") {
  PoolGovernor g;
  PoolBudget budget;
  Calls(g, budget, 200, 30000.0f, 50000.0f);
  REQUIRE(g.Choose(1.0f, budget) == Run::kPooled);
  // A worker descheduled for a time slice: 100x.
  g.Record(Run::kPooled, 3000000.0f, 1.0f, &budget);
  CHECK(g.pooled_ns() < 2.0f * 30000.0f + 1.0f);
  CHECK(g.Choose(1.0f, budget) == Run::kPooled);
  // A lasting slowdown of the pool is followed within a few runs.
  int runs = 0;
  while (g.Choose(1.0f, budget) == Run::kPooled && runs < 20) {
    g.Record(Run::kPooled, 200000.0f, 1.0f, &budget);
    ++runs;
  }
  CHECK(runs <= 4);
  // Calls run in passes without the pool (PassGovernor) do not count towards a re-measure, and
  // a pooled run is never one: after such a window the first pooled call (paying the parked
  // workers' wake-up) is capped like any other.
  PoolGovernor after_off;
  PoolBudget off_budget;
  Calls(after_off, off_budget, 200, 30000.0f, 50000.0f);
  off_budget.pool_off = true;
  for (int i = 0; i < 100; ++i) {
    RunGoverned(after_off, 1.0f, &off_budget, nullptr, [](bool pooled) { return !pooled; });
  }
  off_budget.pool_off = false;
  REQUIRE(after_off.Choose(1.0f, off_budget) == Run::kPooled);
  after_off.Record(Run::kPooled, 3000000.0f, 1.0f, &off_budget);
  CHECK(after_off.Choose(1.0f, off_budget) == Run::kPooled);
  // Whole passes (PassGovernor's governors) are not capped: their samples are already means of
  // a window, and one slow window is the busy machine's signal.
  PoolGovernor passes(PoolGovernor::kMargin, 0, PoolGovernor::kMinPooledNs,
                      /*cap_outliers=*/false);
  PoolBudget pass_budget;
  Calls(passes, pass_budget, 200, 30000.0f, 50000.0f);
  REQUIRE(passes.Choose(1.0f, pass_budget) == Run::kPooled);
  passes.Record(Run::kPooled, 3000000.0f, 1.0f, &pass_budget);
  CHECK(passes.Choose(1.0f, pass_budget) == Run::kSingle);
}

TEST_CASE("the choice follows the machine's load both ways", "[xnnpack][pool]") {
  PoolGovernor g;
  Calls(g, 500, 30000.0f, 50000.0f);  // quiet: pooled
  CHECK(g.Choose(1.0f, PoolBudget()) == Run::kPooled);
  // Busy: the pooled runs themselves show it; the switch comes within a few calls.
  Calls(g, 20, 800000.0f, 50000.0f);
  CHECK(g.Choose(1.0f, PoolBudget()) == Run::kSingle);
  Calls(g, 5000, 800000.0f, 50000.0f);  // a long busy spell: probes backed off
  // Quiet again: a later probe switches back.
  Calls(g, 200000, 30000.0f, 50000.0f);
  CHECK(g.Choose(1.0f, PoolBudget()) == Run::kPooled);
  CHECK(Calls(g, 100, 30000.0f, 50000.0f).pooled >= 90);
}

TEST_CASE("the session's layers share one probe budget", "[xnnpack][pool]") {
  // 100 layers on a busy machine (pool 1000x slower: a time slice per pooled call), called in
  // turn like a decoder step's layers. Alone, each would pay its own first probe; sharing the
  // budget, the probes lose at most about 1 / kProbeBudget of the time.
  PoolBudget budget;
  PoolGovernor layers[100];
  const float single = 50000.0f;
  double spent = 0.0;
  int pooled = 0;
  const int steps = 2000;
  for (int step = 0; step < steps; ++step) {
    for (PoolGovernor& g : layers) {
      const Totals t = Calls(g, budget, 1, 1000.0f * single, single);
      spent += t.ns;
      pooled += t.pooled;
    }
  }
  const double never = 100.0 * steps * single;
  INFO(pooled << " pooled calls");
  CHECK(spent < (1.0 + 2.0 / PoolGovernor::kProbeBudget) * never + 1000.0 * single);
  CHECK(pooled < 10);
}

TEST_CASE("a pool within the margin of one thread is not used", "[xnnpack][pool]") {
  PoolGovernor g;
  // 5% faster with the pool is not worth a core that another process could use.
  CHECK(Calls(g, 1000, 47500.0f, 50000.0f).pooled <= 1000 / 16);
}

TEST_CASE("workers are parked after a pooled call that lost badly, not a mild loss",
          "[xnnpack][pool]") {
  auto probe = [](float pooled_ns) {  // one thread at 50 us, then the pool's first probe
    PoolBudget budget;
    PoolGovernor g;
    CHECK_FALSE(g.Record(g.Choose(1.0f, budget), 50000.0f, 1.0f, &budget));  // one thread
    const Run run = g.Choose(1.0f, budget);
    REQUIRE(run == Run::kPooled);
    return g.Record(run, pooled_ns, 1.0f, &budget);
  };
  // A probe that stalls is retried at once (see "a stalled probe is retried"), without parking:
  // the retry would pay the wake-up. When the retry stalls too, the workers are parked.
  CHECK_FALSE(probe(5000000.0f));
  auto retried = [](float first_ns, float retry_ns) {
    PoolBudget budget;
    PoolGovernor g;
    g.Record(g.Choose(1.0f, budget), 50000.0f, 1.0f, &budget);
    REQUIRE(g.Choose(1.0f, budget) == Run::kPooled);
    CHECK_FALSE(g.Record(Run::kPooled, first_ns, 1.0f, &budget));
    REQUIRE(g.Choose(1.0f, budget) == Run::kPooled);  // the retry
    return g.Record(Run::kPooled, retry_ns, 1.0f, &budget);
  };
  CHECK(retried(5000000.0f, 5000000.0f));  // a busy machine: the join waited a time slice
  CHECK(retried(5000000.0f, 150000.0f));   // 3x
  CHECK_FALSE(retried(5000000.0f, 30000.0f));
  CHECK_FALSE(probe(60000.0f));  // a quiet machine's small layer: the dispatch did not pay
  CHECK_FALSE(probe(30000.0f));  // a winning pool keeps its workers spinning
  // A cut layer of 6 us whose pooled probe took 15 us (the dispatch): twice its time, but a
  // quiet machine's loss; parking would make the next pooled call pay the wake-up.
  PoolBudget budget;
  PoolGovernor small(PoolGovernor::kMargin, 0, PoolGovernor::kMinCutPooledNs);
  CHECK_FALSE(small.Record(small.Choose(1.0f, budget), 6000.0f, 1.0f, &budget));
  REQUIRE(small.Choose(1.0f, budget) == Run::kPooled);
  CHECK_FALSE(small.Record(Run::kPooled, 15000.0f, 1.0f, &budget));
  // The same layer waiting a time slice for its worker, twice, does park.
  PoolBudget busy_budget;
  PoolGovernor busy(PoolGovernor::kMargin, 0, PoolGovernor::kMinCutPooledNs);
  CHECK_FALSE(busy.Record(busy.Choose(1.0f, busy_budget), 6000.0f, 1.0f, &busy_budget));
  REQUIRE(busy.Choose(1.0f, busy_budget) == Run::kPooled);
  CHECK_FALSE(busy.Record(Run::kPooled, 4000000.0f, 1.0f, &busy_budget));
  REQUIRE(busy.Choose(1.0f, busy_budget) == Run::kPooled);
  CHECK(busy.Record(Run::kPooled, 4000000.0f, 1.0f, &busy_budget));
}

TEST_CASE("a stalled probe is retried, and a stall does not hold the session's other layers",
          "[xnnpack][pool]") {
  // A quiet VM: the worker's idle core took 4 ms to wake for the first pooled call of a layer
  // that takes 50 us on one thread and 30 us on the pool. Every later pooled call is 30 us.
  PoolBudget budget;
  PoolGovernor g;
  g.Record(g.Choose(1.0f, budget), 50000.0f, 1.0f, &budget);
  REQUIRE(g.Choose(1.0f, budget) == Run::kPooled);
  g.Record(Run::kPooled, 4000000.0f, 1.0f, &budget);
  CHECK(g.Choose(1.0f, budget) == Run::kPooled);  // retried at once
  CHECK(Calls(g, budget, 1000, 30000.0f, 50000.0f).pooled >= 1000 - 1000 / 8);
  // The retry took the stall's loss back: a layer whose pool was not measured yet still probes.
  CHECK(budget.lost_ns < 1.0);
  PoolGovernor other;
  CHECK(Calls(other, budget, 1000, 30000.0f, 50000.0f).pooled >= 1000 - 1000 / 8);

  // Two stalls in a row (the retry stalled too) are the pool's loss: it is dropped, and the
  // next probe waits in proportion. Early in a session (under kProbeAllowanceNs lost) the other
  // layers still probe: 8 ms lost after 0.05 ms measured would otherwise hold them for 0.5 s.
  PoolBudget early;
  PoolGovernor stalled;
  stalled.Record(stalled.Choose(1.0f, early), 50000.0f, 1.0f, &early);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(stalled.Choose(1.0f, early) == Run::kPooled);
    stalled.Record(Run::kPooled, 4000000.0f, 1.0f, &early);
  }
  CHECK(stalled.Choose(1.0f, early) == Run::kSingle);
  CHECK(Calls(stalled, early, 100, 30000.0f, 50000.0f).pooled == 0);
  REQUIRE(early.lost_ns < PoolGovernor::kProbeAllowanceNs);
  PoolGovernor next;
  CHECK(Calls(next, early, 1000, 30000.0f, 50000.0f).pooled >= 1000 - 1000 / 8);
  // Within the allowance the stalled layer's next probe comes after kProbeBudget x kParkAfter
  // calls, not 64 x 80 (first touches of a session's pages: the stalls were its start), and
  // finds the pool's real time.
  CHECK(Calls(stalled, early, 100, 30000.0f, 50000.0f).pooled > 0);
  CHECK(stalled.Choose(1.0f, early) == Run::kPooled);

  // The same two stalls once the session has lost more than the allowance: the wait in
  // proportion (a busy machine's stalls go on).
  PoolBudget late;
  late.lost_ns = 2.0 * PoolGovernor::kProbeAllowanceNs;
  late.measured_ns = 1000.0 * late.lost_ns;  // probes still within the budget
  PoolGovernor busy;
  busy.Record(busy.Choose(1.0f, late), 50000.0f, 1.0f, &late);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(busy.Choose(1.0f, late) == Run::kPooled);
    busy.Record(Run::kPooled, 4000000.0f, 1.0f, &late);
  }
  CHECK(Calls(busy, late, 1000, 30000.0f, 50000.0f).pooled == 0);
}

// A language model's layer: a 32-row prefill (100 us on one thread: 3 us per row, the weights
// read once for all rows), then one-row decode steps that stream the whole matrix (50 us on one
// thread, 33 us on two: memory bandwidth). Returns how many of the decode calls were pooled.
template <typename Governor>
int PooledDecodeCalls(Governor&& governor_for, int decode_calls) {
  PoolBudget budget;
  auto call = [&](int64_t rows, float single_ns, float pooled_ns) {
    PoolGovernor& g = governor_for(rows);
    const Run run = g.Choose(static_cast<float>(rows), budget);
    g.Record(run, run == Run::kPooled ? pooled_ns : single_ns, static_cast<float>(rows), &budget);
    return run == Run::kPooled;
  };
  for (int i = 0; i < 20; ++i) call(32, 100000.0f, 60000.0f);
  int pooled = 0;
  for (int i = 0; i < decode_calls; ++i) pooled += call(1, 50000.0f, 33000.0f);
  return pooled;
}

TEST_CASE("a layer's one-row calls are governed apart from its prefill", "[xnnpack][pool]") {
  CHECK(RowClassGovernors::ClassOf(1) == 0);
  CHECK(RowClassGovernors::ClassOf(2) == 1);
  CHECK(RowClassGovernors::ClassOf(7) == 1);
  CHECK(RowClassGovernors::ClassOf(8) == 2);
  CHECK(RowClassGovernors::ClassOf(63) == 2);
  CHECK(RowClassGovernors::ClassOf(64) == 3);
  CHECK(RowClassGovernors::ClassOf(4096) == 3);
  RowClassGovernors layer;
  const int calls = 1000;
  CHECK(PooledDecodeCalls([&](int64_t rows) -> PoolGovernor& { return layer.For(rows); }, calls) >=
        calls - calls / static_cast<int>(PoolGovernor::kFirstInterval));
  CHECK(layer.For(1).pooled_ns() > 0.0f);
  // One governor for all row counts (the old way) takes the decode step for 3 us of work and
  // never measures the pool on it.
  PoolGovernor one;
  CHECK(PooledDecodeCalls([&](int64_t) -> PoolGovernor& { return one; }, calls) == 0);
}

// Passes of a model through a PassGovernor, each taking on_ns with the pool, off_ns without it.
struct PassTotals {
  int off = 0;
  double ns = 0.0;
};

PassTotals Passes(PassGovernor& g, pthreadpool* pool, int passes, float on_ns, float off_ns,
                  int64_t rows = 1, PassGovernor::Pass pass = PassGovernor::Pass::kStep) {
  PoolBudget session;
  PoolGovernor layer;  // an operator of the pass: told when the pool is off
  PassTotals t;
  for (int i = 0; i < passes; ++i) {
    g.Begin(pass, rows, &session, pool);
    const bool off = session.pool_off;
    // Every operator's governor runs it on the calling thread, unrecorded, in a pass without
    // the pool.
    if (off) CHECK(layer.Choose(1.0f, session) == Run::kUnmeasured);
    t.off += off;
    t.ns += off ? off_ns : on_ns;
    g.EndTimed(off ? off_ns : on_ns, &session);
    CHECK_FALSE(session.pool_off);
  }
  return t;
}

struct Pool {
  pthreadpool* pool = pthreadpool_create(2);
  ~Pool() { pthreadpool_destroy(pool); }
};

// Passes are governed in windows of kWindow passes; the first (2 + kFirstWait) windows keep the
// pool (a warm-up window, then the pass with the pool measured and kept while the operators'
// governors learn).
constexpr int kWindow = static_cast<int>(PassGovernor::kWindow);
constexpr int kFirstPasses = (2 + static_cast<int>(PassGovernor::kFirstWait)) * kWindow;

TEST_CASE("passes keep the pool while it wins, and try without it rarely", "[xnnpack][pool]") {
  Pool p;
  REQUIRE(p.pool != nullptr);
  PassGovernor g;
  // A quiet machine: a decoder step of 2 ms takes 1.4 ms with the pool.
  CHECK(Passes(g, p.pool, kFirstPasses, 1.4e6f, 2e6f).off == 0);
  // Then one window without the pool, all of it.
  CHECK(Passes(g, p.pool, kWindow, 1.4e6f, 2e6f).off == kWindow);
  const PassTotals t = Passes(g, p.pool, 5000, 1.4e6f, 2e6f);
  INFO(t.off << " passes without the pool");
  CHECK(t.off >= kWindow);  // tried again, a whole window at a time
  CHECK(t.off % kWindow == 0);
  CHECK(t.off <= 5 * kWindow);  // ever more rarely
  CHECK(g.passes() == static_cast<uint64_t>(5000 + kFirstPasses + kWindow));
  CHECK(g.off_passes() == static_cast<uint64_t>(t.off + kWindow));
}

TEST_CASE("one stalled pass does not make a window without the pool win", "[xnnpack][pool]") {
  Pool p;
  REQUIRE(p.pool != nullptr);
  PassGovernor g;
  PoolBudget session;
  // A quiet VM: a step takes 1.4 ms with the pool, 2 ms without; one pass in each window with
  // the pool waits 20 ms for the idle core (a window's mean would be 3.7 ms).
  int off = 0;
  for (int i = 0; i < 50 * kWindow; ++i) {
    g.Begin(PassGovernor::Pass::kStep, 1, &session, p.pool);
    off += session.pool_off;
    g.EndTimed(session.pool_off ? 2e6f : (i % kWindow == 3 ? 20e6f : 1.4e6f), &session);
  }
  INFO(off << " passes without the pool");
  CHECK(off <= 2 * kWindow);  // the probes of it
  // On a busy machine most passes with the pool are slow: the median follows (5 of 8 at 4 ms).
  PassGovernor busy;
  int busy_off = 0;
  for (int i = 0; i < 50 * kWindow; ++i) {
    busy.Begin(PassGovernor::Pass::kStep, 1, &session, p.pool);
    busy_off += session.pool_off;
    busy.EndTimed(session.pool_off ? 2e6f : (i % kWindow < 5 ? 4e6f : 1.4e6f), &session);
  }
  CHECK(busy_off >= 50 * kWindow - 10 * kWindow);
}

TEST_CASE("passes drop a pool that loses on the whole pass", "[xnnpack][pool]") {
  Pool p;
  REQUIRE(p.pool != nullptr);
  PassGovernor g;
  // A busy machine: each operator's own choice looked right, yet the step with the pool takes
  // 1.18x the step without it (the base model at 2 threads beside two spinning processes).
  const int passes = 5000;
  const float off = 2e6f, on = 1.18f * off;
  const PassTotals t = Passes(g, p.pool, passes, on, off);
  INFO(t.off << " passes without the pool");
  // With the pool: the first windows and the probes of it.
  const int with_pool = passes - t.off;
  CHECK(with_pool >= kFirstPasses);
  CHECK(with_pool <= 12 * kWindow);
  CHECK(t.ns <=
        passes * static_cast<double>(off) + with_pool * static_cast<double>(on - off) + 1.0);
  // A pass without the pool within the margin of one with it keeps the pool.
  PassGovernor tie;
  CHECK(Passes(tie, p.pool, passes, 2e6f, 0.97f * 2e6f).off <= 5 * kWindow);
}

TEST_CASE("passes follow the load back to the pool, per pass kind and row class",
          "[xnnpack][pool]") {
  Pool p;
  REQUIRE(p.pool != nullptr);
  PassGovernor g;
  Passes(g, p.pool, 2000, 3e6f, 2e6f);  // busy: off
  CHECK(Passes(g, p.pool, 100, 3e6f, 2e6f).off >= 100 - kWindow);
  // Batch-16 steps and encoder passes are measured apart: they start with the pool.
  CHECK(Passes(g, p.pool, kFirstPasses, 3e6f, 2e6f, 16).off == 0);
  CHECK(Passes(g, p.pool, kFirstPasses, 3e6f, 2e6f, 1, PassGovernor::Pass::kEncode).off == 0);
  // Quiet again: a probe of the pool (its wait grows with what a probe lost: 64 x 1.5 windows,
  // then twice that) switches back.
  Passes(g, p.pool, 4000, 1.4e6f, 2e6f);
  CHECK(Passes(g, p.pool, 100, 1.4e6f, 2e6f).off <= kWindow);
}

TEST_CASE("interleaved passes of two kinds are governed apart", "[xnnpack][pool]") {
  Pool p;
  REQUIRE(p.pool != nullptr);
  PassGovernor g;
  PoolBudget session;
  // A translation, 2000 times: an encoder pass of 32 tokens, faster without the pool, then four
  // decoder steps, faster with it. Each kind's windows fill with its own passes only.
  const int sentences = 2000, steps = 4;
  int encoder_off = 0, steps_off = 0;
  for (int s = 0; s < sentences; ++s) {
    g.Begin(PassGovernor::Pass::kEncode, 32, &session, p.pool);
    encoder_off += session.pool_off;
    g.EndTimed(session.pool_off ? 2e6f : 3e6f, &session);
    for (int t = 0; t < steps; ++t) {
      g.Begin(PassGovernor::Pass::kStep, 1, &session, p.pool);
      steps_off += session.pool_off;
      g.EndTimed(session.pool_off ? 2e6f : 1.4e6f, &session);
    }
  }
  INFO(encoder_off << " encoder passes and " << steps_off << " steps without the pool");
  CHECK(encoder_off >= sentences - 12 * kWindow);
  CHECK(steps_off >= kWindow);  // probed
  CHECK(steps_off <= 10 * kWindow);
  CHECK(g.passes() == static_cast<uint64_t>(sentences * (1 + steps)));
  CHECK(g.off_passes() == static_cast<uint64_t>(encoder_off + steps_off));
}

TEST_CASE("without a pool no pass is governed", "[xnnpack][pool]") {
  PassGovernor g;
  PoolBudget session;
  for (int i = 0; i < 100; ++i) {
    g.Begin(PassGovernor::Pass::kStep, 1, &session, nullptr);
    CHECK_FALSE(session.pool_off);
    g.EndTimed(1e6f, &session);
  }
  CHECK(g.off_passes() == 0);
  CHECK(g.passes() == 0);
}

}  // namespace
}  // namespace tern::xnn

#endif  // TERN_WITH_XNNPACK
