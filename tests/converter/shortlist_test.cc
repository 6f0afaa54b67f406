// The vocabulary shortlist: built from parallel ids (IBM model 1 and the log-likelihood ratio),
// its text form, the writer's formats 1.5 and 1.11 (16-bit ids), and the inputs each step
// refuses.
#include "converter/shortlist.h"

#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "converter/error.h"
#include "converter/writer.h"
#include "runtime/model/shortlist.h"
#include "tern_generated.h"
#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;

// Source token 10 + i translates to target 12 + i (i < 4); 4 (and target 5) are in every
// sentence; every sentence has two of the pairs, so only their co-occurrence tells them apart.
void ToyCorpus(std::vector<IdSequence>* source, std::vector<IdSequence>* target) {
  for (int rep = 0; rep < 6; ++rep) {
    for (int a = 0; a < 4; ++a) {
      const int b = (a + 1 + rep % 3) % 4;
      if (a == b) continue;
      source->push_back({4, 10 + a, 10 + b});
      target->push_back({12 + b, 5, 12 + a});
    }
  }
}

ShortlistOptions Options(int64_t k, int64_t f, LexicalScore score) {
  ShortlistOptions o;
  o.k = k;
  o.f = f;
  o.score = score;
  o.special_ids = {0, 1, 2, 3};
  return o;
}

TEST_CASE("each source token's best target comes first, frequent and special ids stay out",
          "[shortlist]") {
  std::vector<IdSequence> source, target;
  ToyCorpus(&source, &target);
  for (LexicalScore score : {LexicalScore::kIbm1, LexicalScore::kLogLikelihood}) {
    const ShortlistData s = BuildShortlist(source, target, 20, 20, Options(2, 1, score));
    CHECK(s.k == 2);
    REQUIRE(s.frequent == std::vector<int32_t>{5});  // in every target sentence
    REQUIRE(s.row_offsets.size() == 21);
    for (int a = 0; a < 4; ++a) {
      const uint32_t begin = s.row_offsets[10 + a], end = s.row_offsets[11 + a];
      REQUIRE(end > begin);
      CHECK(end - begin <= 2);
      CHECK(s.ids[begin] == 12 + a);
      for (uint32_t i = begin; i < end; ++i) CHECK(s.ids[i] != 5);
    }
    CHECK(s.row_offsets[7] == s.row_offsets[8]);  // never seen: an empty row
    // Coverage of the corpus itself: every reference token is a candidate with K = 2.
    const ShortlistCoverage c = MeasureCoverage(s, source, target, {0, 1, 2, 3});
    CHECK(c.recall == 1.0);
    CHECK(c.max_candidates <= 1 + 4 + 2 * 3);
  }
}

TEST_CASE("a sentence's candidates are frequent + rows + specials, sorted and unique",
          "[shortlist]") {
  ShortlistData s;
  s.k = 2;
  s.frequent = {9};
  s.row_offsets = {0, 0, 2, 3};  // source 1: {7, 9}; source 2: {4}
  s.ids = {7, 9, 4};
  CHECK(Candidates(s, {1, 2, 1}, {2, 0}) == std::vector<int32_t>{0, 2, 4, 7, 9});
  CHECK(Candidates(s, {0}, {2}) == std::vector<int32_t>{2, 9});
}

TEST_CASE("a bad corpus or K / F is refused by name", "[shortlist]") {
  std::vector<IdSequence> source, target;
  ToyCorpus(&source, &target);
  const auto build = [&](const std::vector<IdSequence>& s, const std::vector<IdSequence>& t,
                         int64_t k, int64_t f) {
    BuildShortlist(s, t, 20, 20, Options(k, f, LexicalScore::kIbm1));
  };
  std::vector<IdSequence> shorter(target.begin(), target.end() - 1);
  CHECK_THROWS_WITH(build(source, shorter, 2, 2), ContainsSubstring("lines"));
  CHECK_THROWS_WITH(build({}, {}, 2, 2), ContainsSubstring("empty"));
  CHECK_THROWS_WITH(build({{}, {4}}, {{5}, {}}, 2, 2), ContainsSubstring("empty"));
  CHECK_THROWS_WITH(build(source, target, 0, 0), ContainsSubstring("K = 0 and F = 0"));
  CHECK_THROWS_WITH(build(source, target, 21, 2), ContainsSubstring("tgt_vocab_size 20"));
  CHECK_THROWS_WITH(build(source, target, 2, 21), ContainsSubstring("tgt_vocab_size 20"));
  std::vector<IdSequence> bad = target;
  bad[3].push_back(20);
  CHECK_THROWS_WITH(build(source, bad, 2, 2), ContainsSubstring("target line 4: token id 20"));
  CHECK_NOTHROW(build(source, target, 0, 2));
  CHECK_NOTHROW(build(source, target, 2, 0));
}

