// Greedy decoding: at each step pick the most likely next token (lowest id on ties), feed it
// back as the next decoder input (paper section 3.4's "shifted right"), stop at EOS or at the
// length limit.
#pragma once

#include <cstdint>

#include "runtime/core/status.h"

namespace tern {

class EncoderDecoder;

struct GreedyOptions {
  int32_t max_length = 0;  // generated tokens per sentence incl. EOS; 0: the session's limit
};

// Index of the largest value; the lowest index wins ties. NaN never wins.
int32_t ArgMax(const float* values, int32_t count);

// Decodes the batch encoded last. Writes sentence b's ids (without start token and EOS) to
// out_ids[b * out_stride ...] and their count to out_lengths[b]; out_stride must be at least
// the effective max length.
Status GreedyDecode(EncoderDecoder& model, const GreedyOptions& options, int32_t* out_ids,
                    int64_t out_stride, int32_t* out_lengths);

}  // namespace tern
