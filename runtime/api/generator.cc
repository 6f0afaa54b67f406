#include "runtime/api/session_internal.h"
#include "runtime/decoding/generate.h"
#include "runtime/models/architectures.h"
#include "tern/tern.hpp"

namespace tern {

using internal::SessionAccess;

// As for Session (session.cc): the storage in tern.hpp must hold the class it never sees.
static_assert(sizeof(internal::Generation) <= Generator::kStorageBytes,
              "DecoderOnly and its generation state do not fit in Generator::kStorageBytes");
static_assert(alignof(internal::Generation) <= 16,
              "DecoderOnly needs more than Generator's alignment");

Generator::Generator() { new (SessionAccess::Storage(*this)) internal::Generation(); }
Generator::~Generator() { SessionAccess::Get(*this).~Generation(); }

size_t Generator::arena_used_bytes() const {
  return SessionAccess::Model(*this).arena_used_bytes();
}
Backend Generator::backend() const { return SessionAccess::Model(*this).backend(); }
const char* Generator::backend_report() const {
  return SessionAccess::Model(*this).backend_report();
}

// Model::Load checked the file format only: the architecture's tensors and shapes are checked
// here, before anything is sized from them, as Session does. The arena holds the generation
// state too, planned by the model from these requests (as Session's).
Result<size_t> Generator::RequiredArenaBytes(const Model& model, const Limits& limits,
                                             const SharedWeights* shared) {
  TERN_RETURN_IF_ERROR(ValidateArchitecture(model));
  GenerationState scratch;  // only asked for sizes
  BufferRequests requests;
  scratch.Request(model.config(), limits, &requests);
  return DecoderOnly::RequiredArenaBytes(model, limits, requests, shared != nullptr);
}

Status Generator::Prepare(const Model& model, const Limits& limits, void* arena, size_t arena_bytes,
                          SharedWeights* shared) {
  TERN_RETURN_IF_ERROR(ValidateArchitecture(model));
  internal::Generation& g = SessionAccess::Get(*this);
  BufferRequests requests;
  g.decoding.Request(model.config(), limits, &requests);
  return g.model.Prepare(model, limits, arena, arena_bytes, requests, SessionAccess::Get(shared));
}

Status Generator::Generate(const int32_t* prompts, int64_t prompt_stride,
                           const int32_t* prompt_lengths, int32_t batch,
                           const GenerationOptions& options, int32_t* out_ids, int64_t out_stride,
                           int32_t* out_lengths, float* out_log_probs) {
  internal::Generation& g = SessionAccess::Get(*this);
  return tern::Generate(g.model, g.decoding, prompts, prompt_stride, prompt_lengths, batch, options,
                        out_ids, out_stride, out_lengths, out_log_probs);
}

Status Generator::Generate(Span<const int32_t> prompt, Span<int32_t> out, size_t* out_length,
                           const GenerationOptions& options, Span<float> out_log_probs) {
  if (out_length == nullptr)
    return Status::Error(StatusCode::kInvalidArgument, "out_length is null");
  if (prompt.size() > static_cast<size_t>(INT32_MAX) ||
      out.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::Error(StatusCode::kOutOfRange, "prompt or output too long");
  }
  if (!out_log_probs.empty() && out_log_probs.size() != out.size()) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "out_log_probs holds %zu values; give none or as many as out (%zu)",
                         out_log_probs.size(), out.size());
  }
  const int32_t length = static_cast<int32_t>(prompt.size());
  // Without a token budget, the output span is the budget.
  GenerationOptions bounded = options;
  if (bounded.max_new_tokens == 0) bounded.max_new_tokens = static_cast<int32_t>(out.size());
  if (bounded.max_new_tokens == 0)
    return Status::Error(StatusCode::kInvalidArgument, "output span is empty");
  int32_t produced = 0;
  internal::Generation& g = SessionAccess::Get(*this);
  TERN_RETURN_IF_ERROR(tern::Generate(g.model, g.decoding, prompt.data(), length, &length, 1,
                                      bounded, out.data(), static_cast<int64_t>(out.size()),
                                      &produced,
                                      out_log_probs.empty() ? nullptr : out_log_probs.data()));
  *out_length = static_cast<size_t>(produced);
  return Status::Ok();
}

}  // namespace tern
