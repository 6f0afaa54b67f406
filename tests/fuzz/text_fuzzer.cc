// Fuzz target: the text path. The input bytes are text from a user:
//  - FindInvalidUtf8 must agree with an independent validator (Unicode 15, table 3-7),
//  - Tokenizer::Encode (tests/fixtures/tokenizer/src37.model) must refuse exactly the invalid
//    inputs and give ids inside the vocabulary, and Decode must take them back,
//  - Tokenizer::Decode on arbitrary ids (some out of range) must refuse or decode, never crash,
//  - the same SentencePiece model with a vocabulary map (format 1.8's SentencePieceMapped, as
//    NLLB / mBART-50 store it: piece p is model id p + 1 in a vocabulary of 40, one piece
//    unmapped) must encode into the model's ids only and decode them, and decode arbitrary ids
//    (some without a piece, some out of range) or refuse them,
//  - tern_translate_text (the C API's whole text path: tokenize, translate, detokenize) on a
//    tiny random model carrying the src37 / tgt41 tokenizers must answer with a status and a
//    NUL-terminated output that fits the buffer,
//  - the byte-level BPE tokenizer of three fixtures (tests/fixtures/tokenizer/bpe_*: GPT-2's
//    and LLaMA 3's splits, Qwen2's with NFC), through the caller-buffer API with exactly the
//    workspace it asks for, must refuse exactly the invalid inputs, give ids inside the
//    vocabulary, and decode them back to the text (GPT-2, LLaMA 3; with NFC: to valid UTF-8).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "converter/tokenizer/tokenizer_json.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tern/tern.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/support/tiny_model.h"
#include "tests/support/tokenizer_model.h"

namespace {

using tern::fuzz::Die;

// Offset of the first byte that does not start a well-formed UTF-8 sequence (Unicode table
// 3-7), or -1. Written apart from FindInvalidUtf8, by byte ranges instead of bit arithmetic.
int64_t ReferenceInvalidUtf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = s[i];
    auto in = [&](size_t k, uint8_t lo, uint8_t hi) {
      return i + k < n && s[i + k] >= lo && s[i + k] <= hi;
    };
    size_t len = 0;
    if (c <= 0x7F) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = in(1, 0x80, 0xBF) ? 2 : 0;
    } else if (c == 0xE0) {
      len = in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      len = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if (c == 0xED) {
      len = in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF) ? 3 : 0;
    } else if (c == 0xF0) {
      len = in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    } else if (c == 0xF4) {
      len = in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
    }
    if (len == 0) return static_cast<int64_t>(i);
    i += len;
  }
  return -1;
}

constexpr int32_t kMappedVocab = 40;

struct TextEnv {
  tern::Tokenizer source, target;
  tern::Tokenizer mapped;  // src37 with a vocabulary map into kMappedVocab ids
  tern::testing::AlignedBytes model_bytes;
  tern_model* model = nullptr;
  std::vector<uint8_t> arena;
  tern_session* session = nullptr;
  int32_t max_source_length = 24;
  std::vector<tern::testing::LoadedBpe*> bpe;  // gpt2, llama3, qwen2 (NFC)
};

