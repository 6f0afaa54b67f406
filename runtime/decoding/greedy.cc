#include "runtime/decoding/greedy.h"

#include <cmath>

#include "runtime/models/encoder_decoder.h"

namespace tern {

int32_t EffectiveMaxLength(const DecodingOptions& options, int32_t session_limit,
                           int32_t source_length) {
  int32_t limit = options.max_length > 0 ? options.max_length : session_limit;
  if (options.max_length_ratio > 0.0f) {
    const double by_ratio =
        std::ceil(static_cast<double>(options.max_length_ratio) * source_length) +
        options.max_length_extra;
    if (by_ratio < limit) limit = by_ratio < 1.0 ? 1 : static_cast<int32_t>(by_ratio);
  }
  return limit;
}

int32_t DecoderSteps(const DecodingOptions& options, const ModelConfig& config,
                     int32_t max_target_length, int32_t source_length) {
  const int32_t max_length =
      options.max_length > 0 ? options.max_length : TargetRoom(options, config, max_target_length);
  const int32_t forced = ForcedToken(options, config) >= 0 ? 1 : 0;
  return EffectiveMaxLength(options, max_length, source_length) + forced;
}

Status PlanTargetLength(EncoderDecoder& model, const DecodingOptions& options) {
  int32_t steps = 1;
  for (int32_t b = 0; b < model.batch(); ++b) {
    const int32_t s = DecoderSteps(options, model.config(), model.limits().max_target_length,
                                   model.source_length(b));
    steps = s > steps ? s : steps;
  }
  return model.SetTargetLength(steps);
}

int32_t ForcedToken(const DecodingOptions& options, const ModelConfig& config) {
  return options.forced_bos_id >= 0 ? options.forced_bos_id : config.forced_bos_id;
}

int32_t TargetRoom(const DecodingOptions& options, const ModelConfig& config,
                   int32_t max_target_length) {
  return ForcedToken(options, config) >= 0 ? max_target_length - 1 : max_target_length;
}

Status ForceFirstToken(EncoderDecoder& model, const DecodingOptions& options, int32_t rows,
                       int32_t* tokens) {
  const int32_t vocab = model.config().tgt_vocab_size;
  if (options.forced_bos_id < -1 || options.forced_bos_id >= vocab) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "options.forced_bos_id = %d; -1 (the model's, if any) or a target id "
                         "below %d",
                         options.forced_bos_id, vocab);
  }
  const int32_t forced = ForcedToken(options, model.config());  // the loader checked the config's
  if (forced < 0) return Status::Ok();
  if (model.limits().max_target_length < 2) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "a forced first token (forced_bos_id %d) needs max_target_length >= 2 "
                         "(the start token and the forced one take a position each)",
                         forced);
  }
  const float* logits = nullptr;
  TERN_RETURN_IF_ERROR(model.DecodeStep(tokens, &logits));
  for (int32_t r = 0; r < rows; ++r) tokens[r] = forced;
  return Status::Ok();
}

Status GreedyDecode(EncoderDecoder& model, const TranslationState& state,
                    const DecodingOptions& options, int32_t* out_ids, int64_t out_stride,
                    int32_t* out_lengths, float* out_scores) {
  const ModelConfig& c = model.config();
  const int32_t limit = TargetRoom(options, c, model.limits().max_target_length);
  if (options.max_length < 0 || options.max_length > limit) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "max_length = %d; 0 to the session's %d allowed", options.max_length,
                         limit);
  }
  if (options.beam_size != 1) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "greedy decoding with options.beam_size = %d (greedy is 1; wider beams "
                         "run BeamSearch)",
                         options.beam_size);
  }
  if (options.min_length < 0 || options.no_repeat_ngram_size < 0 ||
      options.max_length_ratio < 0.0f || !(options.repetition_penalty > 0.0f)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "min_length, no_repeat_ngram_size and max_length_ratio must be >= 0, "
                         "repetition_penalty > 0");
  }
  const int32_t max_length = options.max_length > 0 ? options.max_length : limit;
  if (out_ids == nullptr || out_lengths == nullptr || out_stride < max_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "output buffer: need non-null ids with a stride of at least %d",
                         max_length);
  }
  TERN_RETURN_IF_ERROR(PlanTargetLength(model, options));
  const int32_t batch = model.batch();
  int32_t* tokens = state.tokens;
  int32_t active = batch;
  for (int32_t b = 0; b < batch; ++b) {
    tokens[b] = c.decoder_start_id;
    out_lengths[b] = 0;
    if (out_scores) out_scores[b] = 0.0f;
  }
  TERN_RETURN_IF_ERROR(ForceFirstToken(model, options, batch, tokens));
  // out_lengths[b] < 0 marks a finished sentence while decoding (restored at the end).
  for (int32_t step = 0; step < max_length && active > 0; ++step) {
    const float* logits = nullptr;
    TERN_RETURN_IF_ERROR(model.DecodeStep(tokens, &logits));
    for (int32_t b = 0; b < batch; ++b) {
      if (out_lengths[b] < 0) {
        tokens[b] = c.eos_id;  // Finished: keep the batch shape, ignore the result.
        continue;
      }
      int32_t* history = out_ids + b * out_stride;
      // The logits are this session's scratch, rewritten by the next DecodeStep. With a
      // shortlist the search runs over the sentence's candidates only (ascending ids, so the
      // lowest index wins a tie as the lowest id would) and maps the chosen index to its id.
      float* row = const_cast<float*>(logits) + b * model.logits_stride();
      const Span<const int32_t> candidates = model.row_candidates(b);
      const int32_t count =
          candidates.empty() ? c.tgt_vocab_size : static_cast<int32_t>(candidates.size());
      ProcessLogits(options, c.eos_id, history, out_lengths[b], row, count, candidates);
      const int32_t cap = EffectiveMaxLength(options, max_length, model.source_length(b));
      const int32_t index = ArgMax(row, count);
      const int32_t next = candidates.empty() ? index : candidates[index];
      if (out_scores) out_scores[b] += LogProbability(row, count, index);
      tokens[b] = next;
      const bool ended = next == c.eos_id || out_lengths[b] + 1 >= cap;
      if (next != c.eos_id) {
        history[out_lengths[b]] = next;
        ++out_lengths[b];
        if (options.on_token && !options.on_token(options.user, b, step, next)) {
          return Status::Error(StatusCode::kCancelled,
                               "decoding cancelled by the token callback at step %d", step);
        }
      }
      if (ended) {
        out_lengths[b] = -1 - out_lengths[b];
        --active;
      }
    }
  }
  for (int32_t b = 0; b < batch; ++b) {
    if (out_lengths[b] < 0) out_lengths[b] = -1 - out_lengths[b];
  }
  return Status::Ok();
}

}  // namespace tern
