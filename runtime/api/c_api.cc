// The C API over the C++ API: models, errors and translation (generation with decoder-only
// models: c_generate.cc). Handles own only what the C++ objects need besides the caller's
// memory: a tern_model may own a file from the platform hook (runtime/api/platform.h), a
// tern_session its tokenizers.
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "runtime/api/c_api_internal.h"
#include "runtime/api/session_internal.h"
#include "runtime/tokenizer/translation_tokenizer.h"
#include "tern/tern.h"

struct tern_session {
  const tern_model* model = nullptr;
  tern::Session session;
  tern::TranslationTokenizer tokenizer;  // SentencePiece or BART's byte-level BPE
  bool tokenizers_tried = false;
};

namespace tern::capi {

namespace {
thread_local char g_last_error[tern::Status::kMaxMessage] = "";
}  // namespace

const char* LastError() { return g_last_error; }

tern_status Report(const tern::Status& status) {
  if (!status.ok()) std::snprintf(g_last_error, sizeof g_last_error, "%s", status.message());
  return static_cast<tern_status>(status.code());
}

tern_status Fail(tern::StatusCode code, const char* message) {
  return Report(tern::Status::Error(code, "%s", message));
}

tern::Limits ToLimits(const tern_limits* limits) {
  tern::Limits out;
  if (limits) {
    out.max_batch = limits->max_batch;
    out.max_source_length = limits->max_source_length;
    out.max_target_length = limits->max_target_length;
    out.beam_size = limits->beam_size;
    out.backend = static_cast<tern::Backend>(limits->backend);
    out.threads = limits->threads;
    out.max_batch_tokens = limits->max_batch_tokens;
    out.max_target_tokens = limits->max_target_tokens;
    // As the int it was stored as: a C caller may put any int in the enum field, and loading
    // one outside the enum's values as the enum type is undefined in C++ (UBSan says so).
    int32_t kv_cache;
    static_assert(sizeof kv_cache == sizeof limits->kv_cache, "tern_cache_type is an int");
    std::memcpy(&kv_cache, &limits->kv_cache, sizeof kv_cache);
    out.kv_cache = static_cast<tern::CacheType>(kv_cache);
  }
  return out;
}

bool Trampoline(void* user, int32_t sentence, int32_t step, int32_t token) {
  const auto* bridge = static_cast<const CallbackBridge*>(user);
  return bridge->callback(bridge->user, sentence, step, token) != 0;
}

}  // namespace tern::capi

namespace {

using tern::capi::CallbackBridge;
using tern::capi::Fail;
using tern::capi::Report;
using tern::capi::ToLimits;

tern::DecodingOptions ToOptions(const tern_translate_options* options, CallbackBridge* bridge) {
  tern::DecodingOptions out;
  if (options == nullptr) return out;
  out.max_length = options->max_length;
  out.max_length_ratio = options->max_length_ratio;
  out.max_length_extra = options->max_length_extra;
  out.min_length = options->min_length;
  out.beam_size = options->beam_size;
  out.n_best = options->n_best;
  out.length_penalty = options->length_penalty;
  out.repetition_penalty = options->repetition_penalty;
  out.no_repeat_ngram_size = options->no_repeat_ngram_size;
  out.use_shortlist = options->no_shortlist == 0;
  // Zero-initialized options force nothing (token 0 is a real token).
  out.forced_bos_id = options->force_bos != 0 ? options->forced_bos_id : -1;
  if (options->on_token) {
    *bridge = CallbackBridge{options->on_token, options->user};
    out.on_token = tern::capi::Trampoline;
    out.user = bridge;
  }
  return out;
}

}  // namespace