std::string WriteTemp(const std::string& text) {
  char path_template[] = "/tmp/tern_shortlist_XXXXXX";
  const int fd = mkstemp(path_template);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string path = path_template;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST_CASE("the shortlist text form reads back what it wrote, and refuses bad lines",
          "[shortlist]") {
  std::vector<IdSequence> source, target;
  ToyCorpus(&source, &target);
  const ShortlistData s =
      BuildShortlist(source, target, 20, 20, Options(3, 2, LexicalScore::kIbm1));
  const std::string path = WriteTemp(ShortlistText(s));
  const ShortlistData back = ReadShortlistText(path, 20, 20);
  std::remove(path.c_str());
  CHECK(back.k == s.k);
  CHECK(back.frequent == s.frequent);
  CHECK(back.row_offsets == s.row_offsets);
  CHECK(back.ids == s.ids);
  const auto refuse = [](const std::string& text, const std::string& what) {
    const std::string p = WriteTemp(text);
    CHECK_THROWS_WITH(ReadShortlistText(p, 20, 20), ContainsSubstring(what));
    std::remove(p.c_str());
  };
  CHECK(ShortlistText(s).rfind("tern-shortlist 2\nvocab 20 20\nk 3\n", 0) == 0);
  const std::string head = "tern-shortlist 1\nk 2\nfrequent 5\n";
  refuse("tern-shortlist 3\n", "not a tern shortlist");
  // version 2 names the vocabularies it was built for: another model's sizes are refused
  refuse("tern-shortlist 2\nvocab 20 21\nk 2\nfrequent 5\n",
         "built for vocabularies of 20 source and 21 target tokens; this model has 20 and 20");
  refuse("tern-shortlist 2\nvocab 8000 8000\nk 2\nfrequent 5\n", "built for vocabularies of 8000");
  refuse("tern-shortlist 2\nk 2\nfrequent 5\n", "expected \"vocab SRC_VOCAB TGT_VOCAB\"");
  {  // and a version 1 file (no vocab line) still reads
    const std::string p = WriteTemp(head + "4\t7 8\n");
    const ShortlistData v1 = ReadShortlistText(p, 20, 20);
    std::remove(p.c_str());
    CHECK(v1.k == 2);
    CHECK(v1.ids == std::vector<int32_t>{7, 8});
  }
  refuse("tern-shortlist 1\nk 21\nfrequent\n", "k K");
  refuse("tern-shortlist 1\nk 0\nfrequent\n", "allow no token");
  refuse("tern-shortlist 1\nk 2\nfrequent 20\n", "id 20 is outside");
  refuse(head + "3\t7 8 9\n", "more than k = 2");
  refuse(head + "20\t7\n", "source id \"20\"");
  refuse(head + "4\t7\n3\t8\n", "ascend");
  refuse(head + "4\t7 x\n", "expected token ids");
  refuse(head + "4 7\n", "SOURCE_ID<TAB>IDS");
}

// A table for TinyConfig's 20 tokens: frequent {4, 5}, source 7's row {9, 11}, the others empty.
ShortlistData TinyShortlist() {
  ShortlistData s;
  s.k = 2;
  s.frequent = {4, 5};
  s.row_offsets.assign(21, 0);
  for (size_t i = 8; i < s.row_offsets.size(); ++i) s.row_offsets[i] = 2;  // source 7: {9, 11}
  s.ids = {9, 11};
  return s;
}

// Both stored forms: Model.compact_shortlist with 16-bit ids (1.11, written whenever the ids
// fit) and Model.shortlist with 32-bit ids (1.5, shortlist_wide_ids); the loader checks either
// and names the field as the file has it.
TEST_CASE("a file with a shortlist loads it in either form; the loader checks its ids",
          "[shortlist][writer]") {
  const bool wide = GENERATE(false, true);
  CAPTURE(wide);
  const std::string name = wide ? "shortlist" : "compact_shortlist";
  const std::string ids = name + (wide ? ".ids" : ".ids16");
  const ModelConfig config = testing::TinyConfig();  // vocab 20
  TernContents contents = testing::RandomContents(config, 3);
  contents.shortlist_wide_ids = wide;
  const ShortlistData s = TinyShortlist();
  contents.shortlist = s;
  {
    const testing::AlignedBytes bytes(SerializeModel(contents));
    auto model = Model::Load(bytes.data(), bytes.size());
    REQUIRE(model.ok());
    CHECK(model.value().format_minor() == (wide ? 5 : 11));
    CHECK((model.value().schema()->shortlist() != nullptr) == wide);
    CHECK((model.value().schema()->compact_shortlist() != nullptr) == !wide);
    const ShortlistTable& t = model.value().shortlist();
    REQUIRE(t.present());
    CHECK(t.id_bytes() == (wide ? 4 : 2));
    CHECK(t.id_count() == 2);
    CHECK(t.k == 2);
    CHECK(t.f() == 2);
    REQUIRE(t.row_size(7) == 2);
    CHECK(t.row_id(7, 0) == 9);
    CHECK(t.row_id(7, 1) == 11);
    std::vector<int32_t> row;
    t.ForEachInRow(7, [&row](int32_t id) { row.push_back(id); });
    CHECK(row == std::vector<int32_t>{9, 11});
    CHECK(t.row_size(8) == 0);
    CHECK(t.MaxCandidates(10, 4, 20) == 20);
    CHECK(t.MaxCandidates(3, 4, 20) == 2 + 6 + 4);
  }
  const auto refused = [&](ShortlistData bad, const std::string& what) {
    contents.shortlist = bad;
    const testing::AlignedBytes bytes(SerializeModel(contents));
    auto model = Model::Load(bytes.data(), bytes.size());
    REQUIRE(!model.ok());
    CHECK_THAT(model.status().message(), ContainsSubstring(what));
  };
  ShortlistData bad = s;
  bad.ids[1] = 20;
  refused(bad, ids + "[1] = 20 is outside tgt_vocab_size 20");
  bad = s;
  bad.frequent[0] = -1;
  refused(bad, name + ".frequent[0] = -1");
  bad = s;
  bad.row_offsets.pop_back();
  refused(bad, name + ".row_offsets has 20 entries");
  bad = s;
  bad.k = 1;
  refused(bad, name + " row of source token 7 has 2 ids, more than k = 1");
  bad = s;
  bad.row_offsets[12] = 1;
  refused(bad, name + ".row_offsets[12] = 1");
  bad = s;
  bad.k = 0;
  bad.frequent.clear();
  bad.ids.clear();
  bad.row_offsets.assign(21, 0);
  refused(bad, "has k = 0 and no frequent ids");  // no row ids: written in the 1.5 form either way
  bad = s;
  bad.k = 21;
  refused(bad, name + ".k = 21");
  contents.shortlist.reset();
  const testing::AlignedBytes plain(SerializeModel(contents));
  auto model = Model::Load(plain.data(), plain.size());
  REQUIRE(model.ok());
  CHECK(model.value().format_minor() == 2);
  CHECK(!model.value().shortlist().present());
}

// Tables the converter never writes, built by hand: ids in the wrong vector for the field the
// table was found in.
TEST_CASE("the loader refuses ids in the other form's vector", "[shortlist][writer]") {
  // The table is a view of the builder's buffer: the builder outlives each read's checks.
  flatbuffers::FlatBufferBuilder fbb;
  const auto read = [&fbb](bool compact, std::vector<int32_t> ids, std::vector<uint16_t> ids16,
                           ShortlistTable* out) {
    fbb.Clear();
    const std::vector<int32_t> frequent = {4};
    std::vector<uint32_t> offsets(21, 0);
    for (size_t i = 8; i < offsets.size(); ++i) offsets[i] = 1;  // source 7: one id
    auto f = fbb.CreateVector(frequent);
    auto o = fbb.CreateVector(offsets);
    auto i32 = ids.empty() ? 0 : fbb.CreateVector(ids);
    auto i16 = ids16.empty() ? 0 : fbb.CreateVector(ids16);
    fbb.Finish(schema::CreateShortlist(fbb, 1, f, o, i32, i16));
    return ReadShortlist(flatbuffers::GetRoot<schema::Shortlist>(fbb.GetBufferPointer()), compact,
                         20, 20, out);
  };
  ShortlistTable t;
  REQUIRE(read(true, {}, {9}, &t).ok());
  CHECK(t.id_bytes() == 2);
  CHECK(t.row_id(7, 0) == 9);
  REQUIRE(read(false, {9}, {}, &t).ok());
  CHECK(t.id_bytes() == 4);
  CHECK(t.row_id(7, 0) == 9);
  Status s = read(true, {9}, {9}, &t);
  CHECK(s.message() == std::string("compact_shortlist.ids is set: it holds its ids in ids16 only"));
  s = read(false, {9}, {9}, &t);
  CHECK(s.message() == std::string("shortlist.ids16 is set: it holds its ids in ids only"));
  s = read(true, {}, {}, &t);  // no ids at all: the offsets point past them
  CHECK(s.message() ==
        std::string("compact_shortlist.row_offsets[8] = 1 is not in [0, 0] (ids16 has 0)"));
}

TEST_CASE("a file that holds both shortlist forms is refused", "[shortlist][writer]") {
  // The writer stores one form; a file with both is made by pointing the root table's
  // `shortlist` slot at the field that holds `compact_shortlist` (a reference is an offset from
  // its own field, so both slots then read the same table).
  TernContents contents = testing::RandomContents(testing::TinyConfig(), 5);
  contents.shortlist = TinyShortlist();
  std::vector<uint8_t> bytes = SerializeModel(contents);
  {
    const testing::AlignedBytes one(bytes);
    auto model = Model::Load(one.data(), one.size());
    REQUIRE(model.ok());
    REQUIRE(model.value().schema()->compact_shortlist() != nullptr);
    REQUIRE(model.value().schema()->shortlist() == nullptr);
  }
  // A size-prefixed buffer: the root's offset follows the 4-byte size, from where it stands.
  uint8_t* buffer = bytes.data() + sizeof(flatbuffers::uoffset_t);
  uint8_t* root = buffer + flatbuffers::ReadScalar<flatbuffers::uoffset_t>(buffer);
  uint8_t* vtable = root - flatbuffers::ReadScalar<flatbuffers::soffset_t>(root);
  const auto vtable_bytes = flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable);
  REQUIRE(schema::Model::VT_COMPACT_SHORTLIST < vtable_bytes);
  REQUIRE(schema::Model::VT_SHORTLIST < schema::Model::VT_COMPACT_SHORTLIST);
  const auto field =
      flatbuffers::ReadScalar<flatbuffers::voffset_t>(vtable + schema::Model::VT_COMPACT_SHORTLIST);
  flatbuffers::WriteScalar<flatbuffers::voffset_t>(vtable + schema::Model::VT_SHORTLIST, field);
  const testing::AlignedBytes both(bytes);
  auto model = Model::Load(both.data(), both.size());
  REQUIRE(!model.ok());
  CHECK(model.status().code() == StatusCode::kInvalidModel);
  CHECK(model.status().message() ==
        std::string("shortlist and compact_shortlist are both set: a file holds one"));
}

