// What every model class shares (EncoderDecoder, DecoderOnly): configuration and limits, the
// resolved weights and layer records, the backend session, the arena accounting and the report,
// and Prepare, the same steps for every model: the model's plan (PlanAll), placed in the
// caller's arena (every buffer's pointer set), the weights resolved and each linear layer's
// operator created in the measured order (model_weights.h), then the model's Start.
// RequiredArenaBytes runs the same plan on a scratch object, so both see the same bytes. A
// model adds its limits, its plan and its forward pass.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/core/status.h"
#include "runtime/kernels/backend.h"
#include "runtime/memory/arena_plan.h"
#include "runtime/model/model.h"
#include "runtime/models/model_weights.h"
#include "tern/limits.h"

namespace tern {

class TransformerModel {
 public:
  TransformerModel(const TransformerModel&) = delete;
  TransformerModel& operator=(const TransformerModel&) = delete;

  // Plans the model's buffers and the caller's `requests` (the decoding algorithm's state, set
  // by this call) in the caller's arena, of at least RequiredArenaBytes(model, limits, requests)
  // bytes, resolves the weights and creates the backend's operators. This class owns no memory:
  // the one exception is the optional thread pool (Limits::threads > 1), which pthreadpool
  // allocates on the heap here. After a failure the model is unprepared and the report says why.
  // shared (optional): the linear layers' packed weights come from there, not the arena (the
  // first session prepared with an empty one packs them into it; backend.h).
  Status Prepare(const Model& model, const Limits& limits, void* arena, size_t arena_bytes,
                 const BufferRequests& requests = BufferRequests(),
                 SharedPackedWeights* shared = nullptr);

  const ModelConfig& config() const { return config_; }
  const Limits& limits() const { return limits_; }
  size_t arena_used_bytes() const { return arena_used_; }
  // The backend Prepare chose (kReference or kXnnpack) and one line saying which kernels run
  // and every fallback taken. Valid while the session lives; building it allocated nothing.
  Backend backend() const { return backend_.backend(); }
  const char* backend_report() const { return report_; }
  // Linear-layer calls the XNNPACK backend could not run and answered with the reference kernel
  // instead (0 when all is well).
  uint64_t kernel_fallback_calls() const { return backend_.fallback_calls(); }
  uint64_t linear_group_calls() const { return backend_.linear_group_calls(); }
  // With a thread pool: passes run (encoder passes, prefills, decoder steps), and of them run
  // with the pool switched off because whole passes measured faster without it (a busy
  // machine; xnn::PassGovernor). Both 0 without a pool.
  uint64_t passes() const { return backend_.passes(); }
  uint64_t passes_without_pool() const { return backend_.passes_without_pool(); }
  // Linear layers with an XNNPACK operator, and the pool governors they share (one per shape,
  // path and cut).
  int32_t operator_layers() const { return backend_.operator_layers(); }
  int32_t governor_groups() const { return backend_.governor_groups(); }

 protected:
  // A model's plan: the backend's (every linear layer measured), the arena's, and how the
  // stacks call their linear layers (the same calls measured and created).
  struct Planned {
    BackendPlan backend;
    ArenaPlan arena;
    BackendBuffers backend_ids;
    ModelCalls calls;
  };

  TransformerModel() = default;
  ~TransformerModel() = default;  // BackendSession destroys the thread pool, if any

  // Checks the limits, measures the backend (PlanBackend) and adds every buffer to plan->arena,
  // bound to this object's pointers; with XNNPACK this is a dry run: each distinct layer shape's
  // operator is created up to XNNPACK's request for packed-weight memory, which is recorded and
  // refused (runtime/kernels/xnnpack/allocator.h), so it costs a few small heap blocks and no
  // packing.
  virtual Status PlanAll(const Model& model, const Limits& limits, const BufferRequests& requests,
                         Planned* plan) = 0;
  // After the weights are resolved and the operators created: tables computed once, kernels.
  virtual void Start() = 0;
  // Forgets the session (the arena is the caller's) and stops the thread pool; a model that
  // keeps state of its own (encoded, started) forgets it too.
  virtual void Reset();

  // The bytes of model class M's plan for these inputs (RequiredArenaBytes), made on a scratch
  // M: its pointers are bound, nothing is placed. *planner, if given, receives the plan.
  // shared_weights: the arena of a session whose packed weights are shared (no packed copy).
  template <class M>
  static Result<size_t> RequiredBytes(const Model& model, const Limits& limits,
                                      const BufferRequests& requests,
                                      GreedyPlanner* planner = nullptr,
                                      bool shared_weights = false) {
    M scratch;
    Planned plan;
    plan.backend.shared_weights = shared_weights;
    TERN_RETURN_IF_ERROR(
        static_cast<TransformerModel&>(scratch).PlanAll(model, limits, requests, &plan));
    if (planner != nullptr) *planner = plan.arena.planner();
    return plan.arena.planner().arena_bytes();  // with the slack to align the caller's pointer
  }
  // The memory a SharedPackedWeights needs for model class M's layers under these limits.
  template <class M>
  static Result<size_t> SharedWeightsBytes(const Model& model, const Limits& limits) {
    M scratch;
    Planned plan;
    plan.backend.shared_weights = true;
    TERN_RETURN_IF_ERROR(
        static_cast<TransformerModel&>(scratch).PlanAll(model, limits, BufferRequests(), &plan));
    return SharedPackedWeights::RequiredBytes(plan.backend);
  }

  // The limits both models check: the backend's, 1 to 4096 sequences, and both lengths within
  // the model's max_positions; source / target say what the two lengths mean for the model.
  static Status CheckSharedLimits(const ModelConfig& c, const Limits& limits, const char* source,
                                  const char* target);
  // `batch` sequences ids[b * stride + i], i < lengths[b]: 1 to `most` tokens each, every id in
  // [0, vocab). what / tokens name them in messages ("sentence", "source token").
  static Status CheckSequences(const int32_t* ids, int64_t stride, const int32_t* lengths,
                               int32_t batch, int32_t most, int32_t vocab, const char* what,
                               const char* tokens);
  // Chooses the backend and measures every linear layer as plan->calls calls it.
  static Status PlanBackend(const Model& model, const Limits& limits,
                            const AttentionCall& attention, Planned* plan);

  ModelConfig config_;
  Limits limits_;
  size_t arena_used_ = 0;  // 0: not prepared
  ModelWeights weights_;
  ModelLayers layers_;  // the layers' weight records, in the arena
  BackendSession backend_;
  char report_[512] = "not prepared";

 private:
  Status PrepareInArena(const Model& model, const Limits& limits, void* arena, size_t arena_bytes,
                        const BufferRequests& requests, SharedPackedWeights* shared);
};

}  // namespace tern
