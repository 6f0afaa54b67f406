#include "tests/support/tokenizer_model.h"

#include "converter/writer.h"

namespace tern::testing {

AlignedBytes ModelBytesWithTokenizer(const convert::BpeTokenizerData& tokenizer) {
  ModelConfig config = TinyConfig();
  config.src_vocab_size = config.tgt_vocab_size = tokenizer.vocab_size();
  convert::TernContents contents = RandomContents(config, 15);
  contents.bpe_tokenizer = tokenizer;
  return AlignedBytes(convert::SerializeModel(contents));
}

LoadedBpe::LoadedBpe(const std::string& tokenizer_json)
    : LoadedBpe(convert::ParseTokenizerJson(tokenizer_json, "tokenizer.json")) {}

LoadedBpe::LoadedBpe(const convert::BpeTokenizerData& data)
    : bytes_(ModelBytesWithTokenizer(data)) {
  auto model = Model::Load(bytes_.data(), bytes_.size());
  if (!model.ok()) {
    status_ = model.status();
    return;
  }
  model_ = model.value();
  auto tokenizer = BpeTokenizer::FromModel(model_);
  if (!tokenizer.ok()) {
    status_ = tokenizer.status();
    return;
  }
  tokenizer_ = tokenizer.value();
}

}  // namespace tern::testing
