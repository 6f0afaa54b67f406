// The tensors a tern decoder-only model (GPT-2 or LLaMA style) needs, by canonical name
// (docs/CONVENTIONS.md, "Decoder-only"), and ModelLayout: the layout of any architecture the
// converter writes.
#pragma once

#include <vector>

#include "converter/architectures/encoder_decoder_layout.h"

namespace tern::convert {

std::vector<ExpectedTensor> DecoderOnlyLayout(const ModelConfig& config);

// EncoderDecoderLayout or DecoderOnlyLayout per config.architecture; throws convert::Error for
// an architecture the converter cannot write.
std::vector<ExpectedTensor> ModelLayout(const ModelConfig& config);

}  // namespace tern::convert
