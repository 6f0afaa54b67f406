#include "runtime/kernels/backend.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <new>

#include "runtime/model/model.h"

#if TERN_XNNPACK_BUILD
#include <pthreadpool.h>

#include "runtime/kernels/vectorized/linear_sign.h"
#include "runtime/kernels/xnnpack/kernel_check.h"
#endif

namespace tern {

#if TERN_XNNPACK_BUILD
namespace {

// What runs a layer on this path: its XNNPACK operator's name, or for kReference (no operator)
// the vectorizable loops ops::Linear runs then.
const char* RunsOn(xnn::LinearPath path) {
  return path == xnn::LinearPath::kReference ? "vectorized loops" : xnn::LinearPathName(path);
}

// threads: the session's; with a pool of up to kMaxParts threads large layers are cut into one
// operator per thread (linear.h).
xnn::LinearSpec Spec(const WeightView& weight, const float* bias, const LinearCall& call,
                     int32_t threads) {
  xnn::LinearSpec spec;
  spec.weight = weight;
  spec.bias = bias;
  spec.max_rows = call.rows;
  spec.input_stride = call.ldx;
  spec.output_stride = call.ldy;
  spec.parts = xnn::CutParts(threads, weight.rows);
  spec.copy_weight = true;  // a layer without an operator reads an arena copy (LinearSpec)
  spec.prefer_loops = true;
  return spec;
}

// Rows of loop_keys floats in the attention's loop scores: one per head (the loops of one call
// split by head) and one per thread (a decoder step's rows x heads split by thread).
size_t LoopScoreRows(const BackendPlan& plan) {
  return static_cast<size_t>(std::max<int64_t>(plan.attention_shape.heads, plan.threads));
}

}  // namespace
#endif

Status BackendPlan::MeasureLinear(const WeightView& weight, const float* bias,
                                  const LinearCall& call) {
  ++linears;
#if TERN_XNNPACK_BUILD
  if (backend != Backend::kXnnpack) return Status::Ok();
  const xnn::LinearSpec spec = Spec(weight, bias, call, threads);
  xnn::LinearChoice choice;
  TERN_RETURN_IF_ERROR(planner.Choose(spec, &choice));
  region_bytes = CheckedAdd(
      region_bytes, shared_weights && choice.shareable ? choice.operator_bytes : choice.xnn_bytes);
  if (choice.shareable) {
    packed_layers += choice.parts;  // each part is an entry of the shared region
    packed_bytes = CheckedAdd(packed_bytes, choice.packed_bytes);
  }
  if (choice.parts > 1) ++cut_layers;
  if (choice.scratch_bytes > scratch_bytes) scratch_bytes = choice.scratch_bytes;
  needs.Add(spec, choice.path);
  ++on_path[static_cast<int>(choice.path)];
  const xnn::LinearPath preferred = xnn::PreferredPath(weight);
  if (choice.path == xnn::LinearPath::kReference && vec::SignPanelsBeatXnnpack(weight)) {
    ++faster_loops;
  } else if (preferred != choice.path || preferred == xnn::LinearPath::kReference) {
    ++fallbacks[static_cast<int>(preferred)][static_cast<int>(choice.path)];
  }
#else
  (void)weight, (void)bias, (void)call;
#endif
  return Status::Ok();
}

Status BackendPlan::Finish(const AttentionCall& call) {
#if TERN_XNNPACK_BUILD
  if (backend != Backend::kXnnpack) return Status::Ok();
  size_t context_bytes = 0;
  TERN_RETURN_IF_ERROR(xnn::MeasureContext(needs, &context_bytes));
  region_bytes = CheckedAdd(region_bytes, context_bytes);
  attention_shape.heads = call.heads;
  attention_shape.d_head = call.d_head;
  attention_shape.max_queries = call.max_queries;
  attention_shape.max_keys = call.max_keys;
  attention_shape.loop_keys = call.loop_keys;
  attention_shape.parts = xnn::AttentionParts(threads, call.heads);
  attention = xnn::AttentionNeeds();
  if (call.max_queries > 0) {
    TERN_RETURN_IF_ERROR(xnn::MeasureAttention(attention_shape, &attention));
    region_bytes = CheckedAdd(region_bytes, attention.xnn_bytes);
  }
#else
  (void)call;
#endif
  return Status::Ok();
}

Status CheckBackendLimits(const Limits& limits) {
  if (limits.backend != Backend::kAuto && limits.backend != Backend::kReference &&
      limits.backend != Backend::kXnnpack) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.backend = %d is not a backend",
                         static_cast<int>(limits.backend));
  }
  if (limits.backend == Backend::kXnnpack && !TERN_XNNPACK_BUILD) {
    return Status::Error(
        StatusCode::kNotSupported,
        "limits.backend = xnnpack, but this build has no XNNPACK (TERN_WITH_XNNPACK=OFF)");
  }
  if (limits.threads < 1 || limits.threads > 256) {
    return Status::Error(StatusCode::kInvalidArgument, "limits.threads = %d; 1 to 256 allowed",
                         limits.threads);
  }
  return Status::Ok();
}

