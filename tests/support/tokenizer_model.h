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
