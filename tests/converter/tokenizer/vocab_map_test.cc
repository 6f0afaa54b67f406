// Vocabulary maps (converter/tokenizer/vocab_map.h, Tokenizer.mapped, format 1.8): the NLLB and
// M2M100 fixtures' sentencepiece.bpe.model converted with their maps, the text path's ids equal
// the Hugging Face tokenizers' (translate_ids.tsv, computed by make_nllb_text_fixture.py from
// spm_encode and the map), and each bad map refused by name.
#include "converter/tokenizer/vocab_map.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/error.h"
#include "converter/writer.h"
#include "runtime/model/model.h"
#include "runtime/tokenizer/translation_tokenizer.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::CheckpointFixture;

std::vector<uint8_t> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string ThrownBy(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A converted fixture, loaded from a 64-byte aligned copy of its bytes.
struct Loaded {
  std::vector<uint8_t> storage;
  Model model;
};

void Convert(const std::string& checkpoint, const std::string& arch, Loaded* out) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(checkpoint);
  o.arch = arch;
  const std::vector<uint8_t> bytes = SerializeModel(BuildContents(o));
  out->storage.resize(bytes.size() + 64);
  uint8_t* base = out->storage.data();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  std::memcpy(base, bytes.data(), bytes.size());
  auto m = Model::Load(base, bytes.size());
  REQUIRE(m.ok());
  out->model = std::move(m.value());
}

TEST_CASE("vocab map: the text path's ids are the Hugging Face tokenizer's (NLLB, M2M100)") {
  for (const char* family : {"nllb", "m2m100"}) {
    CAPTURE(family);
    Loaded loaded;
    Convert(std::string(family) +
                (std::string(family) == "nllb" ? "/model.safetensors" : "/pytorch_model.bin"),
            family, &loaded);
    CHECK(loaded.model.format_minor() == 8);
    CHECK(loaded.model.source_tokenizer().empty());  // a 1.7 reader sees no SentencePiece model
    TranslationTokenizer tokenizer;
    REQUIRE(tokenizer.Load(loaded.model).ok());
    std::ifstream rows(CheckpointFixture(std::string(family) + "/translate_ids.tsv"));
    std::string line;
    int n = 0;
    while (std::getline(rows, line)) {
      std::istringstream fields(line);
      std::string code, text, ids_text;
      std::getline(fields, code, '\t');
      std::getline(fields, text, '\t');
      std::getline(fields, ids_text);
      std::istringstream id_stream(ids_text);
      std::vector<int32_t> want;
      for (int32_t id; id_stream >> id;) want.push_back(id);
      want.erase(want.begin());  // the language code: the caller's (--source-lang)
      std::vector<int32_t> got;
      REQUIRE(tokenizer.Encode(text, 2, &got).ok());
      CHECK(got == want);
      // Back to the text (the language code and </s> give none).
      std::vector<int32_t> with_code = {loaded.model.config().src_vocab_size - 2};
      with_code.insert(with_code.end(), got.begin(), got.end());
      std::string back;
      REQUIRE(tokenizer.Decode(with_code.data(), with_code.size(), &back).ok());
      CHECK(back == text);
      ++n;
    }
    CHECK(n == 3);
  }
}