bool ChooseBackend(const Limits& limits, BackendPlan* plan) {
  plan->threads = limits.threads;
  plan->backend = limits.backend == Backend::kReference || !TERN_XNNPACK_BUILD ? Backend::kReference
                                                                               : Backend::kXnnpack;
  if (plan->backend == Backend::kReference) return false;
#if TERN_XNNPACK_BUILD
  const Status usable = xnn::Initialize();
  if (!usable.ok()) {  // No XNNPACK on this CPU / in this process: the reference kernels run.
    plan->backend = Backend::kReference;
    std::snprintf(plan->note, sizeof plan->note, "%s", usable.message());
    return false;
  }
#endif
  return true;
}

void PlanBackendOperators(const BackendPlan& plan, int prepare, int last, GreedyPlanner* p,
                          BackendBuffers* ids) {
#if TERN_XNNPACK_BUILD
  if (plan.backend != Backend::kXnnpack) return;
  ids->region = p->Add("xnnpack_operators", plan.region_bytes, prepare, last);
  ids->context = p->Add("xnnpack_context", sizeof(xnn::Context), prepare, last);
  ids->kernels = p->Add("xnnpack_kernels",
                        CheckedMul(static_cast<size_t>(plan.linears), sizeof(xnn::LinearKernel)),
                        prepare, last);
#else
  (void)plan, (void)prepare, (void)last, (void)p, (void)ids;
#endif
}

void PlanBackendScratch(const BackendPlan& plan, int prepare, int first_run, int last,
                        GreedyPlanner* p, BackendBuffers* ids) {
#if TERN_XNNPACK_BUILD
  if (plan.backend != Backend::kXnnpack) return;
  if (plan.scratch_bytes)
    ids->scratch = p->Add("xnnpack_prepare_scratch", plan.scratch_bytes, prepare, prepare);
  if (plan.needs.qd8) {
    ids->qd8_input = p->Add("qd8_input", plan.needs.qd8_input_bytes, first_run, last);
    ids->qd8_params = p->Add("qd8_params", plan.needs.qd8_params_bytes, first_run, last);
  }
  if (plan.needs.f16) {
    ids->f16_input = p->Add("f16_input", plan.needs.f16_input_bytes, first_run, last);
    ids->f16_output = p->Add("f16_output", plan.needs.f16_output_bytes, first_run, last);
  }
  if (plan.needs.qd8_rows_bytes > 0) {
    ids->qd8_rows = p->Add("qd8_rows", plan.needs.qd8_rows_bytes, first_run, last);
  }
#else
  (void)plan, (void)prepare, (void)first_run, (void)last, (void)p, (void)ids;
#endif
}

