#include "runtime/models/xnnpack_linears.h"

#include <cstdarg>
#include <cstdio>
#include <new>

#if TERN_XNNPACK_BUILD
#include <pthreadpool.h>
#endif

namespace tern {

#if TERN_XNNPACK_BUILD
namespace {

xnn::LinearSpec Spec(const LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy) {
  xnn::LinearSpec spec;
  spec.weight = w.weight;
  spec.bias = w.bias;
  spec.max_rows = rows;
  spec.input_stride = ldx;
  spec.output_stride = ldy;
  return spec;
}

}  // namespace

Status XnnpackLinearsPlan::Measure(const LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy) {
  const xnn::LinearSpec spec = Spec(w, rows, ldx, ldy);
  xnn::LinearChoice choice;
  TERN_RETURN_IF_ERROR(planner.Choose(spec, &choice));
  region_bytes = CheckedAdd(region_bytes, choice.xnn_bytes);
  if (choice.scratch_bytes > scratch_bytes) scratch_bytes = choice.scratch_bytes;
  needs.Add(spec, choice.path);
  ++linears;
  ++on_path[static_cast<int>(choice.path)];
  const xnn::LinearPath preferred = xnn::PreferredPath(w.weight);
  if (preferred != choice.path || preferred == xnn::LinearPath::kReference) {
    ++fallbacks[static_cast<int>(preferred)][static_cast<int>(choice.path)];
  }
  return Status::Ok();
}

Status XnnpackLinearsPlan::MeasureContext() {
  size_t context_bytes = 0;
  TERN_RETURN_IF_ERROR(xnn::MeasureContext(needs, &context_bytes));
  region_bytes = CheckedAdd(region_bytes, context_bytes);
  return Status::Ok();
}

int32_t XnnpackLinearsPlan::off_preferred() const {
  // [0][0] counts layers that prefer the reference kernel and got it: not off their path.
  int32_t n = 0;
  for (int p = 0; p < xnn::kLinearPathCount; ++p) {
    for (int q = 0; q < xnn::kLinearPathCount; ++q) {
      if (p != q) n += fallbacks[p][q];
    }
  }
  return n;
}
#endif

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

bool ChooseBackend(const Limits& limits, XnnpackLinearsPlan* plan) {
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

void PlanXnnpackOperators(const XnnpackLinearsPlan& plan, int prepare, int last, GreedyPlanner* p,
                          XnnpackLinearBuffers* ids) {
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

void PlanXnnpackScratch(const XnnpackLinearsPlan& plan, int prepare, int first_run, int last,
                        GreedyPlanner* p, XnnpackLinearBuffers* ids) {
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
#else
  (void)plan, (void)prepare, (void)first_run, (void)last, (void)p, (void)ids;
#endif
}

void XnnpackSession::Start(const XnnpackLinearsPlan& plan, const XnnpackLinearBuffers& ids,
                           const GreedyPlanner& planner, uint8_t* base) {
#if TERN_XNNPACK_BUILD
  auto at = [&](int id) { return id >= 0 ? base + planner.offset(id) : nullptr; };
  xnn::Context* context = new (at(ids.context)) xnn::Context();
  context_ = context;
  context->qd8_input = reinterpret_cast<int8_t*>(at(ids.qd8_input));
  context->qd8_input_bytes = ids.qd8_input >= 0 ? plan.needs.qd8_input_bytes : 0;
  context->qd8_params = at(ids.qd8_params);
  context->qd8_params_bytes = ids.qd8_params >= 0 ? plan.needs.qd8_params_bytes : 0;
  context->f16_input = reinterpret_cast<uint16_t*>(at(ids.f16_input));
  context->f16_input_bytes = ids.f16_input >= 0 ? plan.needs.f16_input_bytes : 0;
  context->f16_output = reinterpret_cast<uint16_t*>(at(ids.f16_output));
  context->f16_output_bytes = ids.f16_output >= 0 ? plan.needs.f16_output_bytes : 0;
  pool_failed_ = false;
  if (plan.threads > 1) {
    // pthreadpool allocates its workers and their state on the heap: here, never later.
    pool_ = pthreadpool_create(static_cast<size_t>(plan.threads));
    pool_failed_ = pool_ == nullptr;
  }
  context->pool = pool_;
#else
  (void)plan, (void)ids, (void)planner, (void)base;
#endif
}

void XnnpackSession::Release() {
  context_ = nullptr;
  pool_failed_ = false;
#if TERN_XNNPACK_BUILD
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
#endif
  pool_ = nullptr;
}

uint64_t XnnpackSession::fallback_calls() const {
#if TERN_XNNPACK_BUILD
  if (context_ != nullptr) return context_->fallback_calls;
#endif
  return 0;
}

#if TERN_XNNPACK_BUILD
XnnpackLinearsCreator::XnnpackLinearsCreator(const XnnpackLinearsPlan& plan,
                                             const XnnpackLinearBuffers& ids,
                                             const GreedyPlanner& planner, uint8_t* base,
                                             xnn::Context* context)
    : plan_(plan),
      scope_(base + planner.offset(ids.region), plan.region_bytes),
      choices_(plan.planner),
      context_(context),
      kernels_(reinterpret_cast<xnn::LinearKernel*>(base + planner.offset(ids.kernels))),
      scratch_(ids.scratch >= 0 ? base + planner.offset(ids.scratch) : nullptr) {}

Status XnnpackLinearsCreator::Start() { return xnn::CreateContext(plan_.needs, context_); }

Status XnnpackLinearsCreator::operator()(LinearWeights& w, int64_t rows, int64_t ldx, int64_t ldy) {
  const xnn::LinearSpec spec = Spec(w, rows, ldx, ldy);
  xnn::LinearChoice choice;
  TERN_RETURN_IF_ERROR(choices_.Choose(spec, &choice));
  if (next_ >= plan_.linears)
    return Status::Error(StatusCode::kInternal, "more linear layers than planned");
  xnn::LinearKernel* kernel = new (&kernels_[next_++]) xnn::LinearKernel();
  TERN_RETURN_IF_ERROR(xnn::CreateLinear(spec, choice, context_, scratch_, kernel));
  w.kernel = choice.path == xnn::LinearPath::kReference ? nullptr : kernel;
  return Status::Ok();
}

Status XnnpackLinearsCreator::Finish() const {
  if (scope_.used() != plan_.region_bytes) {
    return Status::Error(StatusCode::kInternal,
                         "XNNPACK took %zu arena bytes at prepare; the dry run measured %zu",
                         scope_.used(), plan_.region_bytes);
  }
  return Status::Ok();
}
#endif

void ReportWriter::Append(const char* format, ...) {
  if (used_ >= size_) return;
  va_list args;
  va_start(args, format);
  const int wrote = std::vsnprintf(buffer_ + used_, size_ - used_, format, args);
  va_end(args);
  if (wrote > 0) used_ += static_cast<size_t>(wrote);
}

#if TERN_XNNPACK_BUILD
void AppendXnnpackLinearsReport(const XnnpackLinearsPlan& plan, const XnnpackSession& session,
                                ReportWriter* out) {
  const bool pool = session.pool() != nullptr;
  out->Append(
      "xnnpack, %d thread%s%s: %d linear layers:", pool ? plan.threads : 1, pool ? "s" : "",
      session.pool_failed() ? " (pthreadpool_create failed; running on the calling thread)" : "",
      plan.linears);
  const char* separator = " ";
  for (int p = 0; p < xnn::kLinearPathCount; ++p) {
    if (plan.on_path[p] == 0) continue;
    out->Append("%s%d %s", separator, plan.on_path[p],
                xnn::LinearPathName(static_cast<xnn::LinearPath>(p)));
    separator = ", ";
  }
}
#endif

void WriteReferenceReport(const Limits& limits, const XnnpackLinearsPlan& plan, char* report,
                          size_t size) {
  if (limits.backend == Backend::kReference) {
    std::snprintf(report, size, "reference kernels (requested)");
  } else if (plan.note[0] != '\0') {
    std::snprintf(report, size, "reference kernels: XNNPACK unusable here: %s", plan.note);
  } else {
    std::snprintf(report, size, "reference kernels (this build has no XNNPACK)");
  }
}

}  // namespace tern
