// BpeTokenizer::FromTable and FromModel on broken tables: every inconsistency a damaged or
// hand-made file could hold is refused with a message naming it, so that nothing later reads
// out of bounds or decodes to other text than was encoded. Each case takes a valid table (a
// tokenizer.json through the converter), changes one thing, and builds it again.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <functional>
#include <string>
#include <vector>

#include "converter/tokenizer/bpe_table.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "tests/runtime/tokenizer/mini_tokenizer.h"
#include "tests/support/tokenizer_model.h"

namespace tern::testing {
namespace {

using Catch::Matchers::ContainsSubstring;

// The fields of a ByteLevelBpe table, to change and build again.
struct RawTable {
  std::vector<int8_t> steps;
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> offsets;
  std::vector<int32_t> byte_tokens, by_bytes, by_content, prefix, suffix;
  std::vector<schema::BpeMerge> merges;
  std::vector<convert::AddedTokenData> added;
  bool ignore_merges = false;
  int8_t normalizer = 0;
};

RawTable Unpack(const schema::ByteLevelBpe& t) {
  RawTable r;
  r.steps.assign(t.pre_tokenizer()->begin(), t.pre_tokenizer()->end());
  r.bytes.assign(t.token_bytes()->begin(), t.token_bytes()->end());
  r.offsets.assign(t.token_offsets()->begin(), t.token_offsets()->end());
  r.byte_tokens.assign(t.byte_tokens()->begin(), t.byte_tokens()->end());
  r.by_bytes.assign(t.vocab_by_bytes()->begin(), t.vocab_by_bytes()->end());
  r.by_content.assign(t.added_by_content()->begin(), t.added_by_content()->end());
  r.prefix.assign(t.prefix_ids()->begin(), t.prefix_ids()->end());
  r.suffix.assign(t.suffix_ids()->begin(), t.suffix_ids()->end());
  for (const auto* m : *t.merges()) r.merges.push_back(*m);
  for (const auto* a : *t.added_tokens()) {
    r.added.push_back(
        {a->id(), a->content()->str(), a->special(), a->lstrip(), a->rstrip(), a->normalized()});
  }
  r.ignore_merges = t.ignore_merges();
  r.normalizer = t.normalizer();
  return r;
}

// Builds the table and returns FromTable's status.
Status Load(const RawTable& r) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<schema::AddedToken>> added;
  for (const auto& a : r.added) {
    added.push_back(schema::CreateAddedToken(fbb, a.id, fbb.CreateString(a.content), a.special,
                                             a.lstrip, a.rstrip, a.normalized));
  }
  fbb.Finish(schema::CreateByteLevelBpe(
      fbb, fbb.CreateVector(r.steps), fbb.CreateVector(r.bytes), fbb.CreateVector(r.offsets),
      fbb.CreateVector(r.byte_tokens), fbb.CreateVector(r.by_bytes),
      fbb.CreateVectorOfStructs(r.merges), r.ignore_merges, fbb.CreateVector(added),
      fbb.CreateVector(r.by_content), fbb.CreateVector(r.prefix), fbb.CreateVector(r.suffix),
      static_cast<schema::Normalizer>(r.normalizer)));
  const auto* table = flatbuffers::GetRoot<schema::ByteLevelBpe>(fbb.GetBufferPointer());
  const auto t = BpeTokenizer::FromTable(*table);
  return t.ok() ? Status::Ok() : t.status();
}

RawTable Valid() {
  MiniTokenizer m;
  m.merges = {{"a", "b"}, {"ab", "c"}, {"Ġ", "a"}};
  m.added = {{"<s>"}, {"<t>", false}};
  m.ignore_merges = true;  // so that vocab_by_bytes is there
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(convert::BuildBpeTokenizer(fbb, convert::ParseTokenizerJson(m.Text(), "mini")));
  const auto* tok = flatbuffers::GetRoot<schema::Tokenizer>(fbb.GetBufferPointer());
  return Unpack(*tok->byte_level_bpe());
}

void ExpectRefused(const std::function<void(RawTable*)>& change, const std::string& message) {
  RawTable r = Valid();
  REQUIRE(Load(r).ok());
  change(&r);
  const Status s = Load(r);
  INFO(message);
  CHECK(s.code() == StatusCode::kInvalidModel);
  CHECK_THAT(s.message(), ContainsSubstring(message));
}

TEST_CASE("broken vocabulary tables are refused by name", "[tokenizer][bpe][load]") {
  ExpectRefused([](RawTable* r) { r->offsets.clear(); }, "no vocabulary");
  ExpectRefused([](RawTable* r) { r->offsets.back() += 1; }, "do not start at 0 and end");
  ExpectRefused([](RawTable* r) { std::swap(r->offsets[3], r->offsets[4]); },
                "token_offsets decrease at token 3");
  ExpectRefused([](RawTable* r) { r->byte_tokens.pop_back(); }, "does not have 256 entries");
  ExpectRefused([](RawTable* r) { std::swap(r->byte_tokens[65], r->byte_tokens[66]); },
                "byte_tokens[65] = 66 is not the token of that byte");
  ExpectRefused([](RawTable* r) { r->byte_tokens[0] = 100000; }, "byte_tokens[0] = 100000");
  ExpectRefused([](RawTable* r) { r->by_bytes.push_back(-1); },
                "vocab_by_bytes[259] = -1 is outside");
  ExpectRefused([](RawTable* r) { std::swap(r->by_bytes[0], r->by_bytes[1]); },
                "vocab_by_bytes is not sorted and unique at 1");
  ExpectRefused([](RawTable* r) { r->prefix.push_back(4000); }, "post-processor token 4000");
  ExpectRefused([](RawTable* r) { r->steps.push_back(42); }, "step 1 is 42, which is unknown");
  ExpectRefused([](RawTable* r) { r->normalizer = 7; }, "normalizer 7 is unknown");
}

TEST_CASE("broken merges are refused by name", "[tokenizer][bpe][load]") {
  ExpectRefused([](RawTable* r) { r->merges[0] = schema::BpeMerge(0, 1, 5000, 0); },
                "merge 0 has an id outside");
  ExpectRefused(
      [](RawTable* r) {
        const schema::BpeMerge& m = r->merges[1];
        r->merges[1] = schema::BpeMerge(m.left(), m.right(), m.result(), -1);
      },
      "negative rank");
  ExpectRefused([](RawTable* r) { std::swap(r->merges[0], r->merges[2]); },
                "merges are not sorted by (left, right)");
  ExpectRefused([](RawTable* r) { r->merges.push_back(r->merges.back()); },
                "merges are not sorted by (left, right) at 3");
  // A merge whose result is not its two tokens' bytes would decode to other text.
  ExpectRefused(
      [](RawTable* r) {
        const schema::BpeMerge& m = r->merges[0];
        r->merges[0] = schema::BpeMerge(m.left(), m.right(), r->merges[1].result(), m.rank());
      },
      "is not tokens");
}

TEST_CASE("broken added tokens are refused by name", "[tokenizer][bpe][load]") {
  ExpectRefused([](RawTable* r) { r->added[0].id = 99999; }, "added token 0 has id 99999");
  ExpectRefused([](RawTable* r) { std::swap(r->added[0], r->added[1]); },
                "added tokens are not sorted by id");
  ExpectRefused([](RawTable* r) { r->by_content.pop_back(); },
                "2 added tokens but 1 entries in added_by_content");
  ExpectRefused([](RawTable* r) { r->by_content = {0, 0}; }, "not sorted and unique at 1");
  ExpectRefused([](RawTable* r) { r->by_content = {1, 7}; }, "added_by_content[1] = 7");
  ExpectRefused([](RawTable* r) { r->added[1].content = "\xff"; }, "invalid UTF-8 content");
  ExpectRefused([](RawTable* r) { r->added[1].content.clear(); }, "empty");
}

TEST_CASE("FromModel: a model without a byte-level BPE tokenizer", "[tokenizer][bpe][load]") {
  const AlignedBytes none = RandomModelBytes(TinyConfig(), 1);
  auto model = Model::Load(none.data(), none.size());
  REQUIRE(model.ok());
  auto t = BpeTokenizer::FromModel(model.value());
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(t.status().message(), ContainsSubstring("no tokenizer"));
}

}  // namespace
}  // namespace tern::testing
