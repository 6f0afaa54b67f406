#include "converter/tokenizer/marian_spm.h"

#include "converter/architectures/architecture_util.h"
#include "converter/error.h"
#include "converter/readers/file_bytes.h"
#include "converter/tokenizer/vocab_map.h"

namespace tern::convert {

namespace {

std::vector<uint8_t> ReadModel(const std::string& path) {
  const auto file = FileBytes::Open(path);
  if (file->size() == 0) throw Error(path + ": empty file, not a SentencePiece model");
  return std::vector<uint8_t>(file->data(), file->data() + file->size());
}

}  // namespace

bool MarianTokenizersBeside(const std::string& dir) {
  return arch::FileExists(dir + "/source.spm") || arch::FileExists(dir + "/target.spm");
}

MarianTokenizers ReadMarianTokenizers(const std::string& dir, const ModelConfig& config) {
  MarianTokenizers out;
  out.source_path = dir + "/source.spm";
  out.target_path = dir + "/target.spm";
  out.vocab_path = dir + "/vocab.json";
  const char* hint = " (--no-tokenizer converts without a tokenizer)";
  for (const std::string* p : {&out.source_path, &out.target_path, &out.vocab_path}) {
    if (!arch::FileExists(*p)) {
      throw Error(dir +
                  ": --arch marian takes source.spm, target.spm and vocab.json together, and " +
                  *p + " does not exist" + hint);
    }
  }
  out.source = ReadModel(out.source_path);
  out.target = ReadModel(out.target_path);
  // Marian's SentencePiece models have no <s> (bos_id -1); </s> and <unk> are vocab.json's.
  const SpecialIds special{-1, config.pad_id, config.eos_id, config.unk_id};
  out.source_ids = BuildVocabularyMap(out.source, out.source_path, VocabularyRule::kVocabJson,
                                      out.vocab_path, config.src_vocab_size, special);
  out.target_ids = BuildVocabularyMap(out.target, out.target_path, VocabularyRule::kVocabJson,
                                      out.vocab_path, config.tgt_vocab_size, special);
  return out;
}

}  // namespace tern::convert
