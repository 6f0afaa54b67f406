// Test support: a model file that holds a byte-level BPE tokenizer, so tests reach the tokenizer
// the way a text path does (Model::Load, then BpeTokenizer::FromModel).
#pragma once

#include <string>

#include "converter/tokenizer/tokenizer_json.h"
#include "runtime/model/model.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "tests/support/tiny_model.h"

namespace tern::testing {

// TinyConfig() with its vocabulary sized to the tokenizer's, random weights, the tokenizer.
AlignedBytes ModelBytesWithTokenizer(const convert::BpeTokenizerData& tokenizer);

// A GPT-2 style decoder-only model (d 16, 2 heads, 2 layers, learned positions, tied output,
// max_positions 64) of the tokenizer's vocabulary, random weights from `seed`, with the
// tokenizer: a byte-level BPE one, or (sentencepiece non-empty) a SentencePiece model's bytes.
// eos_id: the model's EOS (config.eos_id); -1 leaves it at the last id.
AlignedBytes LanguageModelWithTokenizer(const convert::BpeTokenizerData* bpe,
                                        const std::vector<uint8_t>& sentencepiece,
                                        int32_t vocab_size, uint32_t seed, int32_t eos_id = -1);

// A tokenizer.json text (convert::ParseTokenizerJson) loaded like that. The bytes and the model
// stay inside, so the tokenizer lives as long as this does.
class LoadedBpe {
 public:
  explicit LoadedBpe(const std::string& tokenizer_json);
  explicit LoadedBpe(const convert::BpeTokenizerData& data);
  // The status of Model::Load or BpeTokenizer::FromModel, whichever failed first.
  const Status& status() const { return status_; }
  const BpeTokenizer& tokenizer() const { return tokenizer_; }
  const BpeTokenizer* operator->() const { return &tokenizer_; }

  LoadedBpe(const LoadedBpe&) = delete;
  LoadedBpe& operator=(const LoadedBpe&) = delete;

 private:
  AlignedBytes bytes_;
  Model model_;
  BpeTokenizer tokenizer_;
  Status status_;
};

}  // namespace tern::testing
