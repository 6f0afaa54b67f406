#include "runtime/api/session_internal.h"
#include "runtime/decoding/generate.h"
#include "runtime/models/architectures.h"
#include "tern/tern.hpp"

namespace tern {

using internal::SessionAccess;

// As for Session (session.cc): the storage in tern.hpp must hold the class it never sees.
static_assert(sizeof(DecoderOnly) <= Generator::kStorageBytes,
              "DecoderOnly does not fit in Generator::kStorageBytes");
static_assert(alignof(DecoderOnly) <= 16, "DecoderOnly needs more than Generator's alignment");

Generator::Generator() { new (SessionAccess::Storage(*this)) DecoderOnly(); }
Generator::~Generator() { SessionAccess::Model(*this).~DecoderOnly(); }

size_t Generator::arena_used_bytes() const {
  return SessionAccess::Model(*this).arena_used_bytes();
}
Backend Generator::backend() const { return SessionAccess::Model(*this).backend(); }
const char* Generator::backend_report() const {
  return SessionAccess::Model(*this).backend_report();
}

// Model::Load checked the file format only: the architecture's tensors and shapes are checked
// here, before anything is sized from them, as Session does.
Result<size_t> Generator::RequiredArenaBytes(const Model& model, const Limits& limits) {
  TERN_RETURN_IF_ERROR(ValidateArchitecture(model));
  return DecoderOnly::RequiredArenaBytes(model, limits);
}

Status Generator::Prepare(const Model& model, const Limits& limits, void* arena,
                          size_t arena_bytes) {
  TERN_RETURN_IF_ERROR(ValidateArchitecture(model));
  return SessionAccess::Model(*this).Prepare(model, limits, arena, arena_bytes);
}

Status Generator::Generate(const int32_t* prompts, int64_t prompt_stride,
                           const int32_t* prompt_lengths, int32_t batch,
                           const GenerationOptions& options, int32_t* out_ids, int64_t out_stride,
                           int32_t* out_lengths) {
  return tern::Generate(SessionAccess::Model(*this), prompts, prompt_stride, prompt_lengths, batch,
                        options, out_ids, out_stride, out_lengths);
}

Status Generator::Generate(Span<const int32_t> prompt, Span<int32_t> out, size_t* out_length,
                           const GenerationOptions& options) {
  if (out_length == nullptr)
    return Status::Error(StatusCode::kInvalidArgument, "out_length is null");
  if (prompt.size() > static_cast<size_t>(INT32_MAX) ||
      out.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::Error(StatusCode::kOutOfRange, "prompt or output too long");
  }
  const int32_t length = static_cast<int32_t>(prompt.size());
  // Without a token budget, the output span is the budget.
  GenerationOptions bounded = options;
  if (bounded.max_new_tokens == 0) bounded.max_new_tokens = static_cast<int32_t>(out.size());
  if (bounded.max_new_tokens == 0)
    return Status::Error(StatusCode::kInvalidArgument, "output span is empty");
  int32_t produced = 0;
  TERN_RETURN_IF_ERROR(tern::Generate(SessionAccess::Model(*this), prompt.data(), length, &length,
                                      1, bounded, out.data(), static_cast<int64_t>(out.size()),
                                      &produced));
  *out_length = static_cast<size_t>(produced);
  return Status::Ok();
}

}  // namespace tern