void PlanBackendAttention(const BackendPlan& plan, int prepare, int last, int batched_first,
                          int batched_last, GreedyPlanner* p, BackendBuffers* ids) {
#if TERN_XNNPACK_BUILD
  if (plan.backend != Backend::kXnnpack) return;
  // The record for the whole session (the one-query loops use it too); the batched path's
  // buffers only while it runs.
  ids->attention = p->Add("xnnpack_attention", sizeof(xnn::Attention), prepare, last);
  const xnn::AttentionNeeds& a = plan.attention;
  if (a.gather_bytes) {
    ids->att_gather = p->Add("attention_gather", a.gather_bytes, batched_first, batched_last);
    ids->att_scores = p->Add("attention_scores", a.scores_bytes, batched_first, batched_last);
    ids->att_qk_workspace =
        p->Add("attention_qk_workspace", a.qk_workspace_bytes, batched_first, batched_last);
    ids->att_av_workspace =
        p->Add("attention_av_workspace", a.av_workspace_bytes, batched_first, batched_last);
  }
  // With a pool the one-query loops split by head (a row of scores per head) and a decoder
  // step's rows x heads by thread (a row per thread).
  const xnn::AttentionShape& shape = plan.attention_shape;
  if (plan.threads > 1 && shape.heads > 1 && shape.loop_keys > 0) {
    ids->att_loop_scores =
        p->Add("attention_loop_scores",
               CheckedMul(CheckedMul(LoopScoreRows(plan), static_cast<size_t>(shape.loop_keys)),
                          sizeof(float)),
               prepare, last);
  }
#else
  (void)plan, (void)prepare, (void)last, (void)batched_first, (void)batched_last, (void)p,
      (void)ids;
#endif
}

size_t SharedPackedWeights::RequiredBytes(const BackendPlan& plan) {
#if TERN_XNNPACK_BUILD
  if (plan.backend == Backend::kXnnpack)
    return xnn::SharedRegion::RequiredBytes(plan.packed_layers, plan.packed_bytes);
#endif
  (void)plan;
  return 0;
}

Status SharedPackedWeights::Bind(void* memory, size_t bytes) {
#if TERN_XNNPACK_BUILD
  // 0 bytes (what RequiredBytes says for the reference backend): nothing can be packed into it.
  return region_.Bind(bytes == 0 ? nullptr : memory, bytes);
#else
  (void)memory, (void)bytes;
  return Status::Ok();
#endif
}

bool SharedPackedWeights::packed() const {
#if TERN_XNNPACK_BUILD
  return region_.ready();
#else
  return false;
#endif
}

size_t SharedPackedWeights::used_bytes() const {
#if TERN_XNNPACK_BUILD
  return region_.ready() ? region_.used_bytes() : 0;
#else
  return 0;
#endif
}

#if TERN_XNNPACK_BUILD
namespace {

// Claims an empty region for packing, or checks that a packed one holds this plan's layers.
Status StartShared(const BackendPlan& plan, const void* identity, xnn::SharedRegion* region,
                   bool* pack) {
  const size_t need = xnn::SharedRegion::RequiredBytes(plan.packed_layers, plan.packed_bytes);
  // A model XNNPACK packs nothing of (no layer with an operator) shares nothing: the
  // region, bound or not, stays as it is.
  *pack = false;
  if (need == 0) return Status::Ok();
  if (!region->bound()) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "shared weights have no memory: call SharedWeights::Init with %zu bytes",
                         need);
  }
  // Sessions of another thread count cut their layers into other parts: other packed layers.
  const int32_t cut = xnn::LargeLayerParts(plan.threads);
  if (region->ready()) {
    *pack = false;
    if (region->model() == identity && region->cut() != cut) {
      return Status::Error(StatusCode::kFailedPrecondition,
                           "the shared weights were packed for sessions of another thread count "
                           "(layers cut into %d operators; this session cuts into %d): give every "
                           "session on them the same limits.threads",
                           region->cut(), cut);
    }
    if (region->model() != identity || region->layers() != plan.packed_layers) {
      return Status::Error(StatusCode::kFailedPrecondition,
                           "the shared weights were packed for another model, or for sessions of "
                           "another thread count (%d packed layers; this one has %d)",
                           region->layers(), plan.packed_layers);
    }
    return Status::Ok();
  }
  if (region->capacity() + 63 < need) {
    return Status::Error(StatusCode::kArenaTooSmall,
                         "shared weights: %zu bytes of memory; this model's packed layers need %zu",
                         region->capacity(), need);
  }
  if (!region->Claim(identity, plan.packed_layers, cut)) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "another session is packing these shared weights: prepare the others "
                         "after its Prepare returned");
  }
  *pack = true;
  return Status::Ok();
}

}  // namespace
#endif

