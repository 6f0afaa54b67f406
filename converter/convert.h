// `tern convert`: a checkpoint in, a verified .tern file out.
//
//   1. read the checkpoint (safetensors) and its config (--config, the safetensors metadata key
//      "config", or config.json next to the checkpoint);
//   2. check it against the architecture's layout: every required tensor present with the right
//      shape, no unexpected tensor, every value finite;
//   3. encode each tensor in the requested dtype (matrices and embeddings; vectors stay f32);
//   4. embed the tokenizer, record metadata, write atomically after loading the result back.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "converter/writer.h"
#include "runtime/core/dtype.h"

namespace tern::convert {

struct ConvertOptions {
  std::string checkpoint;
  std::string config;           // optional path to config.json
  std::string tokenizer;        // optional SentencePiece model (source, or shared)
  std::string target_tokenizer; // optional, when the target side has its own
  DType dtype = DType::kF32;
  int64_t group_size = 32;      // int4 block size along the input dimension
  std::vector<std::string> skip_prefixes;  // checkpoint tensors to ignore (e.g. "expected.")
  std::string command_line;     // recorded in the metadata
  std::function<void(size_t done, size_t total)> progress;
};

// Steps 1-3 (and the tokenizer); throws convert::Error naming what is wrong.
TernContents BuildContents(const ConvertOptions& options);

DType ParseDType(const std::string& name);  // fp32|f32, fp16|f16, int8|i8, int4|i4

}  // namespace tern::convert
