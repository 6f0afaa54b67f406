// The tensors a tern encoder-decoder (or Universal Transformer: the same names with one layer
// per stack, plus the ACT halting units) needs, by canonical name (docs/CONVENTIONS.md), with
// their shapes and whether they are quantizable matrices. Checkpoint readers map their names
// onto these; the converter then checks the checkpoint against this list. The list is the
// runtime's own model description (layout.cc), so the two cannot disagree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/model/config.h"

namespace tern::convert {

enum class TensorRole { kMatrix, kEmbedding, kVector };

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;
  TensorRole role;
  bool required;
};

std::vector<ExpectedTensor> EncoderDecoderLayout(const ModelConfig& config);

}  // namespace tern::convert
