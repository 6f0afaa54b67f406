#include "runtime/models/transformer.h"

#include <cstdio>

namespace tern {

namespace {

class Measure final : public LinearHook {
 public:
  explicit Measure(BackendPlan* plan) : plan_(plan) {}
  Status operator()(LinearWeights& w, const LinearCall& call) override {
    return plan_->MeasureLinear(w.weight, w.bias, call);
  }

 private:
  BackendPlan* plan_;
};

class Create final : public LinearHook {
 public:
  explicit Create(BackendSession* session) : session_(session) {}
  Status operator()(LinearWeights& w, const LinearCall& call) override {
    return session_->CreateLinear(w.weight, w.bias, call, &w.kernel);
  }

 private:
  BackendSession* session_;
};

}  // namespace

Status TransformerModel::PlanBackend(const Model& model, const Limits& limits,
                                     const ModelCalls& calls, const AttentionCall& attention,
                                     BackendPlan* plan) {
  if (!ChooseBackend(limits, plan)) return Status::Ok();
  Measure measure(plan);
  ModelResolver resolve(model, &measure);
  ModelWeights weights;
  TERN_RETURN_IF_ERROR(DescribeModel(model.config(), calls, resolve, &weights, ModelLayers()));
  return plan->Finish(attention);
}

Status TransformerModel::Place(const Model& model, const Limits& limits,
                               const GreedyPlanner& planner, void* arena, size_t arena_bytes,
                               uint8_t** base) {
  TERN_RETURN_IF_ERROR(planner.Place(arena, arena_bytes, base));
  config_ = model.config();
  limits_ = limits;
  arena_used_ = planner.arena_bytes();
  return Status::Ok();
}

Status TransformerModel::ResolveAndCreate(const Model& model, const ModelCalls& calls,
                                          BackendPlan* plan, const BackendBuffers& ids,
                                          const GreedyPlanner& planner, uint8_t* base,
                                          const ModelLayers& layers) {
  TERN_RETURN_IF_ERROR(backend_.Begin(plan, ids, planner, base));
  Create create(&backend_);
  ModelResolver resolve(model, &create);
  weights_ = ModelWeights();
  TERN_RETURN_IF_ERROR(DescribeModel(config_, calls, resolve, &weights_, layers));
  return backend_.End(limits_, report_, sizeof report_);
}

void TransformerModel::ResetModel() {
  arena_used_ = 0;
  backend_.Release();
}

void TransformerModel::Failed(const Status& status) {
  ResetModel();
  std::snprintf(report_, sizeof report_, "not prepared: %s", status.message());
}

}  // namespace tern
