// The special tokens a language model's tokenizer puts around a prompt, as Hugging Face
// transformers decides them from tokenizer_config.json beside the checkpoint.
//
// transformers' Llama / CodeLlama / Gemma tokenizer classes (slow and fast) read add_bos_token
// (default true) and add_eos_token (default false): the fast ones rewrite tokenizer.json's
// post-processor to "[bos] $A [eos]" from them (update_post_processor), the slow ones add the
// SentencePiece model's BOS / EOS. Other classes leave tokenizer.json's post-processor as it is.
//   SentencePiece tokenizer.model  LlamaTokenizer's rule, whatever the class (tern takes a
//                                  tokenizer.model only beside LLaMA-family language models):
//                                  a choice other than BOS-only is stored as
//                                  SentencePieceSpecials (format 1.10)
//   byte-level tokenizer.json      those classes: prefix_ids / suffix_ids become [bos] / [eos]
//                                  by the flags (bos_token / eos_token looked up by content);
//                                  any other class with add_bos_token / add_eos_token that
//                                  disagrees with the post-processor is refused: which of the
//                                  two transformers applies depends on its class and version,
//                                  and tern does not guess.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "converter/tokenizer/tokenizer_json.h"

namespace tern {
class Tokenizer;
}

namespace tern::convert {

struct TokenizerConfig {
  std::string path;  // empty: no tokenizer_config.json
  std::string tokenizer_class;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<std::string> bos_token;  // the content; absent when unset or null
  std::optional<std::string> eos_token;
};

// DIR/tokenizer_config.json when it exists; a field of the wrong type is an Error naming it.
TokenizerConfig ReadTokenizerConfig(const std::string& dir);

struct PromptSpecials {
  bool add_bos = true;
  bool add_eos = false;
};

// For a SentencePiece model (`spm`, read from `model_path`). add_bos_token / add_eos_token true
// for a model without that piece, or a bos_token / eos_token that is not the model's piece, is an
// Error naming both.
PromptSpecials SentencePiecePromptSpecials(const TokenizerConfig& config, const Tokenizer& spm,
                                           const std::string& model_path,
                                           std::vector<std::string>* notes);

// Sets data->prefix_ids / suffix_ids as transformers would for config's class, or refuses.
void ApplyPromptSpecials(const TokenizerConfig& config, const std::string& tokenizer_path,
                         BpeTokenizerData* data, std::vector<std::string>* notes);

}  // namespace tern::convert
