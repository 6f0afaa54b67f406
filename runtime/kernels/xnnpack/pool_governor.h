// Whether one operator runs on the session's thread pool, decided by measuring it both ways.
//
// A fork-join over pthreadpool pays a dispatch and a join on every call, and the join waits for
// every worker to have run: on a quiet machine that costs microseconds, which small layers (the
// demo model's 256 x 256) do not win back; on a busy machine a worker that is not scheduled
// holds the join for a scheduler time slice, and `--threads 2` ran 16x slower than one thread
// (base model, load 6). No fixed size threshold is right on both machines, so each operator
// keeps the time per unit of work of its runs with and without the pool (moving averages),
// runs the faster way, and now and then probes the other:
//   - A call that takes under kMinPooledNs on one thread never uses the pool (nothing to win
//     that pays for a dispatch and a join), and is measured only every kRemeasureAfter calls
//     (so a layer whose first calls ran fast, its weights still in cache, is not kept off the
//     pool for good when its later calls are slower). A layer cut into one operator per thread
//     (linear.h) dispatches one task per thread instead of XNNPACK's many tiles, so its
//     threshold is lower (kMinCutPooledNs); so is that of a layer on tern's loops (one task
//     per thread too) and of the attention loops (a task per head).
//   - While the pool wins, the calling thread is probed every 8 to 1024 runs (doubling after
//     each probe that loses; such a probe costs at most about twice a pooled run).
//   - While the pool loses, a probe of it can cost a thousand single runs (a ~5 ms time slice
//     against a 5 us layer at load 9), so the next probe waits kProbeBudget times the loss
//     ratio in runs (and at least twice the last wait): the probes then cost about
//     1 / kProbeBudget of the time, however badly the pool loses.
//   - A probe of the pool that stalls (over kParkAfter times one thread's time) is retried at
//     once, unless the pool's run before it stalled too: one stall on a quiet machine (a VM's
//     idle core waking up) is not taken for the pool's speed. Two in a row early in a session
//     (within kProbeAllowanceNs of losses: page faults of the arena's first touches) wait
//     kProbeBudget x kParkAfter runs, not their loss ratio, for the next probe.
//   - A pool must win by kMargin to be used.
//   - Across the session's operators (PoolBudget): a probe of a pool that is not winning runs
//     only while the time such probes lost stays under 1 / kProbeBudget of the time measured,
//     so on a busy machine a hundred layers do not each pay a time slice to learn what the
//     first few learned. The first kProbeAllowanceNs of such losses in a session are free.
//
// Results do not depend on the choice: XNNPACK computes every output the same way with or
// without the pool (the pool only splits the output tiles), so outputs stay bit-identical.
#pragma once

#include <cstdint>

struct pthreadpool;

namespace tern::xnn {

// Sends the pool's workers to sleep in the kernel now. After a command, pthreadpool's workers
// spin-wait for the next one (milliseconds): on a quiet machine that makes the next dispatch
// cheap, but on a busy one the spinning worker takes CPU from the calling thread, which then
// runs the following layers alone. Called after a pooled run that took more than twice the
// calling thread's time (PoolGovernor::Record says when: a busy machine), so that a session whose
// pool does not pay does not keep a spinning worker beside it: measured on the demo model at
// load 3.3 on 2 cores, `--threads 2` took 1.7x the time of one thread before this. Not after
// every losing probe: on a quiet machine the next pooled layer would then pay the workers'
// wake-up (the demo model, quiet: 0.8x). Also called by PassGovernor::Begin before a pass that
// runs without the pool.
void ParkWorkers(pthreadpool* pool);

// Shared by the governors of one session: the time their calls took and the time that probes
// of a pool lost against the calling thread.
struct PoolBudget {
  double measured_ns = 0.0;
  double lost_ns = 0.0;
  // Set by the session's PassGovernor for a pass (a decoder step...) run without the pool: every
  // governor's Choose then answers kUnmeasured (the calling thread, not recorded).
  bool pool_off = false;
};

class PoolGovernor {
 public:
  static constexpr float kMinPooledNs = 20000.0f;
  static constexpr float kMinCutPooledNs = 5000.0f;
  static constexpr uint32_t kRemeasureAfter = 64;
  static constexpr uint32_t kFirstInterval = 8;
  static constexpr uint32_t kMaxInterval = 1024;           // between probes while the pool wins
  static constexpr uint32_t kMaxLosingInterval = 1 << 20;  // while it loses
  static constexpr float kProbeBudget = 64.0f;
  // What probes may lose in a session before kProbeBudget applies: early in a session little
  // time has been measured, and one stalled probe (a VM's idle core waking up took 2-5 ms on the
  // AMX VM, against 30-170 us for the call) would otherwise keep every layer whose pool was not
  // yet measured on the calling thread until 64 times that had run. About three time slices of
  // a busy machine, once per session.
  static constexpr double kProbeAllowanceNs = 16e6;
  static constexpr float kMargin = 0.9f;  // pooled time must be below 0.9 x single-thread time

