// Which dtype each tensor is stored in.
//
//   default   vectors (biases, norms) fp32; matrices --dtype; embeddings --dtype except int4,
//             where they stay int8 (looked up row by row, they cost little and matter much)
//   --keep DTYPE:GLOB     tensors whose canonical name matches GLOB (* any run of characters,
//                         ? one character) are stored in DTYPE; a rule that matches no
//                         quantizable tensor is an error (a typo would silently do nothing)
//   --auto-budget B       start from the defaults and raise the precision of the tensors where
//                         it buys the most, until the model would exceed B bytes (or B% of its
//                         fp32 size). See docs/converter.md for the heuristic.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/host_tensor.h"
#include "runtime/core/dtype.h"

namespace tern::convert {

struct KeepRule {
  DType dtype = DType::kF32;
  std::string pattern;
};

// "fp16:decoder.layers.*.fc2.weight" -> {kF16, "decoder.layers.*.fc2.weight"}.
KeepRule ParseKeepRule(const std::string& text);
bool GlobMatch(const std::string& pattern, const std::string& name);

// "123456", "64K", "12M", "1G" (binary units) or "60%". Returns bytes, or -percent when a
// percentage (so -60 means 60%).
double ParseBudget(const std::string& text);

struct PrecisionRequest {
  DType dtype = DType::kF32;
  int64_t group_size = 0;
  std::vector<KeepRule> keep;
  std::string budget;  // empty: none
};

struct PrecisionPlan {
  std::map<std::string, DType> dtype;  // canonical name -> stored dtype
  uint64_t planned_bytes = 0;          // data + scales of every tensor under the plan
  std::vector<std::string> notes;
};

// `layout`: the tensors present (ExpectedTensor per canonical name). `load` produces a
// tensor's values (used only for --auto-budget, to measure quantization error).
PrecisionPlan PlanPrecision(const std::vector<ExpectedTensor>& layout,
                            const PrecisionRequest& request,
                            const std::function<HostTensor(const std::string&)>& load,
                            const std::string& tied_note);

// The stored size of a tensor of `shape` in `dtype` (data bytes + 4 bytes per scale).
uint64_t StoredBytes(const std::vector<int64_t>& shape, DType dtype, int64_t group_size);

}  // namespace tern::convert
