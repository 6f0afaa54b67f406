#include "converter/tokenizer/bpe_table.h"

#include <algorithm>
#include <numeric>

namespace tern::convert {

flatbuffers::Offset<schema::Tokenizer> BuildBpeTokenizer(flatbuffers::FlatBufferBuilder& fbb,
                                                         const BpeTokenizerData& d) {
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> offsets{0};
  for (const std::string& t : d.token_bytes) {
    bytes.insert(bytes.end(), t.begin(), t.end());
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
  }
  std::vector<int32_t> by_bytes;  // only ignore_merges looks here
  for (int32_t id = 0; d.ignore_merges && id < d.vocab_size(); ++id) {
    if (d.byte_level[id]) by_bytes.push_back(id);
  }
  // Unsigned byte order, a prefix before what it starts (std::string compares chars, which may
  // be signed).
  auto bytes_less = [](const std::string& a, const std::string& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
      return static_cast<uint8_t>(x) < static_cast<uint8_t>(y);
    });
  };
  std::sort(by_bytes.begin(), by_bytes.end(),
            [&](int32_t a, int32_t b) { return bytes_less(d.token_bytes[a], d.token_bytes[b]); });
  std::vector<schema::BpeMerge> merges;
  for (const BpeMergeData& m : d.merges) merges.emplace_back(m.left, m.right, m.result, m.rank);
  std::sort(merges.begin(), merges.end(), [](const schema::BpeMerge& a, const schema::BpeMerge& b) {
    return a.left() != b.left() ? a.left() < b.left() : a.right() < b.right();
  });
  std::vector<flatbuffers::Offset<schema::AddedToken>> added;
  for (const AddedTokenData& a : d.added_tokens) {
    added.push_back(schema::CreateAddedToken(fbb, a.id, fbb.CreateString(a.content), a.special,
                                             a.lstrip, a.rstrip, a.normalized));
  }
  std::vector<int32_t> by_content(d.added_tokens.size());
  std::iota(by_content.begin(), by_content.end(), 0);
  std::sort(by_content.begin(), by_content.end(), [&](int32_t a, int32_t b) {
    return bytes_less(d.added_tokens[a].content, d.added_tokens[b].content);
  });
  std::vector<int8_t> steps(d.pre_tokenizer.begin(), d.pre_tokenizer.end());
  // One statement per vector: argument order is unspecified (it differs between GCC's x86-64
  // and aarch64 code), and the builder's bytes follow the order of the calls (writer.cc). The
  // order is the one x86-64 builds took, so their files are unchanged.
  auto suffix_ids = fbb.CreateVector(d.suffix_ids);
  auto prefix_ids = fbb.CreateVector(d.prefix_ids);
  auto added_by_content = fbb.CreateVector(by_content);
  auto added_tokens = fbb.CreateVector(added);
  auto merge_table = fbb.CreateVectorOfStructs(merges);
  auto vocab_by_bytes = fbb.CreateVector(by_bytes);
  auto byte_tokens = fbb.CreateVector(d.byte_tokens);
  auto token_offsets = fbb.CreateVector(offsets);
  auto token_bytes = fbb.CreateVector(bytes);
  auto pre_tokenizer = fbb.CreateVector(steps);
  auto table = schema::CreateByteLevelBpe(fbb, pre_tokenizer, token_bytes, token_offsets,
                                          byte_tokens, vocab_by_bytes, merge_table, d.ignore_merges,
                                          added_tokens, added_by_content, prefix_ids, suffix_ids,
                                          d.nfc ? schema::Normalizer_NFC : schema::Normalizer_None);
  return schema::CreateTokenizer(fbb, schema::TokenizerKind_ByteLevelBpe, 0, 0, table);
}

}  // namespace tern::convert
