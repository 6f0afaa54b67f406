// The linear layers of a model on the XNNPACK backend, for both models (EncoderDecoder,
// DecoderOnly): which backend a session runs (and why not XNNPACK when it was asked for), each
// linear layer's operator path and arena bytes (the dry run), their buffers in the model's arena
// plan, their creation in the arena at Prepare, the thread pool, and the backend report.
//
// A model keeps what differs: which linear layers it has and the rows and strides they are
// called with (its Visit*Linears, which feed each layer to Measure here in RequiredArenaBytes and
// to XnnpackLinearsCreator in Prepare, in the same order), its other buffers and their lifetimes,
// its attention, and the tail of its report.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/memory/planner.h"
#include "runtime/nn/weights.h"
#include "tern/limits.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/linear.h"
#define TERN_XNNPACK_BUILD 1
#else
#define TERN_XNNPACK_BUILD 0
#endif

struct pthreadpool;

namespace tern {

namespace xnn {
struct Context;
}  // namespace xnn

// What planning decided; identical in RequiredArenaBytes and Prepare for the same inputs (and,
// for XNNPACK, the same CPU). A model's own plan extends it (e.g. with its attention).
struct XnnpackLinearsPlan {
  Backend backend = Backend::kReference;
  int32_t threads = 1;
  char note[Status::kMaxMessage] = "";  // why XNNPACK does not run, when requested but unusable
#if TERN_XNNPACK_BUILD
  xnn::LinearPlanner planner;  // memoized choices, reused when creating the operators
  xnn::ContextNeeds needs;
  size_t region_bytes = 0;   // XNNPACK's operators and packed weights (a model may add its own)
  size_t scratch_bytes = 0;  // largest prepare-time scratch of one layer
  int32_t linears = 0;       // linear layers (one LinearKernel each)
  int32_t on_path[xnn::kLinearPathCount] = {};
  // Layers not on their weight's preferred path: [preferred][taken]; [0][0]: layers whose
  // weights XNNPACK has no operator for at all (kReference is path 0).
  int32_t fallbacks[xnn::kLinearPathCount][xnn::kLinearPathCount] = {};

  // One linear layer as the model calls it (most rows, input and output row strides): chooses
  // its path, adds its arena bytes and counts it. A model's visitor calls this for every layer.
  Status Measure(const LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy);
  // After the last Measure: adds the context's conversion operators to region_bytes.
  Status MeasureContext();
  // Layers whose path is not their weight's preferred one.
  int32_t off_preferred() const;
#endif
};

// The checks of Limits about the backend (shared by both models' CheckLimits): a known backend,
// XNNPACK only in a build with it, 1 to 256 threads.
Status CheckBackendLimits(const Limits& limits);

// Chooses the backend: reference when asked for or without XNNPACK in the build; otherwise
// XNNPACK, unless it is unusable in this process (plan->note says why; the reference kernels run,
// which is not an error). Returns whether XNNPACK runs, i.e. whether the model goes on to Measure
// its linear layers.
bool ChooseBackend(const Limits& limits, XnnpackLinearsPlan* plan);

// Buffer ids of the linear layers' XNNPACK memory in a model's plan (-1: not planned).
struct XnnpackLinearBuffers {
  int region = -1, context = -1, kernels = -1, scratch = -1;
  int qd8_input = -1, qd8_params = -1, f16_input = -1, f16_output = -1;
};

// Adds the operators' region (their structs and packed weights), the context and the table of
// LinearKernels, alive from the model's `prepare` phase to its `last` one. Nothing unless the
// plan's backend is XNNPACK. Two calls rather than one so that each model keeps the order it
// adds its buffers in (the planner breaks size ties by that order).
void PlanXnnpackOperators(const XnnpackLinearsPlan& plan, int prepare, int last,
                          GreedyPlanner* planner, XnnpackLinearBuffers* ids);
// Adds the prepare-time scratch (only in `prepare`) and the activation conversion buffers (qd8,
// f16) the chosen paths need, alive from `first_run` to `last`.
void PlanXnnpackScratch(const XnnpackLinearsPlan& plan, int prepare, int first_run, int last,
                        GreedyPlanner* planner, XnnpackLinearBuffers* ids);

// A session's XNNPACK state beside its layers' operators: the context (in the arena) and the
// thread pool, which pthreadpool allocates on the heap, at Prepare and never later. A model holds
// one and releases it on Reset; the destructor releases it too.
class XnnpackSession {
 public:
  XnnpackSession() = default;
  ~XnnpackSession() { Release(); }
  XnnpackSession(const XnnpackSession&) = delete;
  XnnpackSession& operator=(const XnnpackSession&) = delete;

