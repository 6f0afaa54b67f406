#include "runtime/decoding/generate.h"

#include <new>

#include "runtime/models/decoder_only.h"

namespace tern {

Status Generate(DecoderOnly& model, const GenerationState& state, const int32_t* prompts,
                int64_t prompt_stride, const int32_t* prompt_lengths, int32_t batch,
                const GenerationOptions& options, int32_t* out_ids, int64_t out_stride,
                int32_t* out_lengths, float* out_log_probs) {
  TERN_RETURN_IF_ERROR(CheckSamplingOptions(options.sampling));
  if (options.max_new_tokens < 0) {
    return Status::Error(StatusCode::kInvalidArgument, "max_new_tokens = %d; must be >= 0",
                         options.max_new_tokens);
  }
  if (out_ids == nullptr || out_lengths == nullptr) {
    return Status::Error(StatusCode::kInvalidArgument, "output ids or lengths are null");
  }
  const float* logits = nullptr;
  TERN_RETURN_IF_ERROR(model.Prefill(prompts, prompt_stride, prompt_lengths, batch, &logits));
  const int32_t capacity = model.capacity();
  const int32_t vocab = model.vocab_size();
  const int32_t eos = model.config().eos_id;
  // Each sequence's budget: what is asked, and what still fits in the session.
  auto budget = [&](int32_t b) {
    const int32_t room = capacity - prompt_lengths[b];
    return options.max_new_tokens > 0 && options.max_new_tokens < room ? options.max_new_tokens
                                                                       : room;
  };
  int32_t most = 0;
  for (int32_t b = 0; b < batch; ++b) most = budget(b) > most ? budget(b) : most;
  if (out_stride < most) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "output stride %lld is too small: a sequence may get %d new tokens",
                         static_cast<long long>(out_stride), most);
  }
  int32_t* tokens = state.tokens;
  Pcg32* rng = state.generators;
  int32_t active = 0;
  for (int32_t b = 0; b < batch; ++b) {
    out_lengths[b] = 0;
    new (&rng[b]) Pcg32();  // in arena bytes
    rng[b].Seed(options.sampling.seed, static_cast<uint64_t>(b));
    tokens[b] = budget(b) > 0 ? 0 : DecoderOnly::kFinished;
    if (budget(b) > 0) ++active;
  }
  for (int32_t step = 0; active > 0; ++step) {
    for (int32_t b = 0; b < batch; ++b) {
      if (tokens[b] == DecoderOnly::kFinished) continue;
      const float* row = logits + static_cast<int64_t>(b) * vocab;
      const int32_t next = Sample(row, vocab, options.sampling, &rng[b], state.sampling);
      bool done = options.stop_at_eos && next == eos;
      if (!done) {
        out_ids[b * out_stride + out_lengths[b]] = next;
        if (out_log_probs != nullptr) {
          out_log_probs[b * out_stride + out_lengths[b]] =
              TokenLogProbability(row, vocab, options.sampling, next, state.sampling);
        }
        ++out_lengths[b];
        if (options.on_token && !options.on_token(options.user, b, step, next)) {
          return Status::Error(StatusCode::kCancelled,
                               "generation cancelled by the token callback at step %d", step);
        }
        done = out_lengths[b] >= budget(b);
      }
      tokens[b] = done ? DecoderOnly::kFinished : next;
      if (done) --active;
    }
    if (active == 0) break;
    TERN_RETURN_IF_ERROR(model.DecodeStep(tokens, &logits));
  }
  return Status::Ok();
}

}  // namespace tern
