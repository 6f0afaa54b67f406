#include "tern/tern.hpp"

namespace tern {

const char* Version() { return "0.1.0"; }

namespace {

// A Session translates; a decoder-only model generates through tern::Generator.
Status CheckTranslationModel(const Model& model) {
  if (model.config().architecture == Architecture::kDecoderOnly) {
    return Status::Error(StatusCode::kFailedPrecondition,
                         "this is a decoder-only (language) model: use tern::Generator (C: "
                         "tern_generator_create), not a "
                         "translation session");
  }
  return Status::Ok();
}

}  // namespace

Result<size_t> Session::RequiredArenaBytes(const Model& model, const Limits& limits) {
  TERN_RETURN_IF_ERROR(CheckTranslationModel(model));
  return EncoderDecoder::RequiredArenaBytes(model, limits);
}

Status Session::Prepare(const Model& model, const Limits& limits, void* arena, size_t arena_bytes) {
  TERN_RETURN_IF_ERROR(CheckTranslationModel(model));
  return model_.Prepare(model, limits, arena, arena_bytes);
}

Status Session::TranslateIds(const int32_t* src_ids, int64_t src_stride, const int32_t* src_lengths,
                             int32_t batch, const DecodingOptions& options, int32_t* out_ids,
                             int64_t out_stride, int32_t* out_lengths, float* out_scores) {
  TERN_RETURN_IF_ERROR(model_.Encode(src_ids, src_stride, src_lengths, batch));
  if (options.beam_size > 1)
    return BeamSearch(model_, options, out_ids, out_stride, out_lengths, out_scores);
  if (options.n_best != 1) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "n_best = %d needs beam search (beam_size > 1)", options.n_best);
  }
  return GreedyDecode(model_, options, out_ids, out_stride, out_lengths, out_scores);
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
