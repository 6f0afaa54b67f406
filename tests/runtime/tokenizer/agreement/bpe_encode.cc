// tern's side of the tokenizer agreement test (agreement_test.sh): converts a tokenizer.json
// as `tern convert` does, stores it in a model file, loads it back as a text path would, and
// encodes every text of a JSON-lines file (one JSON string per line). Writes one JSON object
// per text: {"ids": [...], "special": [...]} (the second with the post-processor's special
// tokens), which agreement.mjs compares with Hugging Face's JavaScript tokenizers.
//
// Checked here, failing with exit 1: decoding the ids gives back exactly the text's bytes (its
// NFC with the NFC normalizer; unless an added token that absorbs white space, lstrip / rstrip,
// occurs in it), and
// streaming them token by token through Utf8Stream gives the same, in chunks of whole UTF-8
// characters.
//
// usage: bpe_encode TOKENIZER_JSON TEXTS_JSONL > IDS_JSONL
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/tokenizer/nfc.h"
#include "runtime/tokenizer/utf8.h"
#include "runtime/tokenizer/utf8_stream.h"
#include "tests/support/tokenizer_model.h"

namespace {

int Fail(size_t line, const std::string& what) {
  std::fprintf(stderr, "bpe_encode: text %zu: %s\n", line, what.c_str());
  return 1;
}

// Decodes ids one token at a time through Utf8Stream; false if a chunk is not whole UTF-8.
bool Stream(const tern::BpeTokenizer& t, const std::vector<int32_t>& ids, std::string* out) {
  tern::Utf8Stream stream;
  std::vector<char> chunk;
  for (const int32_t id : ids) {
    tern::Span<const uint8_t> bytes;
    if (!t.TokenBytes(id, &bytes).ok()) return false;
    chunk.resize(tern::Utf8Stream::OutputBytes(bytes.size()));
    size_t size = 0;
    if (!stream.Next(bytes, tern::Span<char>(chunk.data(), chunk.size()), &size).ok()) {
      return false;
    }
    if (tern::FindInvalidUtf8(chunk.data(), size) >= 0) return false;
    out->append(chunk.data(), size);
  }
  char rest[4];
  const size_t n = stream.Flush(tern::Span<char>(rest, sizeof rest));
  out->append(rest, n);
  return true;
}

// The round trip of a tokenizer with the NFC normalizer gives the text in NFC.
std::string Nfc(const std::string& text) {
  std::vector<uint32_t> work(tern::unicode::NfcWorkCodePoints(text.size()));
  std::vector<uint8_t> out(tern::unicode::NfcOutputBytes(text.size()));
  size_t size = 0;
  const tern::Status s =
      tern::unicode::NormalizeNfc(reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                  tern::Span<uint32_t>(work.data(), work.size()),
                                  tern::Span<uint8_t>(out.data(), out.size()), &size);
  return s.ok() ? std::string(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(size)) : "";
}

// What a round trip gives with the NFC normalizer: the text between the added tokens that are
// not normalized (found leftmost-longest, by a plain search) in NFC, those tokens as they are.
std::string NfcRoundTrip(const std::string& text, const tern::convert::BpeTokenizerData& data) {
  std::string out, gap;
  for (size_t pos = 0; pos < text.size();) {
    size_t best = 0;
    for (const auto& a : data.added_tokens) {
      if (!a.normalized && a.content.size() > best &&
          text.compare(pos, a.content.size(), a.content) == 0) {
        best = a.content.size();
      }
    }
    if (best == 0) {
      gap += text[pos++];
      continue;
    }
    out += Nfc(gap) + text.substr(pos, best);
    gap.clear();
    pos += best;
  }
  return out + Nfc(gap);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bpe_encode TOKENIZER_JSON TEXTS_JSONL > IDS_JSONL\n");
    return 2;
  }
  std::unique_ptr<tern::testing::LoadedBpe> loaded;
  tern::convert::BpeTokenizerData data;
  try {
    data = tern::convert::ReadTokenizerJson(argv[1]);
    loaded = std::make_unique<tern::testing::LoadedBpe>(data);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bpe_encode: %s\n", e.what());
    return 1;
  }
  if (!loaded->status().ok()) {
    std::fprintf(stderr, "bpe_encode: %s\n", loaded->status().message());
    return 1;
  }
  const tern::BpeTokenizer& t = loaded->tokenizer();
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "bpe_encode: cannot read %s\n", argv[2]);
    return 1;
  }
  std::string line;
  size_t index = 0;
  for (; std::getline(in, line); ++index) {
    const std::string text = nlohmann::json::parse(line).get<std::string>();
    std::vector<int32_t> ids, special;
    tern::Status s = t.Encode(text, tern::BpeEncodeOptions{}, &ids);
    tern::BpeEncodeOptions with_special;
    with_special.add_special_tokens = true;
    if (s.ok()) s = t.Encode(text, with_special, &special);
    if (!s.ok()) return Fail(index, s.message());
    std::string back;
    s = t.Decode(tern::Span<const int32_t>(ids.data(), ids.size()), false, &back);
    if (!s.ok()) return Fail(index, s.message());
    // A token that absorbs the white space beside it (lstrip, rstrip) takes it out of the
    // round trip; agreement.mjs checks those texts against the text without it.
    bool strips = false;
    for (const auto& a : data.added_tokens) {
      strips = strips || ((a.lstrip || a.rstrip) && text.find(a.content) != std::string::npos);
    }
    if (!strips && back != (t.normalizes() ? NfcRoundTrip(text, data) : text)) {
      return Fail(index, "decoding the ids gives " + nlohmann::json(back).dump());
    }
    std::string streamed;
    if (!Stream(t, ids, &streamed) || streamed != back) {
      return Fail(index, "streaming the ids gives " +
                             nlohmann::json(streamed).dump(
                                 -1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    std::cout << nlohmann::json({{"ids", ids}, {"special", special}}).dump() << "\n";
  }
  std::fprintf(stderr,
               "bpe_encode: %zu texts encoded, each decodes (whole and streamed) to itself\n",
               index);
  return 0;
}