TextEnv* MakeEnv() {
  auto* env = new TextEnv();
  const std::string dir = std::string(TERN_FIXTURES) + "/tokenizer/";
  for (const char* name : {"bpe_gpt2", "bpe_llama3", "bpe_qwen2"}) {
    env->bpe.push_back(new tern::testing::LoadedBpe(
        tern::convert::ReadTokenizerJson(dir + name + "/tokenizer.json")));
    if (!env->bpe.back()->status().ok()) Die("cannot load", name);
  }
  const std::vector<uint8_t> src = tern::fuzz::ReadFileOrDie(dir + "src37.model");
  const std::vector<uint8_t> tgt = tern::fuzz::ReadFileOrDie(dir + "tgt41.model");
  if (!env->source.Load({src.data(), src.size()}).ok() ||
      !env->target.Load({tgt.data(), tgt.size()}).ok()) {
    Die("cannot load the tokenizer fixtures");
  }
  // fairseq's offset (piece p is id p + 1), piece 5 left out (-1: encoded as unk_id 0).
  std::vector<int32_t> model_ids;
  for (int32_t p = 0; p < env->source.vocab_size(); ++p) model_ids.push_back(p == 5 ? -1 : p + 1);
  if (!env->mapped.Load({src.data(), src.size()}).ok() ||
      !env->mapped.SetVocabularyMap({model_ids.data(), model_ids.size()}, kMappedVocab, 0).ok()) {
    Die("cannot map the tokenizer fixture");
  }
  tern::ModelConfig c = tern::testing::TinyConfig();
  c.encoder_layers = 1;
  c.decoder_layers = 1;
  c.src_vocab_size = 37;
  c.tgt_vocab_size = 41;
  c.shared_embeddings = false;
  c.tied_output = true;
  c.max_positions = 32;
  tern::convert::TernContents contents = tern::testing::RandomContents(c, 8);
  contents.source_tokenizer = src;
  contents.target_tokenizer = tgt;
  env->model_bytes = tern::testing::AlignedBytes(tern::convert::SerializeModel(contents));
  if (tern_model_load_from_memory(env->model_bytes.data(), env->model_bytes.size(), &env->model) !=
      TERN_OK) {
    Die("cannot load the text model", tern_last_error());
  }
  tern_limits limits = tern_default_limits();
  limits.max_source_length = env->max_source_length;
  limits.max_target_length = 12;
  size_t bytes = 0;
  if (tern_required_arena_bytes(env->model, &limits, &bytes) != TERN_OK)
    Die("arena size", tern_last_error());
  env->arena.resize(bytes);
  if (tern_session_create(env->model, &limits, env->arena.data(), bytes, &env->session) !=
      TERN_OK) {
    Die("cannot create the session", tern_last_error());
  }
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TextEnv* env = MakeEnv();
  const int64_t bad = tern::FindInvalidUtf8(reinterpret_cast<const char*>(data), size);
  const int64_t expected = ReferenceInvalidUtf8(data, size);
  if (bad != expected) {
    Die("FindInvalidUtf8 disagrees with the reference validator",
        std::to_string(bad) + " vs " + std::to_string(expected));
  }

  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<int32_t> ids;
  const tern::Status encoded = env->source.Encode(text, true, 2, &ids);
  if (bad >= 0 && encoded.ok()) Die("Encode accepted invalid UTF-8");
  if (bad < 0 && !encoded.ok()) Die("Encode refused valid UTF-8", encoded.message());
  if (encoded.ok()) {
    for (int32_t id : ids) {
      if (id < 0 || id >= env->source.vocab_size()) Die("Encode gave an id outside the vocabulary");
    }
    std::string back;
    const tern::Status decoded = env->source.Decode(ids.data(), ids.size(), &back);
    if (!decoded.ok()) Die("Decode refused ids Encode made", decoded.message());
    if (tern::FindInvalidUtf8(back.data(), back.size()) >= 0) Die("Decode produced invalid UTF-8");
  }

  std::vector<int32_t> mapped_ids;
  const tern::Status mapped = env->mapped.Encode(text, true, 2, &mapped_ids);
  if (mapped.ok() != encoded.ok()) Die("the mapped tokenizer and its model disagree on the text");
  if (mapped.ok()) {
    for (int32_t id : mapped_ids) {
      if (id < 0 || id >= kMappedVocab) Die("the mapped Encode gave an id outside the vocabulary");
    }
    std::string back;
    const tern::Status decoded = env->mapped.Decode(mapped_ids.data(), mapped_ids.size(), &back);
    if (!decoded.ok()) Die("the mapped Decode refused ids its Encode made", decoded.message());
    if (tern::FindInvalidUtf8(back.data(), back.size()) >= 0)
      Die("the mapped Decode produced invalid UTF-8");
  }

  for (const tern::testing::LoadedBpe* loaded : env->bpe) {
    const tern::BpeTokenizer& t = loaded->tokenizer();
    std::vector<uint8_t> workspace(t.EncodeWorkspaceBytes(size));
    std::vector<int32_t> bpe_ids(size + 1);
    size_t count = 0;
    const tern::Status s =
        t.Encode(text.data(), size, {}, tern::Span<int32_t>(bpe_ids.data(), bpe_ids.size()), &count,
                 tern::Span<uint8_t>(workspace.data(), workspace.size()));
    if (bad >= 0) {
      if (s.ok()) Die("BpeTokenizer::Encode accepted invalid UTF-8");
      continue;
    }
    if (!s.ok()) Die("BpeTokenizer::Encode refused valid UTF-8", s.message());
    bpe_ids.resize(count);
    for (const int32_t id : bpe_ids) {
      if (id < 0 || id >= t.vocab_size()) Die("BpeTokenizer gave an id outside the vocabulary");
    }
    std::string back;
    const tern::Status d =
        t.Decode(tern::Span<const int32_t>(bpe_ids.data(), bpe_ids.size()), false, &back);
    if (!d.ok()) Die("BpeTokenizer::Decode refused its own ids", d.message());
    if (t.normalizes()) {
      if (tern::FindInvalidUtf8(back.data(), back.size()) >= 0)
        Die("BpeTokenizer with NFC decoded to invalid UTF-8");
    } else if (back != text) {
      Die("BpeTokenizer did not decode back to the text");
    }
  }

  // Arbitrary ids, some out of range.
  std::vector<int32_t> raw;
  for (size_t i = 0; i < size && i < 64; ++i) raw.push_back(static_cast<int8_t>(data[i]));
  std::string decoded;
  bool in_range = true;
  for (int32_t id : raw) in_range = in_range && id >= 0 && id < env->target.vocab_size();
  const tern::Status d = env->target.Decode(raw.data(), raw.size(), &decoded);
  if (d.ok() != in_range) Die("Decode's answer does not match the ids' range");
  bool in_mapped = true;
  for (int32_t id : raw) in_mapped = in_mapped && id >= 0 && id < kMappedVocab;
  if (env->mapped.Decode(raw.data(), raw.size(), &decoded).ok() != in_mapped)
    Die("the mapped Decode's answer does not match the ids' range");

  // The C API's text path (stops at the first NUL, as a C string does).
  char out[64];
  const size_t capacity = size % 5 == 0 ? 6 : sizeof out;
  std::memset(out, 0x5A, sizeof out);
  const tern_status s = tern_translate_text(env->session, text.c_str(), nullptr, out, capacity);
  if (std::memchr(out, '\0', capacity) == nullptr)
    Die("tern_translate_text left the output unterminated");
  for (size_t i = capacity; i < sizeof out; ++i) {
    if (out[i] != 0x5A) Die("tern_translate_text wrote past out_capacity");
  }
  const size_t c_length = std::strlen(text.c_str());
  const bool c_valid = tern::FindInvalidUtf8(text.c_str(), c_length) < 0;
  switch (s) {
    case TERN_OK:
      if (!c_valid) Die("tern_translate_text accepted invalid UTF-8");
      break;
    case TERN_INVALID_ARGUMENT:  // invalid UTF-8
    case TERN_OUT_OF_RANGE:      // too many source tokens, or the output was truncated
      break;
    default:
      Die("tern_translate_text: unexpected status", tern_status_string(s));
  }
  if (s == TERN_INVALID_ARGUMENT && c_valid)
    Die("tern_translate_text refused valid UTF-8", tern_last_error());
  return 0;
}