Status BackendSession::Begin(BackendPlan* plan, const BackendBuffers& ids,
                             const GreedyPlanner& planner, uint8_t* base,
                             SharedPackedWeights* shared, const void* identity) {
  Release();
  plan_ = plan;
  backend_ = plan->backend;
  kernels_ = ops::Kernels();
  if (backend_ != Backend::kXnnpack) return Status::Ok();
#if TERN_XNNPACK_BUILD
  if (shared != nullptr && plan->shared_weights) {
    bool pack = false;
    TERN_RETURN_IF_ERROR(StartShared(*plan, identity, &shared->region_, &pack));
    if (pack) packing_ = &shared->region_;
    cache_.Start(pack ? xnn::WeightsCache::Mode::kPack : xnn::WeightsCache::Mode::kReuse,
                 &shared->region_);
    next_packed_ = 0;
  }
  auto at = [&](int id) { return id >= 0 ? base + planner.offset(id) : nullptr; };
  xnn::Context* context = new (at(ids.context)) xnn::Context();
  context_ = context;
  context->qd8_input = reinterpret_cast<int8_t*>(at(ids.qd8_input));
  context->qd8_input_bytes = ids.qd8_input >= 0 ? plan->needs.qd8_input_bytes : 0;
  context->qd8_params = at(ids.qd8_params);
  context->qd8_params_bytes = ids.qd8_params >= 0 ? plan->needs.qd8_params_bytes : 0;
  context->f16_input = reinterpret_cast<uint16_t*>(at(ids.f16_input));
  context->f16_input_bytes = ids.f16_input >= 0 ? plan->needs.f16_input_bytes : 0;
  context->f16_output = reinterpret_cast<uint16_t*>(at(ids.f16_output));
  context->f16_output_bytes = ids.f16_output >= 0 ? plan->needs.f16_output_bytes : 0;
  context->qd8_rows = at(ids.qd8_rows);
  context->qd8_rows_bytes = ids.qd8_rows >= 0 ? plan->needs.qd8_rows_bytes : 0;
  if (plan->threads > 1) {
    // pthreadpool allocates its workers and their state on the heap: here, never later.
    pool_ = pthreadpool_create(static_cast<size_t>(plan->threads));
    pool_failed_ = pool_ == nullptr;
  }
  context->pool = pool_;

  xnn::Attention* attention = new (at(ids.attention)) xnn::Attention();
  attention->pool = pool_;
  attention->pool_budget = &context->pool_budget;
  attention->shape = plan->attention_shape;
  const xnn::AttentionNeeds& a = plan->attention;
  if (ids.att_gather >= 0) {
    attention->gather = reinterpret_cast<float*>(at(ids.att_gather));
    attention->gather_bytes = a.gather_bytes;
    attention->scores = reinterpret_cast<float*>(at(ids.att_scores));
    attention->scores_bytes = a.scores_bytes;
    attention->qk_workspace = at(ids.att_qk_workspace);
    attention->qk_workspace_bytes = a.qk_workspace_bytes;
    attention->av_workspace = at(ids.att_av_workspace);
    attention->av_workspace_bytes = a.av_workspace_bytes;
  }
  if (ids.att_loop_scores >= 0 && pool_ != nullptr) {
    attention->loop_scores = reinterpret_cast<float*>(at(ids.att_loop_scores));
    attention->loop_score_rows = static_cast<int64_t>(LoopScoreRows(*plan));
  }
  kernels_.attention = attention;
  kernels_.vectorized = true;
  if (pool_ != nullptr) {
    context->row_loops.pool = pool_;
    context->row_loops.budget = &context->pool_budget;
    kernels_.rows = &context->row_loops;
  }

  records_ = reinterpret_cast<xnn::LinearKernel*>(at(ids.kernels));
  scratch_ = at(ids.scratch);
  next_ = 0;
  new (scope_) xnn::ArenaScope(at(ids.region), plan->region_bytes);
  scope_open_ = true;
  TERN_RETURN_IF_ERROR(xnn::CreateContext(plan->needs, context));
  // The batched attention's operators are in the same region: Finish measured them into it.
  if (a.xnn_bytes > 0) TERN_RETURN_IF_ERROR(xnn::CreateAttention(plan->attention_shape, attention));
  return Status::Ok();
#else
  (void)ids, (void)planner, (void)base, (void)shared, (void)identity;
  return Status::Error(StatusCode::kNotSupported, "this build has no XNNPACK");
#endif
}

