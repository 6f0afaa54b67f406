#include "runtime/api/session_internal.h"
#include "runtime/decoding/beam_search.h"
#include "runtime/decoding/greedy.h"
#include "runtime/models/architectures.h"
#include "tern/tern.hpp"

namespace tern {

const char* Version() { return "0.1.0"; }

namespace {

// A Session translates; a decoder-only model generates through tern::Generator. Then the
// architecture's tensors and shapes: Model::Load checked the file format only.
Status CheckTranslationModel(const Model& model) {
  if (model.config().architecture == Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "this is a decoder-only (language) model: use tern::Generator (C: "
                         "tern_generator_create), not a "
                         "translation session");
  }
  return ValidateArchitecture(model);
}

// Beam size is one setting with a bound: limits.beam_size is the widest beam the arena is
// planned for (fixed at Prepare), options.beam_size the beam of one call, 1 (greedy) up to it.
// The messages name both, so a caller sees which one to change.
Status CheckBeam(const DecodingOptions& options, const Limits& limits) {
  if (options.beam_size < 1 || options.beam_size > limits.beam_size) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "options.beam_size = %d; this session allows 1 (greedy) to %d, the "
                         "limits.beam_size its arena was planned for at Prepare",
                         options.beam_size, limits.beam_size);
  }
  if (options.n_best < 1 || options.n_best > options.beam_size) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "options.n_best = %d; 1 to options.beam_size (%d) allowed (more than one "
                         "hypothesis needs beam search)",
                         options.n_best, options.beam_size);
  }
  return Status::Ok();
}

}  // namespace

using internal::SessionAccess;

// tern.hpp reserves the storage without seeing the class: this is where a model class that grew
// past it is caught (raise Session::kStorageBytes).
static_assert(sizeof(internal::Translation) <= Session::kStorageBytes,
              "EncoderDecoder and its decoding state do not fit in Session::kStorageBytes");
static_assert(alignof(internal::Translation) <= 16,
              "EncoderDecoder needs more than Session's alignment");

Session::Session() { new (SessionAccess::Storage(*this)) internal::Translation(); }
Session::~Session() { SessionAccess::Get(*this).~Translation(); }

size_t Session::arena_used_bytes() const { return SessionAccess::Model(*this).arena_used_bytes(); }
Backend Session::backend() const { return SessionAccess::Model(*this).backend(); }
const char* Session::backend_report() const { return SessionAccess::Model(*this).backend_report(); }

// The arena holds the model's buffers and the decoding state's, which the model plans with its
// own from these requests (the model includes nothing of runtime/decoding/).
Result<size_t> Session::RequiredArenaBytes(const Model& model, const Limits& limits,
                                           const SharedWeights* shared) {
  TERN_RETURN_IF_ERROR(CheckTranslationModel(model));
  TranslationState scratch;  // only asked for sizes
  BufferRequests requests;
  scratch.Request(model.config(), limits, &requests);
  return EncoderDecoder::RequiredArenaBytes(model, limits, requests, shared != nullptr);
}

Status Session::Prepare(const Model& model, const Limits& limits, void* arena, size_t arena_bytes,
                        SharedWeights* shared) {
  TERN_RETURN_IF_ERROR(CheckTranslationModel(model));
  internal::Translation& t = SessionAccess::Get(*this);
  BufferRequests requests;
  t.decoding.Request(model.config(), limits, &requests);
  return t.model.Prepare(model, limits, arena, arena_bytes, requests, SessionAccess::Get(shared));
}

Status Session::TranslateIds(const int32_t* src_ids, int64_t src_stride, const int32_t* src_lengths,
                             int32_t batch, const DecodingOptions& options, int32_t* out_ids,
                             int64_t out_stride, int32_t* out_lengths, float* out_scores) {
  EncoderDecoder& ed = SessionAccess::Model(*this);
  const TranslationState& state = SessionAccess::Get(*this).decoding;
  // Checked before encoding (an unprepared session is left to Encode's own message).
  if (ed.arena_used_bytes() > 0) TERN_RETURN_IF_ERROR(CheckBeam(options, ed.limits()));
  TERN_RETURN_IF_ERROR(ed.Encode(src_ids, src_stride, src_lengths, batch));
  if (options.beam_size > 1)
    return BeamSearch(ed, state, options, out_ids, out_stride, out_lengths, out_scores);
  return GreedyDecode(ed, state, options, out_ids, out_stride, out_lengths, out_scores);
}

Status Session::TranslateIds(Span<const int32_t> src, Span<int32_t> out, size_t* out_length,
                             const DecodingOptions& options) {
  if (out_length == nullptr)
    return Status::Error(StatusCode::kInvalidArgument, "out_length is null");
  const int32_t length = static_cast<int32_t>(src.size());
  if (src.size() > static_cast<size_t>(INT32_MAX)) {
    return Status::Error(StatusCode::kOutOfRange, "source has too many tokens");
  }
  int32_t produced = 0;
  TERN_RETURN_IF_ERROR(TranslateIds(src.data(), length, &length, 1, options, out.data(),
                                    static_cast<int64_t>(out.size()), &produced));
  *out_length = static_cast<size_t>(produced);
  return Status::Ok();
}

}  // namespace tern