TEST_CASE("a decoder-only model's shortlist is refused, named as stored", "[shortlist][writer]") {
  const bool wide = GENERATE(false, true);
  TernContents contents = testing::RandomContents(testing::TinyDecoderOnlyConfig(20), 4);
  ShortlistData s;
  s.k = 1;
  s.frequent = {4};
  s.row_offsets = {0};
  s.ids = {3};  // no row holds it: the architecture is refused before the table is read
  contents.shortlist = s;
  contents.shortlist_wide_ids = wide;
  const testing::AlignedBytes bytes(SerializeModel(contents));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(!model.ok());
  CHECK(model.status().message() ==
        std::string(wide ? "shortlist" : "compact_shortlist") +
            ": a decoder-only model has no source sentence to shortlist from");
}

TEST_CASE("ids that do not fit 16 bits keep the 1.5 form", "[shortlist][writer]") {
  ModelConfig config = testing::TinyConfig();
  config.tgt_vocab_size = 70000;  // a target vocabulary beyond 16-bit ids
  config.shared_embeddings = false;
  TernContents contents = testing::RandomContents(config, 3);
  ShortlistData s;
  s.k = 1;
  s.frequent = {4};
  s.row_offsets.assign(static_cast<size_t>(config.src_vocab_size) + 1, 1);
  s.row_offsets[0] = 0;  // source 0: {69999}
  s.ids = {69999};
  contents.shortlist = s;
  CHECK(!contents.CompactShortlist());
  const testing::AlignedBytes bytes(SerializeModel(contents));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  CHECK(model.value().format_minor() == 5);
  REQUIRE(model.value().shortlist().present());
  CHECK(model.value().shortlist().id_bytes() == 4);
  CHECK(model.value().shortlist().row_id(0, 0) == 69999);
  s.ids = {65535};  // the largest id that fits
  contents.shortlist = s;
  CHECK(contents.CompactShortlist());
  s.ids.clear();  // K = 0, frequent ids only: nothing to halve, the file stays 1.5
  s.k = 0;
  s.row_offsets.assign(s.row_offsets.size(), 0);
  contents.shortlist = s;
  CHECK(!contents.CompactShortlist());
}

}  // namespace
}  // namespace tern::convert
