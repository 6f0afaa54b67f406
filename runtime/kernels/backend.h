// The backend interface: what a model asks of the kernels besides calling them, in four steps,
// the same for every model:
//   choose   ChooseBackend: reference kernels, or XNNPACK (Limits::backend; XNNPACK only when
//            built with it and usable in this process);
//   measure  BackendPlan: every linear layer as the model calls it (rows, strides) and the
//            batched attention, in a fixed order; a dry run that packs nothing
//            (RequiredArenaBytes); the plan says how many arena bytes the operators take;
//   create   BackendSession (Prepare): the operators in the arena, in the measured order, the
//            context and thread pool; End checks that exactly the measured bytes were taken;
//   run      ops.h: layers call ops::Linear / MultiHeadAttention / LayerNorm / Activate with
//            the kernels the session chose (BackendSession::kernels()).
// Models name no backend type: on a build without XNNPACK every step is the reference
// kernels' (nothing to measure or create). Adding a backend means implementing these calls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/core/tensor.h"
#include "runtime/kernels/ops.h"
#include "runtime/memory/planner.h"
#include "tern/limits.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/attention.h"
#include "runtime/kernels/xnnpack/linear.h"
#include "runtime/kernels/xnnpack/weights_cache.h"
#define TERN_XNNPACK_BUILD 1
#else
#define TERN_XNNPACK_BUILD 0
#endif

struct pthreadpool;

namespace tern {

class Model;

// What a pass of the model is, for the thread-pool choice made per pass: an encoder pass or a
// prompt's prefill (all its tokens), or one decoder step.
enum class ModelPass : uint8_t { kEncode, kStep };

// How a linear layer is called: at most `rows` rows, input row stride ldx, output row stride ldy
// (a K/V projection may write straight into a cache with a larger stride).
struct LinearCall {
  int64_t rows = 1;
  int64_t ldx = 0;
  int64_t ldy = 0;
};

// The many-query attention a model runs (the encoder's): heads x d_head, at most max_queries
// queries over max_keys keys per call; max_queries == 0: none (one query per call only).
// loop_keys: the most keys a call of the loops sees (a decoder step over its caches, a causal
// prompt); with a thread pool the loops split by head, each head scoring in its own row.
struct AttentionCall {
  int64_t heads = 0;
  int64_t d_head = 0;
  int64_t max_queries = 0;
  int64_t max_keys = 0;
  int64_t loop_keys = 0;
};

// What planning decided; identical in RequiredArenaBytes and Prepare for the same inputs (and,
// for XNNPACK, the same CPU).
struct BackendPlan {
  Backend backend = Backend::kReference;
  int32_t threads = 1;
  char note[Status::kMaxMessage] = "";  // why XNNPACK does not run, when requested but unusable
  int32_t linears = 0;                  // linear layers measured (one kernel record each)
  // Set before measuring: the session takes its packed weights from a SharedPackedWeights, so
  // region_bytes counts the operators without them. Measured either way: the layers whose
  // packed weights can be shared and their bytes in a shared region.
  bool shared_weights = false;
  int32_t packed_layers = 0;
  size_t packed_bytes = 0;
#if TERN_XNNPACK_BUILD
  xnn::LinearPlanner planner;  // memoized choices, reused when creating the operators
  xnn::ContextNeeds needs;
  size_t region_bytes = 0;   // operators and packed weights
  size_t scratch_bytes = 0;  // largest prepare-time scratch of one layer
  int32_t on_path[xnn::kLinearPathCount] = {};
  int32_t cut_layers = 0;  // layers cut into one operator per thread (xnn::CutParts)
  // Layers not on their weight's preferred path: [preferred][taken]; [0][0]: layers whose
  // weights XNNPACK has no operator for at all (kReference is path 0).
  int32_t fallbacks[xnn::kLinearPathCount][xnn::kLinearPathCount] = {};
  // Layers on tern's loops because they beat XNNPACK's GEMM on this CPU
  // (vec::SignPanelsBeatXnnpack), not counted in fallbacks.
  int32_t faster_loops = 0;
  xnn::AttentionShape attention_shape;
  xnn::AttentionNeeds attention;
#endif

