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

AlignedBytes LanguageModelWithTokenizer(const convert::BpeTokenizerData* bpe,
                                        const std::vector<uint8_t>& sentencepiece,
                                        int32_t vocab_size, uint32_t seed, int32_t eos_id) {
  ModelConfig c = TinyDecoderOnlyConfig(vocab_size);
  if (eos_id >= 0) c.eos_id = c.bos_id = c.pad_id = c.unk_id = c.decoder_start_id = eos_id;
  convert::TernContents contents = RandomContents(c, seed);
  if (bpe != nullptr) contents.bpe_tokenizer = *bpe;
  contents.source_tokenizer = sentencepiece;
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