Status BackendSession::CreateLinear(WeightView* weight_view, const float* bias,
                                    const LinearCall& call, LinearKernel** kernel,
                                    const Model* source, bool source_rows_read) {
  *kernel = nullptr;
  if (backend_ != Backend::kXnnpack) return Status::Ok();
#if TERN_XNNPACK_BUILD
  const WeightView weight = *weight_view;
  const xnn::LinearSpec spec = Spec(weight, bias, call, plan_->threads);
  xnn::LinearChoice choice;
  TERN_RETURN_IF_ERROR(plan_->planner.Choose(spec, &choice));
  if (next_ >= plan_->linears)
    return Status::Error(StatusCode::kInternal, "more linear layers than planned");
  xnn::LinearKernel* record = new (&records_[next_++]) xnn::LinearKernel();
  xnn::WeightsCache* cache = nullptr;
  const int32_t first_packed = next_packed_;
  if (cache_.mode() != xnn::WeightsCache::Mode::kOff && choice.shareable) {
    next_packed_ += choice.parts;
    cache = &cache_;
  }
  TERN_RETURN_IF_ERROR(
      xnn::CreateLinear(spec, choice, context_, scratch_, record, cache, first_packed));
  // A layer XNNPACK has no operator for keeps its record too (no operator, path kReference):
  // ops::Linear then runs the vectorizable loops on it instead of the reference kernel.
  *kernel = record;
  // Layers of one shape, path and cut share the first one's pool governors, for their calls
  // alone and for the groups they lead (RunLinears); layers without an operator those of their
  // vectorizable loops (RunLinearLoops).
  for (int32_t i = 0; i + 1 < next_; ++i) {
    xnn::LinearKernel& other = records_[i];
    if (other.shared == nullptr && other.path == record->path && other.dtype == record->dtype &&
        other.group_size == record->group_size && other.n == record->n && other.k == record->k &&
        other.parts == record->parts) {
      record->shared = &other.own;
      record->shared_group = &other.own_group;
      break;
    }
  }
  // A layer without an operator reads the arena's copy from now on: every reader of this view
  // (its loops, a shortlist's rows) does.
  if (record->weight_copy != nullptr) weight_view->data = record->weight_copy;
  // (A layer packed for the sign loops reads only its packed copy, as an operator does.)
  const bool packed =
      choice.path != xnn::LinearPath::kReference || record->panel_weight.data != nullptr;
  if (record->weight_copy != nullptr || (packed && !source_rows_read)) {
    // The operator (or the arena) holds its own copy; the model's bytes are read again only by a
    // fallback call and, for a tied output projection, by the embedding lookup (its rows load
    // back from the file as they are used, a page at a time, if the pages were dropped).
    if (source != nullptr) {
      source->Consumed(weight.data, DTypeRowBytes(weight.dtype, static_cast<size_t>(weight.cols)) *
                                        static_cast<size_t>(weight.rows));
    }
  }
  return Status::Ok();
#else
  (void)weight_view, (void)bias, (void)call, (void)source, (void)source_rows_read;
  return Status::Ok();
#endif
}

