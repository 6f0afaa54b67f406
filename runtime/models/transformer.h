// What every model class shares (EncoderDecoder, DecoderOnly): its configuration and limits, the
// resolved weights, the backend session, the arena accounting and the report, and the two steps
// of Prepare that only need the model's description (model_weights.h):
//   PlanBackend       choose the backend and measure every linear layer (RequiredArenaBytes
//                     and Prepare run it alike, so both see the same plan);
//   ResolveAndCreate  resolve every weight into the arena's records and create each linear
//                     layer's operator, in the measured order.
// A model adds its limits, its arena plan (buffers and lifetimes) and its forward pass.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"
#include "runtime/kernels/backend.h"
#include "runtime/memory/planner.h"
#include "runtime/model/model.h"
#include "runtime/models/model_weights.h"
#include "tern/limits.h"

namespace tern {

class TransformerModel {
 public:
  TransformerModel(const TransformerModel&) = delete;
  TransformerModel& operator=(const TransformerModel&) = delete;

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

 protected:
  TransformerModel() = default;
  ~TransformerModel() = default;  // BackendSession destroys the thread pool, if any

  // The limits both models check: the backend's, 1 to 4096 sequences, and both lengths within
  // the model's max_positions; source / target say what the two lengths mean for the model.
  static Status CheckSharedLimits(const ModelConfig& c, const Limits& limits, const char* source,
                                  const char* target);
  // `batch` sequences ids[b * stride + i], i < lengths[b]: 1 to `most` tokens each, every id in
  // [0, vocab). what / tokens name them in messages ("sentence", "source token").
  static Status CheckSequences(const int32_t* ids, int64_t stride, const int32_t* lengths,
                               int32_t batch, int32_t most, int32_t vocab, const char* what,
                               const char* tokens);
  static Status PlanBackend(const Model& model, const Limits& limits, const ModelCalls& calls,
                            const AttentionCall& attention, BackendPlan* plan);
  // Places the plan in the caller's arena (*base: the aligned start) and records config, limits
  // and the bytes used.
  Status Place(const Model& model, const Limits& limits, const GreedyPlanner& planner, void* arena,
               size_t arena_bytes, uint8_t** base);
  Status ResolveAndCreate(const Model& model, const ModelCalls& calls, BackendPlan* plan,
                          const BackendBuffers& ids, const GreedyPlanner& planner, uint8_t* base,
                          const ModelLayers& layers);
  // Forgets the session (the arena is the caller's) and stops the thread pool.
  void ResetModel();
  // After a failed Prepare: reset, and the report says why.
  void Failed(const Status& status);

  ModelConfig config_;
  Limits limits_;
  size_t arena_used_ = 0;
  ModelWeights weights_;
  BackendSession backend_;
  char report_[512] = "not prepared";
};

}  // namespace tern
