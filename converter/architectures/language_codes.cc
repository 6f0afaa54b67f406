#include "converter/architectures/language_codes.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <map>

#include "converter/architectures/architecture_util.h"
#include "converter/error.h"

namespace tern::convert::arch {

namespace {

// mBART's language codes in fairseq's order: the 25 of mBART cc25 (facebook/mbart-large-cc25),
// then the 27 mBART-50 added (facebook/mbart-large-50*). The Hugging Face model documentation of
// MBart50Tokenizer describes the convention: the codes are special tokens appended after the
// SentencePiece vocabulary (offset by fairseq's 4 specials), in this order, followed by <mask>;
// the source is "[src_lang_code] X </s>" and the target language is forced as the first
// generated token (forced_bos_token_id) after decoder_start_token_id </s>.
const char* const kMbart50Codes[] = {
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN",
    "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP",
    "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN",  // the 25 of cc25
    "af_ZA", "az_AZ", "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID", "ka_GE", "km_KH",
    "mk_MK", "ml_IN", "mn_MN", "mr_IN", "pl_PL", "ps_AF", "pt_XX", "sv_SE", "sw_KE",
    "ta_IN", "te_IN", "th_TH", "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI"};
constexpr int32_t kMbart50Count = 52, kCc25Count = 25;

LanguageCodes CodesFromJson(const nlohmann::json& j, const std::string& path, int32_t vocab) {
  std::map<std::string, int64_t> ids;
  if (j.contains("added_tokens_decoder") && j["added_tokens_decoder"].is_object()) {
    for (const auto& kv : j["added_tokens_decoder"].items()) {
      if (!kv.value().is_object() || !kv.value().contains("content") ||
          !kv.value()["content"].is_string()) {
        throw Error(path + ": added_tokens_decoder \"" + kv.key() + "\" has no \"content\"");
      }
      char* end = nullptr;
      const long long id = std::strtoll(kv.key().c_str(), &end, 10);
      if (end == kv.key().c_str() || *end != '\0' || id < 0) {
        throw Error(path + ": added_tokens_decoder key \"" + kv.key() + "\" is not a token id");
      }
      ids[kv.value()["content"].get<std::string>()] = id;
    }
  }
  const nlohmann::json& codes = j["additional_special_tokens"];
  if (!codes.is_array()) throw Error(path + ": \"additional_special_tokens\" must be a list");
  LanguageCodes out;
  for (const auto& c : codes) {
    const nlohmann::json& content = c.is_object() && c.contains("content") ? c["content"] : c;
    if (!content.is_string()) {
      throw Error(path + ": \"additional_special_tokens\" holds a non-string entry");
    }
    const std::string token = content.get<std::string>();
    auto it = ids.find(token);
    if (it == ids.end()) {
      throw Error(path + ": language token \"" + token + "\" has no id in added_tokens_decoder");
    }
    if (it->second >= vocab) {
      throw Error(path + ": language token \"" + token + "\" has id " + std::to_string(it->second) +
                  ", outside the vocabulary (" + std::to_string(vocab) + ")");
    }
    // M2M100 writes its codes __de__; callers name the language de.
    std::string code = token;
    if (code.size() > 4 && code.compare(0, 2, "__") == 0 &&
        code.compare(code.size() - 2, 2, "__") == 0) {
      code = code.substr(2, code.size() - 4);
    }
    out.emplace_back(code, static_cast<int32_t>(it->second));
  }
  return out;
}

// The pieces of the SentencePiece model at `path`, or -1 when it cannot be read (the tokenizer
// step reports that model's own errors).
int32_t PieceCount(const std::string& path) {
  if (!FileExists(path)) return -1;
  sentencepiece::SentencePieceProcessor spm;
  if (!spm.Load(path).ok()) return -1;
  return spm.GetPieceSize();
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

LanguageCodes ReadLanguageCodes(const std::string& dir, int32_t vocab,
                                std::vector<std::string>* notes) {
  const std::string path = dir + "/tokenizer_config.json";
  if (!FileExists(path)) {
    notes->push_back("no " + path +
                     ": no language table (source and target languages are given as ids)");
    return {};
  }
  const nlohmann::json j = ParseJsonText(ReadTextFile(path), path);
  if (!j.is_object() || !j.contains("additional_special_tokens")) {
    notes->push_back(path + " has no additional_special_tokens: no language table");
    return {};
  }
  LanguageCodes out = CodesFromJson(j, path, vocab);
  notes->push_back(std::to_string(out.size()) + " language codes from " + path);
  return out;
}

MbartLanguages ReadMbartLanguages(const std::string& dir, int32_t vocab,
                                  std::vector<std::string>* notes) {
  MbartLanguages out;
  const std::string path = dir + "/tokenizer_config.json";
  const std::string spm_path = dir + "/sentencepiece.bpe.model";
  std::string tokenizer_class;
  int32_t count = 0;  // of the fixed list; 0: not known
  std::string why;    // how the list was chosen, for the note
  if (FileExists(path)) {
    const nlohmann::json j = ParseJsonText(ReadTextFile(path), path);
    if (j.is_object() && j.contains("tokenizer_class") && j["tokenizer_class"].is_string()) {
      tokenizer_class = j["tokenizer_class"].get<std::string>();
    }
    if (StartsWith(tokenizer_class, "MBartTokenizer")) {
      out.refusal = path + ": tokenizer_class " + tokenizer_class +
                    " is mBART cc25's convention (source X </s> [src_lang_code], decoding from "
                    "the target code), which tern translate does not apply (it takes mBART-50's "
                    "[src_lang_code] X </s>); convert with --no-tokenizer and translate with --ids";
      notes->push_back(path + ": tokenizer_class " + tokenizer_class +
                       " (mBART cc25): no language table");
      return out;
    }
    if (j.is_object() && j.contains("additional_special_tokens") &&
        j.contains("added_tokens_decoder")) {
      out.codes = CodesFromJson(j, path, vocab);
      notes->push_back(std::to_string(out.codes.size()) + " language codes from " + path);
      return out;
    }
    if (StartsWith(tokenizer_class, "MBart50Tokenizer")) {
      count = kMbart50Count;
      why = "tokenizer_class " + tokenizer_class + " in " + path;
    }
  }
  const int32_t pieces = PieceCount(spm_path);
  if (count == 0 && pieces > 0) {
    // fairseq's dictionary: 4 specials, the pieces from id 1 + 1 (ids up to N), the codes, <mask>.
    const int32_t left = vocab - pieces - 2;
    if (left == kMbart50Count || left == kCc25Count) {
      count = left;
      why = "vocab_size " + std::to_string(vocab) + " = " + std::to_string(pieces) + " pieces of " +
            spm_path + " + 2 + " + std::to_string(left) + " codes";
    }
  }
  if (count == 0) {
    notes->push_back("no language table: neither " + path + " nor " + spm_path +
                     " tells mBART-50's codes from mBART cc25's (source and target languages are "
                     "given as ids)");
    return out;
  }
  if (count == kCc25Count) {
    out.refusal = why +
                  ": mBART cc25's convention (source X </s> [src_lang_code], decoding from the "
                  "target code), which tern translate does not apply (it takes mBART-50's "
                  "[src_lang_code] X </s>); convert with --no-tokenizer and translate with --ids";
    notes->push_back("mBART cc25 (" + why + "): no language table");
    return out;
  }
  const int32_t first = vocab - 1 - count;
  if (first < 4) {
    notes->push_back("no language table: vocab_size " + std::to_string(vocab) +
                     " has no room for " + std::to_string(count) + " language codes");
    return out;
  }
  for (int32_t i = 0; i < count; ++i) out.codes.emplace_back(kMbart50Codes[i], first + i);
  notes->push_back(std::to_string(count) + " mBART-50 language codes (fairseq's list, ids " +
                   std::to_string(first) + ".." + std::to_string(first + count - 1) + "; " + why +
                   ")");
  return out;
}

}  // namespace tern::convert::arch
