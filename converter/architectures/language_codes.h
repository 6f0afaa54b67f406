// A multilingual model's language codes -> tokens, for the file's language table
// (MappedCheckpoint::languages): read from the Hugging Face tokenizer files beside the checkpoint
// (m2m100, nllb, mbart) or, for mBART, fairseq's fixed code lists.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tern::convert::arch {

using LanguageCodes = std::vector<std::pair<std::string, int32_t>>;

// tokenizer_config.json's additional_special_tokens (NLLB's "deu_Latn", M2M100's "__de__",
// stored as "de"), each with its id from added_tokens_decoder, every id below `vocab`. No file
// or no additional_special_tokens: no language table (a note). Throws Error naming the file.
LanguageCodes ReadLanguageCodes(const std::string& dir, int32_t vocab,
                                std::vector<std::string>* notes);

// mBART's language codes and which convention its tokenizer follows.
struct MbartLanguages {
  LanguageCodes codes;
  // mBART cc25 / en-ro (MBartTokenizer): source X </s> [src_lang_code], decoding from the target
  // code. tern translate puts the source code first and forces the target code after </s>
  // (mBART-50's convention), so the text path is refused: `refusal` says why.
  std::string refusal;
};

// The languages of an mBART checkpoint in `dir` with `vocab` ids:
//   tokenizer_config.json's tokenizer_class MBartTokenizer(Fast)  cc25: refused (no table)
//   its additional_special_tokens with added_tokens_decoder       as ReadLanguageCodes
//   otherwise: fairseq's fixed list (mBART-50's 52 codes, cc25's 25) at ids
//   vocab - 1 - count .. vocab - 2 (the codes follow the pieces, <mask> is last); which list:
//   tokenizer_class MBart50Tokenizer(Fast) -> 52, else sentencepiece.bpe.model's piece count N
//   (vocab = N + 1 + count + 1); neither tells: no table (a note).
MbartLanguages ReadMbartLanguages(const std::string& dir, int32_t vocab,
                                  std::vector<std::string>* notes);

}  // namespace tern::convert::arch
