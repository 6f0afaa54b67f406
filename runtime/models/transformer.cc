#include "runtime/models/transformer.h"

#include <cstdio>

namespace tern {

Status TransformerModel::CheckSharedLimits(const ModelConfig& c, const Limits& limits,
                                           const char* source, const char* target) {
  TERN_RETURN_IF_ERROR(CheckBackendLimits(limits));
  if (limits.kv_cache != CacheType::kFloat32 && limits.kv_cache != CacheType::kFloat16) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "limits.kv_cache = %d; 0 (float32) or 1 (float16) allowed",
                         static_cast<int>(limits.kv_cache));
  }
  if (limits.max_batch < 1 || limits.max_batch > 4096) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.max_batch = %d; 1 to 4096 allowed",
                         limits.max_batch);
  }
  const int32_t lengths[2] = {limits.max_source_length, limits.max_target_length};
  const char* names[2] = {"max_source_length", "max_target_length"};
  const char* meanings[2] = {source, target};
  for (int i = 0; i < 2; ++i) {
    if (lengths[i] < 1 || lengths[i] > c.max_positions) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "limits.%s%s = %d; 1 to the model's max_positions (%d) allowed",
                           names[i], meanings[i], lengths[i], c.max_positions);
    }
  }
  return Status::Ok();
}

Status TransformerModel::CheckSequences(const int32_t* ids, int64_t stride, const int32_t* lengths,
                                        int32_t batch, int32_t most, int32_t vocab,
                                        const char* what, const char* tokens) {
  for (int32_t b = 0; b < batch; ++b) {
    if (lengths[b] < 1 || lengths[b] > most || lengths[b] > stride) {
      return Status::Error(StatusCode::kOutOfRange, "%s %d has %d %ss; 1 to %d allowed", what, b,
                           lengths[b], tokens, most);
    }
    for (int32_t i = 0; i < lengths[b]; ++i) {
      const int32_t id = ids[b * stride + i];
      if (id < 0 || id >= vocab) {
        return Status::Error(StatusCode::kOutOfRange,
                             "%s %d: %s id %d at %d is outside the vocabulary [0, %d)", what, b,
                             tokens, id, i, vocab);
      }
    }
  }
  return Status::Ok();
}

Status TransformerModel::PlanBackend(const Model& model, const Limits& limits,
                                     const AttentionCall& attention, Planned* plan) {
  if (!ChooseBackend(limits, &plan->backend)) return Status::Ok();
  ModelResolver resolve(model, &plan->backend);
  ModelWeights weights;
  TERN_RETURN_IF_ERROR(
      DescribeModel(model.config(), plan->calls, resolve, &weights, ModelLayers()));
  return plan->backend.Finish(attention);
}

Status TransformerModel::Prepare(const Model& model, const Limits& limits, void* arena,
                                 size_t arena_bytes, const BufferRequests& requests,
                                 SharedPackedWeights* shared) {
  Reset();
  const Status status = PrepareInArena(model, limits, arena, arena_bytes, requests, shared);
  if (!status.ok()) {
    Reset();
    std::snprintf(report_, sizeof report_, "not prepared: %s", status.message());
  }
  return status;
}

Status TransformerModel::PrepareInArena(const Model& model, const Limits& limits, void* arena,
                                        size_t arena_bytes, const BufferRequests& requests,
                                        SharedPackedWeights* shared) {
  if (model.schema() == nullptr) {
    return Status::Error(StatusCode::kFailedPrecondition, "model is not loaded");
  }
  if (arena == nullptr) return Status::Error(StatusCode::kInvalidArgument, "arena is null");
  Planned plan;
  plan.backend.shared_weights = shared != nullptr;
  TERN_RETURN_IF_ERROR(PlanAll(model, limits, requests, &plan));
  uint8_t* base = nullptr;
  TERN_RETURN_IF_ERROR(plan.arena.Place(arena, arena_bytes, &base));
  config_ = model.config();
  limits_ = limits;
  arena_used_ = plan.arena.planner().arena_bytes();
  TERN_RETURN_IF_ERROR(backend_.Begin(&plan.backend, plan.backend_ids, plan.arena.planner(), base,
                                      shared, model.schema()));
  ModelResolver resolve(model, nullptr, &backend_);
  weights_ = ModelWeights();
  TERN_RETURN_IF_ERROR(DescribeModel(config_, plan.calls, resolve, &weights_, layers_));
  TERN_RETURN_IF_ERROR(backend_.End(limits_, report_, sizeof report_));
  Start();
  return Status::Ok();
}

void TransformerModel::Reset() {
  arena_used_ = 0;
  layers_ = ModelLayers();
  backend_.Release();
}

}  // namespace tern