  // Places the context in the arena with its scratch buffers and starts the thread pool when
  // plan.threads > 1 (if pthreadpool_create fails, everything runs on the calling thread and the
  // report says so).
  void Start(const XnnpackLinearsPlan& plan, const XnnpackLinearBuffers& ids,
             const GreedyPlanner& planner, uint8_t* base);
  // Destroys the pool and forgets the context (the arena is the caller's).
  void Release();

  xnn::Context* context() const { return context_; }
  pthreadpool* pool() const { return pool_; }        // null: 1 thread
  bool pool_failed() const { return pool_failed_; }  // asked for threads, got none
  // Linear-layer calls XNNPACK could not run, answered by the reference kernel (0 when all is
  // well).
  uint64_t fallback_calls() const;

 private:
  xnn::Context* context_ = nullptr;
  pthreadpool* pool_ = nullptr;
  bool pool_failed_ = false;
};

#if TERN_XNNPACK_BUILD
// Creates the linear layers' operators at Prepare inside the arena region the dry run measured
// (an ArenaScope, alive as long as this object): Start creates the context's conversion
// operators; then each call creates the next layer's operator, in the order the dry run measured
// the layers (the model's visitor calls it as f(weights, rows, ldx, ldy)); a model may create
// operators of its own in between (they are in the region too). Finish checks that XNNPACK took
// exactly the measured bytes: the arena never grows silently.
class XnnpackLinearsCreator {
 public:
  XnnpackLinearsCreator(const XnnpackLinearsPlan& plan, const XnnpackLinearBuffers& ids,
                        const GreedyPlanner& planner, uint8_t* base, xnn::Context* context);
  XnnpackLinearsCreator(const XnnpackLinearsCreator&) = delete;
  XnnpackLinearsCreator& operator=(const XnnpackLinearsCreator&) = delete;

  Status Start();
  Status operator()(LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy);
  Status Finish() const;

 private:
  const XnnpackLinearsPlan& plan_;
  xnn::ArenaScope scope_;
  xnn::LinearPlanner choices_;  // a copy of the plan's: memoized, so no measuring here
  xnn::Context* context_;
  xnn::LinearKernel* kernels_;
  uint8_t* scratch_;
  int32_t next_ = 0;
};
#endif

// Appends printf-style text to a fixed buffer, truncating at its end; allocates nothing.
class ReportWriter {
 public:
  ReportWriter(char* buffer, size_t size) : buffer_(buffer), size_(size) {}
  void Append(const char* format, ...) __attribute__((format(printf, 2, 3)));

 private:
  char* buffer_;
  size_t size_;
  size_t used_ = 0;
};

#if TERN_XNNPACK_BUILD
// The head of the report when XNNPACK runs, e.g. "xnnpack, 1 thread: 97 linear layers: 96
// fully_connected_nc_qd8_f32_qc8w, 1 reference"; the model appends the rest.
void AppendXnnpackLinearsReport(const XnnpackLinearsPlan& plan, const XnnpackSession& session,
                                ReportWriter* out);
#endif
// The whole report when the reference kernels run: requested, XNNPACK unusable here (the plan's
// note), or a build without XNNPACK.
void WriteReferenceReport(const Limits& limits, const XnnpackLinearsPlan& plan, char* report,
                          size_t size);

}  // namespace tern