  // One linear layer as the model calls it: chooses its path, adds its arena bytes, counts it.
  Status MeasureLinear(const WeightView& weight, const float* bias, const LinearCall& call);
  // After the last linear layer: the context's conversion operators and the batched attention.
  Status Finish(const AttentionCall& attention);
};

// The checks of Limits about the backend: a known backend, XNNPACK only in a build with it, 1 to
// 256 threads.
Status CheckBackendLimits(const Limits& limits);

// Chooses the backend: reference when asked for or without XNNPACK in the build; otherwise
// XNNPACK, unless it is unusable in this process (plan->note says why; the reference kernels run,
// which is not an error). Returns whether the model goes on to measure its layers.
bool ChooseBackend(const Limits& limits, BackendPlan* plan);

// Buffer ids of the backend's memory in a model's arena plan (-1: not planned).
struct BackendBuffers {
  int region = -1, context = -1, kernels = -1, scratch = -1;
  int qd8_input = -1, qd8_params = -1, f16_input = -1, f16_output = -1, qd8_rows = -1;
  int attention = -1, att_gather = -1, att_scores = -1, att_qk_workspace = -1,
      att_av_workspace = -1, att_loop_scores = -1;
};

// Adds the operators' region, the context and the kernel records, alive from `prepare` to
// `last`. Nothing unless the plan's backend is XNNPACK. Three calls rather than one so that each
// model keeps the order it adds its buffers in (the planner breaks size ties by that order, and
// pinned arena sizes follow from it).
void PlanBackendOperators(const BackendPlan& plan, int prepare, int last, GreedyPlanner* planner,
                          BackendBuffers* ids);
// The prepare-time scratch (only in `prepare`) and the activation conversion buffers (qd8, f16)
// the chosen paths need, alive from `first_run` to `last`.
void PlanBackendScratch(const BackendPlan& plan, int prepare, int first_run, int last,
                        GreedyPlanner* planner, BackendBuffers* ids);
// The attention record (prepare to last) and the batched attention's buffers (alive in
// [batched_first, batched_last], the phases that run it).
void PlanBackendAttention(const BackendPlan& plan, int prepare, int last, int batched_first,
                          int batched_last, GreedyPlanner* planner, BackendBuffers* ids);

// Packed weights that the sessions of one model share (tern::SharedWeights holds one): the
// caller's memory, filled by the first session prepared with it, then read by all (on XNNPACK;
// the reference kernels read the model's bytes, so there is nothing to pack or share).
class SharedPackedWeights {
 public:
  // Bytes of memory for the layers a plan measured with shared_weights set.
  static size_t RequiredBytes(const BackendPlan& plan);
  Status Bind(void* memory, size_t bytes);
  bool packed() const;
  size_t used_bytes() const;

 private:
  friend class BackendSession;
#if TERN_XNNPACK_BUILD
  xnn::SharedRegion region_;
#endif
};

// A session's backend state: the kernels its layers run, and on XNNPACK the context and
// attention record (in the arena), the thread pool (pthreadpool allocates it on the heap, at
// Prepare and never later) and the creation of the operators.
class BackendSession {
 public:
  BackendSession() = default;
  ~BackendSession() { Release(); }
  BackendSession(const BackendSession&) = delete;
  BackendSession& operator=(const BackendSession&) = delete;