namespace {

void WriteReferenceReport(const Limits& limits, const BackendPlan& plan, ReportWriter* out) {
  if (limits.backend == Backend::kReference) {
    out->Append("reference kernels (requested)");
  } else if (plan.note[0] != '\0') {
    out->Append("reference kernels: XNNPACK unusable here: %s", plan.note);
  } else {
    out->Append("reference kernels (this build has no XNNPACK)");
  }
}

}  // namespace

Status BackendSession::End(const Limits& limits, char* report, size_t size) {
  ReportWriter out(report, size);
  if (backend_ != Backend::kXnnpack) {
    WriteReferenceReport(limits, *plan_, &out);
    plan_ = nullptr;
    return Status::Ok();
  }
#if TERN_XNNPACK_BUILD
  xnn::ArenaScope* scope = reinterpret_cast<xnn::ArenaScope*>(scope_);
  const size_t used = scope->used();
  scope->~ArenaScope();
  scope_open_ = false;
  const BackendPlan& plan = *plan_;
  plan_ = nullptr;
  if (used != plan.region_bytes) {
    return Status::Error(StatusCode::kInternal,
                         "XNNPACK took %zu arena bytes at prepare; the dry run measured %zu", used,
                         plan.region_bytes);
  }
  if (packing_ != nullptr) {
    if (packing_->layers() != plan.packed_layers) {
      return Status::Error(StatusCode::kInternal,
                           "%d layers were packed into the shared weights; the dry run measured %d",
                           packing_->layers(), plan.packed_layers);
    }
    packing_->Finish();  // read-only from now on: other sessions may reuse it
    packing_ = nullptr;
  }
  // "xnnpack, 1 thread: 97 linear layers: 96 fully_connected_nc_qd8_f32_qc8w, 1 ...", then
  // attention and the detailed fallbacks.
  const bool pool = pool_ != nullptr;
  char untrusted[256];
  xnn::UntrustedPaths(untrusted, sizeof untrusted);
  out.Append("xnnpack, %d thread%s%s: %d linear layers:", pool ? plan.threads : 1, pool ? "s" : "",
             pool_failed_ ? " (pthreadpool_create failed; running on the calling thread)" : "",
             plan.linears);
  const char* separator = " ";
  for (int p = 0; p < xnn::kLinearPathCount; ++p) {
    if (plan.on_path[p] == 0) continue;
    out.Append("%s%d %s", separator, plan.on_path[p], RunsOn(static_cast<xnn::LinearPath>(p)));
    separator = ", ";
  }
  if (plan.cut_layers > 0) {
    out.Append(pool ? "; %d layers cut into %d operators each, one per thread"
                    : "; %d layers cut into %d operators each, run one after another",
               plan.cut_layers, xnn::LargeLayerParts(plan.threads));
  }
  if (plan.faster_loops > 0) {
    out.Append(
        "; %d int8 / int4 layers on vectorized loops (AVX2 vpmaddubsw on packed panels: "
        "faster than XNNPACK's AVX2 GEMMs, the same results)",
        plan.faster_loops);
  }
  if (plan.fallbacks[0][0] > 0) {
    out.Append(
        "; %d layers on vectorized loops: XNNPACK has no operator for their weights (int4 "
        "blocks must be a multiple of 32 dividing the row; int8 needs one scale per row%s)",
        plan.fallbacks[0][0],
        untrusted[0] ? "; or its kernels for them are wrong on this CPU" : "");
  }
  if (untrusted[0]) {
    out.Append("; XNNPACK's %s not used: wrong on this CPU (kernel_check.h)", untrusted);
  }
  if (kernels_.attention->qk[0] == nullptr) {
    out.Append("%s", "; attention: vectorized loops");
  } else {
    out.Append("%s", "; attention: encoder batch_matrix_multiply + softmax_nc_f32");
    // Its heads in one part per thread (xnn::AttentionParts), one pool task each.
    if (kernels_.attention->shape.parts > 1) {
      out.Append(" (heads in %d parts, one per thread)", kernels_.attention->shape.parts);
    }
    out.Append("%s", ", decoder vectorized loops");
  }
  out.Append("%s", "; LayerNorm, activations: vectorized loops");
  for (int p = 1; p < xnn::kLinearPathCount; ++p) {
    for (int q = 0; q < xnn::kLinearPathCount; ++q) {
      if (plan.fallbacks[p][q] == 0) continue;
      out.Append("; fallback: %d layers %s unsupported here -> %s", plan.fallbacks[p][q],
                 xnn::LinearPathName(static_cast<xnn::LinearPath>(p)),
                 RunsOn(static_cast<xnn::LinearPath>(q)));
    }
  }
  return Status::Ok();
#else
  return Status::Error(StatusCode::kNotSupported, "this build has no XNNPACK");
#endif
}