extern "C" {

const char* tern_version(void) { return tern::Version(); }

const char* tern_status_string(tern_status status) {
  return tern::StatusCodeName(static_cast<tern::StatusCode>(status));
}

const char* tern_last_error(void) { return tern::capi::LastError(); }

tern_limits tern_default_limits(void) {
  const tern::Limits d;
  return tern_limits{d.max_batch,
                     d.max_source_length,
                     d.max_target_length,
                     d.beam_size,
                     static_cast<tern_backend>(d.backend),
                     d.threads,
                     d.max_batch_tokens,
                     static_cast<tern_cache_type>(d.kv_cache),
                     d.max_target_tokens};
}

tern_translate_options tern_default_translate_options(void) {
  const tern::DecodingOptions d;
  tern_translate_options o;
  o.max_length = d.max_length;
  o.max_length_ratio = d.max_length_ratio;
  o.max_length_extra = d.max_length_extra;
  o.min_length = d.min_length;
  o.beam_size = d.beam_size;
  o.n_best = d.n_best;
  o.length_penalty = d.length_penalty;
  o.repetition_penalty = d.repetition_penalty;
  o.no_repeat_ngram_size = d.no_repeat_ngram_size;
  o.on_token = nullptr;
  o.user = nullptr;
  o.no_shortlist = d.use_shortlist ? 0 : 1;
  o.force_bos = 0;
  o.forced_bos_id = 0;
  return o;
}

tern_status tern_model_load_from_memory(const void* data, size_t size, tern_model** out) {
  if (out == nullptr) return Fail(tern::StatusCode::kInvalidArgument, "out is null");
  *out = nullptr;
  auto model = tern::Model::Load(data, size);
  if (!model.ok()) return Report(model.status());
  tern_model* handle = new (std::nothrow) tern_model();
  if (handle == nullptr)
    return Fail(tern::StatusCode::kOutOfMemory, "cannot allocate the model handle");
  handle->model = model.value();
  *out = handle;
  return TERN_OK;
}

tern_status tern_model_load_from_file(const char* path, tern_model** out) {
  if (out == nullptr || path == nullptr)
    return Fail(tern::StatusCode::kInvalidArgument, "path or out is null");
  *out = nullptr;
  // The platform linked in (runtime/api/platform.h) turns the path into bytes.
  tern_model* handle = new (std::nothrow) tern_model();
  if (handle == nullptr)
    return Fail(tern::StatusCode::kOutOfMemory, "cannot allocate the model handle");
  const tern::Status opened = tern::platform::OpenModelFile(path, &handle->file);
  if (!opened.ok()) {
    delete handle;
    return Report(opened);
  }
  auto model = tern::Model::Load(handle->file.data, handle->file.size);
  if (!model.ok()) {
    delete handle;  // releases the file
    return Report(model.status());
  }
  handle->model = model.value();
  handle->model.set_consumed_hook(handle->file.consumed, handle->file.handle);
  *out = handle;
  return TERN_OK;
}

void tern_model_free(tern_model* model) { delete model; }

tern_status tern_model_language_token(const tern_model* model, const char* code,
                                      int32_t* out_token) {
  if (model == nullptr || code == nullptr || out_token == nullptr)
    return Fail(tern::StatusCode::kInvalidArgument, "model, code or out_token is null");
  const tern::Status s = model->model.LanguageToken(code, out_token);
  return s.ok() ? TERN_OK : Report(s);
}

tern_status tern_required_arena_bytes(const tern_model* model, const tern_limits* limits,
                                      size_t* out_bytes) {
  if (model == nullptr || out_bytes == nullptr)
    return Fail(tern::StatusCode::kInvalidArgument, "model or out_bytes is null");
  auto bytes = tern::Session::RequiredArenaBytes(model->model, ToLimits(limits), model->shared());
  if (!bytes.ok()) return Report(bytes.status());
  *out_bytes = bytes.value();
  return TERN_OK;
}

tern_status tern_shared_weights_bytes(const tern_model* model, const tern_limits* limits,
                                      size_t* out_bytes) {
  if (model == nullptr || out_bytes == nullptr)
    return Fail(tern::StatusCode::kInvalidArgument, "model or out_bytes is null");
  auto bytes = tern::SharedWeights::RequiredBytes(model->model, ToLimits(limits));
  if (!bytes.ok()) return Report(bytes.status());
  *out_bytes = bytes.value();
  return TERN_OK;
}

tern_status tern_model_share_weights(tern_model* model, void* memory, size_t bytes) {
  if (model == nullptr) return Fail(tern::StatusCode::kInvalidArgument, "model is null");
  const tern::Status status = model->shared_weights.Init(memory, bytes);
  if (!status.ok()) return Report(status);
  model->sharing = true;
  return TERN_OK;
}

tern_status tern_session_create(const tern_model* model, const tern_limits* limits, void* arena,
                                size_t arena_bytes, tern_session** out) {
  if (model == nullptr || out == nullptr)
    return Fail(tern::StatusCode::kInvalidArgument, "model or out is null");
  *out = nullptr;
  tern_session* session = new (std::nothrow) tern_session();
  if (session == nullptr)
    return Fail(tern::StatusCode::kOutOfMemory, "cannot allocate the session handle");
  session->model = model;
  // A session writes the model's shared weights only while it packs them (the first one), which
  // the SharedWeights object guards itself: the handle is otherwise read-only here.
  const tern::Status status = session->session.Prepare(
      model->model, ToLimits(limits), arena, arena_bytes, const_cast<tern_model*>(model)->shared());
  if (!status.ok()) {
    delete session;
    return Report(status);
  }
  *out = session;
  return TERN_OK;
}

void tern_session_free(tern_session* session) { delete session; }

tern_status tern_translate_ids(tern_session* session, const int32_t* src, size_t src_length,
                               const tern_translate_options* options, int32_t* out,
                               size_t out_capacity, size_t* out_length) {
  if (session == nullptr || src == nullptr || out == nullptr || out_length == nullptr) {
    return Fail(tern::StatusCode::kInvalidArgument, "session, src, out or out_length is null");
  }
  if (options && options->n_best > 1) {
    return Fail(tern::StatusCode::kInvalidArgument, "n_best > 1 needs tern_translate_ids_batch");
  }
  CallbackBridge bridge;
  return Report(session->session.TranslateIds(tern::Span<const int32_t>(src, src_length),
                                              tern::Span<int32_t>(out, out_capacity), out_length,
                                              ToOptions(options, &bridge)));
}

tern_status tern_translate_ids_batch(tern_session* session, const int32_t* src, size_t src_stride,
                                     const int32_t* src_lengths, int32_t batch,
                                     const tern_translate_options* options, int32_t* out,
                                     size_t out_stride, int32_t* out_lengths) {
  if (session == nullptr) return Fail(tern::StatusCode::kInvalidArgument, "session is null");
  CallbackBridge bridge;
  return Report(session->session.TranslateIds(src, static_cast<int64_t>(src_stride), src_lengths,
                                              batch, ToOptions(options, &bridge), out,
                                              static_cast<int64_t>(out_stride), out_lengths));
}

tern_status tern_translate_text(tern_session* session, const char* text,
                                const tern_translate_options* options, char* out,
                                size_t out_capacity) {
  if (session == nullptr || text == nullptr || out == nullptr || out_capacity == 0) {
    return Fail(tern::StatusCode::kInvalidArgument,
                "session, text or out is null, or out_capacity is 0");
  }
  out[0] = '\0';
  if (text[strspn(text, " \t\r\n")] == '\0') return TERN_OK;  // empty lines pass through
  const tern::Model& model = session->model->model;
  if (!session->tokenizers_tried) {
    session->tokenizers_tried = true;
    const tern::Status s = session->tokenizer.Load(model);
    if (!s.ok()) return Report(s);
  }
  if (!session->tokenizer.loaded()) {
    return Fail(tern::StatusCode::kFailedPrecondition, "the model file has no usable tokenizer");
  }
  std::vector<int32_t> ids;
  tern::Status s = session->tokenizer.Encode(text, model.config().eos_id, &ids);
  if (!s.ok()) return Report(s);
  const tern::Limits& limits = tern::internal::encoder_decoder(session->session).limits();
  std::vector<int32_t> result(static_cast<size_t>(limits.max_target_length));
  size_t produced = 0;
  if (options && options->n_best > 1) {
    return Fail(tern::StatusCode::kInvalidArgument,
                "tern_translate_text returns one translation (n_best 1)");
  }
  CallbackBridge bridge;
  s = session->session.TranslateIds(tern::Span<const int32_t>(ids.data(), ids.size()),
                                    tern::Span<int32_t>(result.data(), result.size()), &produced,
                                    ToOptions(options, &bridge));
  if (!s.ok()) return Report(s);
  std::string translation;
  s = session->tokenizer.Decode(result.data(), produced, &translation);
  if (!s.ok()) return Report(s);
  if (translation.size() >= out_capacity) {
    std::memcpy(out, translation.data(), out_capacity - 1);
    out[out_capacity - 1] = '\0';
    return Fail(tern::StatusCode::kOutOfRange, "translation does not fit in the output buffer");
  }
  std::memcpy(out, translation.c_str(), translation.size() + 1);
  return TERN_OK;
}

}  // extern "C"
