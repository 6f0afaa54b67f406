// The C API's generation part: tern_generator over tern::Generator (decoder-only models). The
// handle holds the Generator (its state lives in the caller's arena); generating allocates
// nothing, here as in C++.
#include <cstdint>
#include <new>

#include "runtime/api/c_api_internal.h"
#include "tern/tern.h"

namespace {

using tern::capi::CallbackBridge;
using tern::capi::Fail;
using tern::capi::Report;
using tern::capi::ToLimits;

tern::GenerationOptions ToOptions(const tern_generate_options* options, CallbackBridge* bridge) {
  tern::GenerationOptions out;
  if (options == nullptr) return out;
  out.max_new_tokens = options->max_new_tokens;
  out.stop_at_eos = options->stop_at_eos != 0;
  out.sampling.temperature = options->temperature;
  out.sampling.top_k = options->top_k;
  out.sampling.top_p = options->top_p;
  out.sampling.seed = options->seed;
  if (options->on_token) {
    *bridge = CallbackBridge{options->on_token, options->user};
    out.on_token = tern::capi::Trampoline;
    out.user = bridge;
  }
  return out;
}

}  // namespace

extern "C" {

tern_generate_options tern_default_generate_options(void) {
  const tern::GenerationOptions d;
  tern_generate_options o;
  o.max_new_tokens = d.max_new_tokens;
  o.temperature = d.sampling.temperature;
  o.top_k = d.sampling.top_k;
  o.top_p = d.sampling.top_p;
  o.seed = d.sampling.seed;
  o.stop_at_eos = d.stop_at_eos ? 1 : 0;
  o.on_token = nullptr;
  o.user = nullptr;
  return o;
}

tern_status tern_generator_required_arena_bytes(const tern_model* model, const tern_limits* limits,
                                                size_t* out_bytes) {
  if (model == nullptr || out_bytes == nullptr) {
    return Fail(tern::StatusCode::kInvalidArgument, "model or out_bytes is null");
  }
  auto bytes = tern::Generator::RequiredArenaBytes(model->model, ToLimits(limits), model->shared());
  if (!bytes.ok()) return Report(bytes.status());
  *out_bytes = bytes.value();
  return TERN_OK;
}

tern_status tern_generator_create(const tern_model* model, const tern_limits* limits, void* arena,
                                  size_t arena_bytes, tern_generator** out) {
  if (model == nullptr || out == nullptr)
    return Fail(tern::StatusCode::kInvalidArgument, "model or out is null");
  *out = nullptr;
  tern_generator* handle = new (std::nothrow) tern_generator();
  if (handle == nullptr)
    return Fail(tern::StatusCode::kOutOfMemory, "cannot allocate the generator handle");
  handle->model = model;
  const tern::Status status = handle->generator.Prepare(
      model->model, ToLimits(limits), arena, arena_bytes, const_cast<tern_model*>(model)->shared());
  if (!status.ok()) {
    delete handle;
    return Report(status);
  }
  *out = handle;
  return TERN_OK;
}

void tern_generator_free(tern_generator* generator) { delete generator; }

tern_status tern_generate_ids(tern_generator* generator, const int32_t* prompt,
                              size_t prompt_length, const tern_generate_options* options,
                              int32_t* out, size_t out_capacity, size_t* out_length) {
  if (generator == nullptr || prompt == nullptr || out == nullptr || out_length == nullptr) {
    return Fail(tern::StatusCode::kInvalidArgument, "generator, prompt, out or out_length is null");
  }
  *out_length = 0;
  // out_capacity is the output stride: a budget that may not fit is refused before any token is
  // written (TERN_INVALID_ARGUMENT).
  CallbackBridge bridge;
  return Report(generator->generator.Generate(tern::Span<const int32_t>(prompt, prompt_length),
                                              tern::Span<int32_t>(out, out_capacity), out_length,
                                              ToOptions(options, &bridge)));
}

tern_status tern_generate_ids_batch(tern_generator* generator, const int32_t* prompts,
                                    size_t prompt_stride, const int32_t* prompt_lengths,
                                    int32_t batch, const tern_generate_options* options,
                                    int32_t* out, size_t out_stride, int32_t* out_lengths) {
  if (generator == nullptr) return Fail(tern::StatusCode::kInvalidArgument, "generator is null");
  if (prompt_stride > static_cast<size_t>(INT32_MAX) ||
      out_stride > static_cast<size_t>(INT32_MAX)) {
    return Fail(tern::StatusCode::kOutOfRange, "prompt_stride or out_stride is too large");
  }
  CallbackBridge bridge;
  return Report(generator->generator.Generate(prompts, static_cast<int64_t>(prompt_stride),
                                              prompt_lengths, batch, ToOptions(options, &bridge),
                                              out, static_cast<int64_t>(out_stride), out_lengths));
}

}  // extern "C"