  // Starts creation at Prepare: XNNPACK places its context and attention record, starts the
  // thread pool when plan.threads > 1 (if that fails, everything runs on the calling thread and
  // the report says so), and creates the conversion and batched-attention operators.
  // The plan stays alive (and is used for its memoized choices) until End.
  // shared (optional, with a plan measured with shared_weights): the packed weights come from
  // there; an empty one is claimed and packed into by this session. identity names the model's
  // bytes (a session of another model is refused).
  Status Begin(BackendPlan* plan, const BackendBuffers& ids, const GreedyPlanner& planner,
               uint8_t* base, SharedPackedWeights* shared = nullptr,
               const void* identity = nullptr);
  // The next linear layer's operator, in the order they were measured; *kernel = null: the
  // reference kernel runs it. A layer without an operator (tern's loops) gets a copy of its
  // bytes in the arena (xnn::LinearSpec::copy_weight), and *weight then points at it.
  // source (optional): told that the weight's bytes were packed or copied (Model::Consumed);
  // source_rows_read: something reads the model's rows of a packed layer after Prepare (a
  // vocabulary shortlist's output projection), so they are kept.
  Status CreateLinear(WeightView* weight, const float* bias, const LinearCall& call,
                      LinearKernel** kernel, const Model* source = nullptr,
                      bool source_rows_read = false);
  // Ends creation: checks that XNNPACK took exactly the measured bytes (the arena never grows
  // silently) and writes the report (which kernels run, every fallback taken).
  Status End(const Limits& limits, char* report, size_t size);
  // Destroys the pool and forgets the arena's records (the arena is the caller's).
  void Release();

  const ops::Kernels& kernels() const { return kernels_; }
  Backend backend() const { return backend_; }
  // Linear-layer calls XNNPACK could not run, answered by the reference kernel (0 when well).
  uint64_t fallback_calls() const;
  // Calls that ran several linear layers reading one input as one group (xnn::RunLinears).
  uint64_t linear_group_calls() const;

  // Brackets one pass of the model (PassScope): with a thread pool, whether the pass may use it
  // at all, measured on whole passes (xnn::PassGovernor). No-ops without a pool. Allocate
  // nothing.
  void BeginPass(ModelPass pass, int64_t rows);
  void EndPass();
  // Passes measured, and of them run with the pool switched off (0 without a pool).
  uint64_t passes() const;
  uint64_t passes_without_pool() const;
  // Linear layers with an XNNPACK operator, and the distinct pool governors they use: layers of
  // one shape, path and cut share the first one's (xnn::LinearKernel::shared). 0 on reference.
  int32_t operator_layers() const;
  int32_t governor_groups() const;

 private:
  ops::Kernels kernels_;
  Backend backend_ = Backend::kReference;
  BackendPlan* plan_ = nullptr;  // Begin to End
#if TERN_XNNPACK_BUILD
  xnn::Context* context_ = nullptr;
  pthreadpool* pool_ = nullptr;
  bool pool_failed_ = false;
  // Begin to End: the arena region XNNPACK's requests are served from, and the creation state.
  alignas(xnn::ArenaScope) unsigned char scope_[sizeof(xnn::ArenaScope)];
  bool scope_open_ = false;
  xnn::LinearKernel* records_ = nullptr;
  uint8_t* scratch_ = nullptr;
  int32_t next_ = 0;  // records created (all of them after End)
  // Shared packed weights: the provider XNNPACK's operators ask (they keep a pointer to it, so
  // it lives here, as long as the session), the region this session packs into until End.
  xnn::WeightsCache cache_;
  xnn::SharedRegion* packing_ = nullptr;
  int32_t next_packed_ = 0;
#endif
};

// Runs a pass of the model between BeginPass and EndPass (also on an early return). Passes do
// not nest: a pass begun inside another would end the outer one's choice early.
class PassScope {
 public:
  PassScope(BackendSession& session, ModelPass pass, int64_t rows) : session_(session) {
    session_.BeginPass(pass, rows);
  }
  ~PassScope() { session_.EndPass(); }
  PassScope(const PassScope&) = delete;
  PassScope& operator=(const PassScope&) = delete;

 private:
  BackendSession& session_;
};

// Appends printf-style text to a fixed buffer, truncating at its end; allocates nothing.
class ReportWriter {
 public:
  ReportWriter(char* buffer, size_t size) : buffer_(buffer), size_(size) {
    if (size > 0) buffer[0] = '\0';
  }
  void Append(const char* format, ...) __attribute__((format(printf, 2, 3)));

 private:
  char* buffer_;
  size_t size_;
  size_t used_ = 0;
};

}  // namespace tern
