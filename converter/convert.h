// `tern convert`: a checkpoint in, a verified .tern file out.
//
//   1. read the checkpoint (converter/readers: safetensors, sharded safetensors, torch.save zip,
//      numpy .npz) without executing anything in it;
//   2. map its names and config onto tern's canonical layout (converter/architectures: tern,
//      marian, nn_transformer, annotated), verifying and dropping what the runtime computes
//      itself (sinusoidal tables, tied copies);
//   3. check it against the layout: every required tensor present with the right shape, no
//      unexpected tensor, every value finite;
//   4. encode each tensor in its planned dtype (converter/precision.h: --dtype, --keep,
//      --auto-budget);
//   5. embed the tokenizer, record metadata; WriteModelFile then writes atomically after loading
//      the result back with the runtime.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "converter/writer.h"
#include "runtime/core/dtype.h"

namespace tern::convert {

struct ConvertOptions {
  std::string checkpoint;
  std::string arch = "tern";   // tern | marian | marian_npz | nn_transformer | annotated | gpt2
  std::string config;          // optional: config.json (tern: full; marian: HF config.json;
                               // annotated: partial tern config)
  std::string map;             // nn_transformer: JSON name map
  std::string overrides_json;  // --set key=value pairs as a JSON object ("" = none)
  std::string state_key;       // torch.save files: descend into this entry (e.g. "model")
  bool ignore_position_mismatch = false;
  // Optional: a SentencePiece model (source, or shared), or a Hugging Face tokenizer.json
  // (a name ending in .json: byte-level BPE). Empty: for a decoder-only model tokenizer.json
  // beside the checkpoint if there is one (unless no_tokenizer), else none.
  std::string tokenizer;
  std::string target_tokenizer;  // optional SentencePiece model, when the target has its own
  bool no_tokenizer = false;     // embed no tokenizer, not even one found beside the checkpoint
  DType dtype = DType::kF32;
  int64_t group_size = 0;                  // int4 block size along the input dimension (0: per row)
  std::vector<std::string> keep;           // "DTYPE:GLOB" rules
  std::string auto_budget;                 // "" or bytes / "N%" (converter/precision.h)
  std::vector<std::string> skip_prefixes;  // checkpoint tensors to ignore (e.g. "expected.")
  std::string command_line;                // recorded in the metadata
  std::function<void(size_t done, size_t total)> progress;
  std::function<void(const std::string& note)> note;  // what was verified, dropped, planned
};

// Steps 1-4 (and the tokenizer); throws convert::Error naming what is wrong.
TernContents BuildContents(const ConvertOptions& options);

DType ParseDType(const std::string& name);  // fp32|f32, fp16|f16, int8|i8, int4|i4

}  // namespace tern::convert