void BackendSession::Release() {
#if TERN_XNNPACK_BUILD
  if (scope_open_) reinterpret_cast<xnn::ArenaScope*>(scope_)->~ArenaScope();
  scope_open_ = false;
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
  pool_ = nullptr;
  if (packing_ != nullptr) packing_->Abandon();  // a Prepare that failed while packing
  packing_ = nullptr;
  cache_.Start(xnn::WeightsCache::Mode::kOff, nullptr);
  next_packed_ = 0;
  pool_failed_ = false;
  context_ = nullptr;
#endif
  plan_ = nullptr;
  kernels_ = ops::Kernels();
  backend_ = Backend::kReference;
}

uint64_t BackendSession::fallback_calls() const {
#if TERN_XNNPACK_BUILD
  if (context_ != nullptr) return context_->fallback_calls;
#endif
  return 0;
}

uint64_t BackendSession::linear_group_calls() const {
#if TERN_XNNPACK_BUILD
  if (context_ != nullptr) return context_->group_calls;
#endif
  return 0;
}

void BackendSession::BeginPass(ModelPass pass, int64_t rows) {
#if TERN_XNNPACK_BUILD
  if (context_ == nullptr || pool_ == nullptr) return;
  context_->passes.Begin(pass == ModelPass::kEncode ? xnn::PassGovernor::Pass::kEncode
                                                    : xnn::PassGovernor::Pass::kStep,
                         rows, &context_->pool_budget, pool_);
#else
  (void)pass;
  (void)rows;
#endif
}

void BackendSession::EndPass() {
#if TERN_XNNPACK_BUILD
  if (context_ != nullptr && pool_ != nullptr) context_->passes.End(&context_->pool_budget);
#endif
}

uint64_t BackendSession::passes() const {
#if TERN_XNNPACK_BUILD
  if (context_ != nullptr) return context_->passes.passes();
#endif
  return 0;
}

int32_t BackendSession::operator_layers() const {
  int32_t count = 0;
#if TERN_XNNPACK_BUILD
  if (context_ == nullptr) return 0;
  for (int32_t i = 0; i < next_; ++i) count += records_[i].op != nullptr;
#endif
  return count;
}

int32_t BackendSession::governor_groups() const {
  int32_t count = 0;
#if TERN_XNNPACK_BUILD
  if (context_ == nullptr) return 0;
  for (int32_t i = 0; i < next_; ++i) count += records_[i].op != nullptr && !records_[i].shared;
#endif
  return count;
}

uint64_t BackendSession::passes_without_pool() const {
#if TERN_XNNPACK_BUILD
  if (context_ != nullptr) return context_->passes.off_passes();
#endif
  return 0;
}

void ReportWriter::Append(const char* format, ...) {
  if (used_ >= size_) return;
  va_list args;
  va_start(args, format);
  const int wrote = std::vsnprintf(buffer_ + used_, size_ - used_, format, args);
  va_end(args);
  if (wrote > 0) used_ += static_cast<size_t>(wrote);
}

}  // namespace tern
