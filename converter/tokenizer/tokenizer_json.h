// Hugging Face tokenizer.json -> the byte-level BPE tokenizer tern stores in the .tern file
// (schema ByteLevelBpe, read by runtime/tokenizer/bpe_tokenizer.h).
//
// Accepted (the forms GPT-2, LLaMA 3, Qwen2 and SmolLM use):
//   model           BPE with vocab and merges ("a b" strings or [a, b] pairs), ignore_merges;
//                   dropout, continuing_subword_prefix and end_of_word_suffix unset,
//                   byte_fallback false; every byte's token in the vocabulary
//   normalizer      null, or NFC (Qwen2)
//   pre_tokenizer   ByteLevel, or a Sequence of Split (behavior Isolated, not inverted, with the
//                   GPT-2, LLaMA 3 or Qwen2 pattern exactly) and Digits steps ending with
//                   ByteLevel (add_prefix_space; use_regex: GPT-2's split)
//   post_processor  null, ByteLevel, TemplateProcessing (its single sequence: special tokens
//                   around $A), RobertaProcessing / BertProcessing (cls before, sep after), or
//                   a Sequence of them
//   decoder         ByteLevel
//   added_tokens    any, except single_word (not implemented)
// Anything else is refused with an Error that names the file and the field, never converted
// into a tokenizer that would tokenize differently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::convert {

struct BpeMergeData {
  int32_t left = 0;
  int32_t right = 0;
  int32_t result = 0;
  int32_t rank = 0;
};

struct AddedTokenData {
  int32_t id = 0;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

struct BpeTokenizerData {
  std::vector<uint8_t> pre_tokenizer;    // bpe::PreTokenizerStep values, in order
  std::vector<std::string> token_bytes;  // per id: what decoding it gives
  std::vector<bool> byte_level;          // per id: a model-vocabulary token BPE can produce
  std::vector<int32_t> byte_tokens;      // 256: the token of each byte
  std::vector<BpeMergeData> merges;      // in rank order
  bool ignore_merges = false;
  bool nfc = false;  // the NFC normalizer
  // Sorted by id. A normalized token's content is normalized (what is matched); what it
  // decodes to is in token_bytes.
  std::vector<AddedTokenData> added_tokens;
  std::vector<int32_t> prefix_ids;  // the post-processor's, around the text
  std::vector<int32_t> suffix_ids;
  std::vector<std::string> notes;  // what was accepted but does not matter to ids

  int32_t vocab_size() const { return static_cast<int32_t>(token_bytes.size()); }
  // "byte-level BPE, 1200 tokens (3 added), 940 merges, pre-tokenizer Split(LLaMA 3 pattern)"
  std::string Describe() const;
};

// Parses and checks a tokenizer.json; `label` (the path) starts every error message.
BpeTokenizerData ParseTokenizerJson(const std::string& json, const std::string& label);
BpeTokenizerData ReadTokenizerJson(const std::string& path);

}  // namespace tern::convert
