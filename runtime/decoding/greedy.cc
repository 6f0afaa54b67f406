#include "runtime/decoding/greedy.h"

#include "runtime/models/encoder_decoder.h"

namespace tern {

int32_t ArgMax(const float* values, int32_t count) {
  int32_t best = 0;
  for (int32_t i = 1; i < count; ++i) {
    if (values[i] > values[best] || (values[best] != values[best] && values[i] == values[i])) {
      best = i;
    }
  }
  return best;
}

Status GreedyDecode(EncoderDecoder& model, const GreedyOptions& options, int32_t* out_ids,
                    int64_t out_stride, int32_t* out_lengths) {
  const ModelConfig& c = model.config();
  const int32_t limit = model.limits().max_target_length;
  if (options.max_length < 0 || options.max_length > limit) {
    return Status::Error(StatusCode::kInvalidArgument, "max_length = %d; 0 to the session's %d allowed",
                         options.max_length, limit);
  }
  const int32_t max_length = options.max_length > 0 ? options.max_length : limit;
  if (out_ids == nullptr || out_lengths == nullptr || out_stride < max_length) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "output buffer: need non-null ids with a stride of at least %d", max_length);
  }
  const int32_t batch = model.batch();
  int32_t* tokens = model.decode_tokens();
  int32_t active = batch;
  for (int32_t b = 0; b < batch; ++b) {
    tokens[b] = c.decoder_start_id;
    out_lengths[b] = 0;
  }
  // out_lengths[b] < 0 marks a finished sentence while decoding (restored at the end).
  for (int32_t step = 0; step < max_length && active > 0; ++step) {
    const float* logits = nullptr;
    TERN_RETURN_IF_ERROR(model.DecodeStep(tokens, &logits));
    for (int32_t b = 0; b < batch; ++b) {
      if (out_lengths[b] < 0) {
        tokens[b] = c.eos_id;  // Finished: keep the batch shape, ignore the result.
        continue;
      }
      const int32_t next = ArgMax(logits + static_cast<int64_t>(b) * c.tgt_vocab_size, c.tgt_vocab_size);
      tokens[b] = next;
      if (next == c.eos_id) {
        out_lengths[b] = -1 - out_lengths[b];
        --active;
      } else {
        out_ids[b * out_stride + out_lengths[b]] = next;
        ++out_lengths[b];
      }
    }
  }
  for (int32_t b = 0; b < batch; ++b) {
    if (out_lengths[b] < 0) out_lengths[b] = -1 - out_lengths[b];
  }
  return Status::Ok();
}

}  // namespace tern