TEST_CASE(
    "vocab map: a piece with no map entry, an id outside the vocabulary, specials that "
    "disagree with the config") {
  const std::string spm = CheckpointFixture("nllb/sentencepiece.bpe.model");
  const std::vector<uint8_t> model = Bytes(spm);
  const SpecialIds special{0, 1, 2, 3};
  testing::ScratchDir dir;
  // vocab.json without the piece "▁das"
  std::string json = std::string(
      reinterpret_cast<const char*>(Bytes(CheckpointFixture("m2m100/vocab.json")).data()),
      Bytes(CheckpointFixture("m2m100/vocab.json")).size());
  const size_t at = json.find(
      "\"\xE2\x96\x81"
      "das\"");
  REQUIRE(at != std::string::npos);
  json.replace(at, 6,
               "\"\xE2\x96\x81"
               "dax");
  testing::WriteBytes(dir / "vocab.json", json);
  CHECK(ThrownBy([&] {
          BuildVocabularyMap(model, spm, VocabularyRule::kVocabJson, dir / "vocab.json", 102,
                             special);
        }).find("is not in " + dir / "vocab.json") != std::string::npos);
  CHECK_THAT(ThrownBy([&] {
               BuildVocabularyMap(model, spm, VocabularyRule::kVocabJson, dir / "vocab.json", 102,
                                  special);
             }),
             ContainsSubstring(spm + ": piece \"\xE2\x96\x81"
                                     "das\" (id "));
  // The offset rule puts the last piece (95) at 96: outside a vocabulary of 96.
  CHECK_THAT(ThrownBy([&] {
               BuildVocabularyMap(model, spm, VocabularyRule::kFairseqOffset, "", 96, special);
             }),
             ContainsSubstring("\" is id 96 under fairseq's offset rule, outside the model's "
                               "vocabulary of 96"));
  // A config whose eos_token_id is not fairseq's </s>.
  CHECK(ThrownBy([&] {
          BuildVocabularyMap(model, spm, VocabularyRule::kFairseqOffset, "", 102, {0, 1, 5, 3});
        }) == spm +
                  ": piece \"</s>\" is id 2 under fairseq's offset rule, but the config's "
                  "eos_token_id is 5");
  CHECK(ThrownBy([&] {
          BuildVocabularyMap(model, spm, VocabularyRule::kVocabJson,
                             CheckpointFixture("m2m100/vocab.json"), 102, {0, 1, 2, 4});
        }) == spm + ": piece \"<unk>\" is id 3 under " + CheckpointFixture("m2m100/vocab.json") +
                  ", but the config's unk_token_id is 4");
}

TEST_CASE("vocab map: fairseq dict.txt") {
  testing::ScratchDir dir;
  testing::WriteBytes(dir / "dict.txt",
                      "\xE2\x96\x81"
                      "das 10\nhaus 7\n");
  CHECK(ReadFairseqDict(dir / "dict.txt") == std::vector<std::string>{"\xE2\x96\x81"
                                                                      "das",
                                                                      "haus"});
  testing::WriteBytes(dir / "dup.txt", "a 1\nb 1\na 1\n");
  CHECK(ThrownBy([&] { ReadFairseqDict(dir / "dup.txt"); }) ==
        dir / "dup.txt" + ":3: \"a\" is also line 1");
  testing::WriteBytes(dir / "empty.txt", "a 1\n\n");
  CHECK(ThrownBy([&] { ReadFairseqDict(dir / "empty.txt"); }) ==
        dir / "empty.txt" + ":2: empty line");
  // The fixture's pieces are not all in this dictionary: the first missing one named.
  const std::string spm = CheckpointFixture("nllb/sentencepiece.bpe.model");
  CHECK_THAT(ThrownBy([&] {
               BuildVocabularyMap(Bytes(spm), spm, VocabularyRule::kFairseqDict, dir / "dict.txt",
                                  102, {0, 1, 2, 3});
             }),
             ContainsSubstring("\" (id 3) is not in " + dir / "dict.txt"));
}

}  // namespace
}  // namespace tern::convert

namespace tern::convert {
namespace {

// The loader's check of Tokenizer.mapped (Model::Load): an id outside the vocabulary, two pieces
// with one id; a text path then never indexes outside its tables.
TEST_CASE("vocab map: the loader refuses a map with an id outside the vocabulary or twice") {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("nllb/model.safetensors");
  o.arch = "nllb";
  const TernContents good = BuildContents(o);
  struct Case {
    int32_t piece, id;
    const char* message;
  } cases[] = {
      {5, 102, "tokenizer.mapped.model_ids[5] = 102 is outside the vocabulary (102)"},
      {5, -2, "tokenizer.mapped.model_ids[5] = -2 is outside the vocabulary (102)"},
      {5, 4, "tokenizer.mapped.model_ids[5] = 4: another piece has that id"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    TernContents bad = good;
    bad.vocabulary_map[c.piece] = c.id;
    const std::vector<uint8_t> bytes = SerializeModel(bad);
    std::vector<uint8_t> storage(bytes.size() + 64);
    uint8_t* base = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
    std::memcpy(base, bytes.data(), bytes.size());
    const auto m = Model::Load(base, bytes.size());
    REQUIRE_FALSE(m.ok());
    CHECK(std::string(m.status().message()) == c.message);
  }
}

}  // namespace
}  // namespace tern::convert