  enum class Run : uint8_t { kSingle, kPooled, kUnmeasured };

  // margin: the pool is used when its time is below margin x the calling thread's. first_wait:
  // calls of the calling thread after its first before the pool is first probed (0: the next).
  // min_pooled_ns: calls shorter than this on one thread stay on it. cap_outliers: a run of the
  // preferred way counts at most twice its average (one operator's call; not for whole passes,
  // whose windows' medians already discount single passes and whose slow windows are the busy
  // machine's signal).
  explicit PoolGovernor(float margin = kMargin, uint32_t first_wait = 0,
                        float min_pooled_ns = kMinPooledNs, bool cap_outliers = true)
      : margin_(margin),
        min_pooled_ns_(min_pooled_ns),
        cap_outliers_(cap_outliers),
        until_probe_(first_wait) {}

  // How to run the next call of `units` units of work (rows of a linear layer...).
  Run Choose(float units, const PoolBudget& budget) const;
  // Tells the governor that a call chosen kUnmeasured for being under the threshold ran
  // (RunGoverned does; not for a pass without the pool): counts towards its next measurement.
  void Unmeasured() {
    if (unmeasured_ < kRemeasureAfter) ++unmeasured_;
  }
  // Records the call just run as `run` (kUnmeasured: ignored) and its time. Returns whether to
  // park the workers now (ParkWorkers): a pooled call that took more than kParkAfter times the
  // calling thread's time, which on a quiet machine (a pool that only does not pay for a small
  // layer: 1-1.5x) does not happen, and on a busy one (a worker waiting for a core: 10-1000x)
  // does.
  static constexpr float kParkAfter = 2.0f;
  // ...and lost at least this much: a descheduled worker costs a time slice (milliseconds),
  // while on a quiet machine a pooled probe of a 6 us layer (a cut layer, kMinCutPooledNs) can
  // take twice its time from the dispatch alone, and parking then would make the next pooled
  // call pay the workers' wake-up.
  static constexpr float kParkMinLossNs = 50000.0f;
  bool Record(Run run, float ns, float units, PoolBudget* budget);

  float pooled_ns() const { return pooled_ns_; }  // ns per unit; 0: not measured yet
  float min_pooled_ns() const { return min_pooled_ns_; }
  float single_ns() const { return single_ns_; }

 private:
  void Update(Run run, float ns, float units, PoolBudget* budget);

  float margin_;
  float min_pooled_ns_;
  bool cap_outliers_;
  uint32_t unmeasured_ = 0;  // calls run unmeasured since the last measured one
  float pooled_ns_ = 0.0f;
  float single_ns_ = 0.0f;
  uint32_t interval_ = kFirstInterval;  // runs between probes of the other way
  uint32_t until_probe_;
  bool prefer_pool_ = false;
  bool next_pooled_ = false;
  bool retry_ = false;           // the next call retries a probe of the pool that stalled
  bool stalled_before_ = false;  // the last pooled run stalled (no retry for the next stall)
  float stalled_loss_ = 0.0f;    // what the stalled probe added to the budget's lost_ns
};

// The steady clock in nanoseconds: the governors' time base.
int64_t NowNs();

// Runs `call(pooled)` (true: on the pool; false: on the calling thread) the way `governor`
// chooses for `units` units of work, records its time, and parks the workers when Record says
// so. A call that fails (returns false) is not recorded. Returns what `call` returned. The one
// way every governed operator runs (linear layers, attention).
template <typename Call>
bool RunGoverned(PoolGovernor& governor, float units, PoolBudget* budget, pthreadpool* pool,
                 Call&& call) {
  const PoolGovernor::Run run = governor.Choose(units, *budget);
  if (run == PoolGovernor::Run::kUnmeasured) {
    // A pass without the pool (PassGovernor) says nothing about this call's size.
    if (!budget->pool_off) governor.Unmeasured();
    return call(false);
  }
  const int64_t start = NowNs();
  const bool ok = call(run == PoolGovernor::Run::kPooled);
  if (ok && governor.Record(run, static_cast<float>(NowNs() - start), units, budget)) {
    ParkWorkers(pool);
  }
  return ok;
}

// A linear layer's governors, one per class of row counts. The time per row is not one number:
// a one-row call (a batch-1 decode step) streams the whole weight matrix for that row, a
// 32-row prefill reads it once for all 32, so its time per row is 10-30x smaller. With one
// per-row average a language model's prefill made its layers look too small to pool at one
// row (3 us per row x 1 < kMinPooledNs), and its decode steps ran on one thread for good:
// SmolLM-135M int8 decoded 1.06x faster with two threads than with one. The classes: 1, 2-7,
// 8-63 (rows within each differ by at most 8x), and 64 or more (all large enough that a row's
// share of the weight reads is small).
class RowClassGovernors {
 public:
  static constexpr int kClasses = 4;
  static int ClassOf(int64_t rows) { return rows <= 1 ? 0 : rows < 8 ? 1 : rows < 64 ? 2 : 3; }
  explicit RowClassGovernors(float min_pooled_ns = PoolGovernor::kMinPooledNs) {
    for (PoolGovernor& g : governors_) g = PoolGovernor(PoolGovernor::kMargin, 0, min_pooled_ns);
  }
  PoolGovernor& For(int64_t rows) { return governors_[ClassOf(rows)]; }

 private:
  PoolGovernor governors_[kClasses];
};

// Whether a whole pass of the model (an encoder pass or a prompt's prefill, a decoder step) may
// use the pool at all, decided by timing whole passes with and without it.
//
// The per-operator governors above judge each call alone. On a busy machine that is not enough:
// a large layer measures the pool faster in the moments the other processes leave a core free
// and loses a time slice when they do not, and the calls between, which the governors keep on
// the calling thread, run slower beside a worker that spins for the next command. The base
// model at 2 threads took 1.18x the time of one thread that way (two spinning processes on 2
// cores), though every layer's own choice looked right. A pass is what a user waits for, so
// it is measured whole: the pass with the pool (each operator then choosing as above) against
// the pass with it off (every operator on the calling thread, the workers parked), per class of
// row counts. It is a PoolGovernor whose "pooled" way is the pass with the pool off, and whose
// runs are windows of kWindow passes of one kind and row class: a base-model step takes about
// 1 ms, a time slice lost to another process several, so one pass says little and a window's
// median pass (per row) says more: a busy machine slows most of a window's passes, one stall
// of a quiet machine only one. The first window runs with the pool unmeasured (the operators'
// governors learn in it); then the pass with the pool is measured, kept for kFirstWait windows
// more, and kept unless the pass without it is faster by kPassMargin; probes of the losing way cost
// about 1 / kProbeBudget, as for one operator. Results do not depend on the choice.
class PassGovernor {
 public:
  enum class Pass : uint8_t { kEncode, kStep };
  static constexpr int kPasses = 2;
  static constexpr float kPassMargin = 0.95f;
  static constexpr uint32_t kWindow = 8;
  static constexpr uint32_t kFirstWait = 1;

  // Before a pass of `rows` rows (tokens in an encoder pass, rows of a decoder step): chooses
  // whether it runs with the pool (sets budget->pool_off), parking the workers when it does
  // not and the pass before did (the park is timed as part of the pass: on a busy machine it
  // can cost a time slice, which the way without the pool must pay). The pass before may have
  // left the workers asleep already; a park then only wakes and parks them again. Passes do
  // not nest.
  void Begin(Pass pass, int64_t rows, PoolBudget* budget, pthreadpool* pool);
  // After the pass begun last: records its time and turns the pool back on.
  void End(PoolBudget* budget);
  // End, the pass having taken `ns` (what End measures; tests give their own).
  void EndTimed(float ns, PoolBudget* budget);

  // Passes begun with a pool, and of them run with the pool off (for tests and reports).
  uint64_t off_passes() const { return off_passes_; }
  uint64_t passes() const { return passes_; }

 private:
  struct Windows {  // of one kind of pass and row class
    PoolGovernor governor{kPassMargin, kFirstWait, PoolGovernor::kMinPooledNs,
                          /*cap_outliers=*/false};
    PoolGovernor::Run run = PoolGovernor::Run::kUnmeasured;  // this window's way
    uint32_t left = 0;                                       // passes left in this window
    bool warm = false;                                       // the first window has run
    float per_row[kWindow] = {};                             // this window's passes, ns per row
    float rows = 0.0f;                                       // this window's, so far
  };
  Windows windows_[kPasses][RowClassGovernors::kClasses];
  PoolBudget probes_;  // the passes' own probe budget (the operators' is the session's)
  Windows* current_ = nullptr;
  float rows_ = 0.0f;
  int64_t start_ns_ = 0;
  bool was_off_ = false;
  uint64_t off_passes_ = 0;
  uint64_t passes_ = 0;
};

}  // namespace tern::xnn
