// Marian's tokenizer files (converter/tokenizer/marian_spm.h; Tokenizer.mapped +
// Tokenizer.target_mapped, format 1.9): the MarianMT fixture with
// tests/fixtures/checkpoints/marian/text/ beside it (make_marian_text_fixture.py: source.spm and
// target.spm over different alphabets, one shuffled vocab.json) converts with a map per side, the
// runtime encodes with the source side and decodes with the target side, and bad files and maps
// are refused by name.
#include "converter/tokenizer/marian_spm.h"

#include <catch2/catch_test_macros.hpp>
#include <cstring>
#include <functional>
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

using testing::CheckpointFixture;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::WriteBytes;

std::string ThrownBy(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A MarianMT directory: the fixture's weights and config.json with the text files beside them.
void Prepare(const ScratchDir& dir, bool vocab = true) {
  for (const char* f : {"config.json", "pytorch_model.bin"})
    WriteBytes(dir / f, ReadBytes(CheckpointFixture(std::string("marian/") + f)));
  for (const char* f : {"source.spm", "target.spm", "vocab.json"}) {
    if (!vocab && std::string(f) == "vocab.json") continue;
    WriteBytes(dir / f, ReadBytes(CheckpointFixture(std::string("marian/text/") + f)));
  }
}

TernContents Convert(const ScratchDir& dir) {
  ConvertOptions o;
  o.checkpoint = dir / "pytorch_model.bin";
  o.arch = "marian";
  return BuildContents(o);
}

// The bytes at a 64-byte aligned address of `storage`, loaded.
Result<Model> LoadAligned(std::vector<uint8_t>* storage, const std::vector<uint8_t>& bytes) {
  storage->resize(bytes.size() + 64);
  uint8_t* base = storage->data() + (64 - reinterpret_cast<uintptr_t>(storage->data()) % 64) % 64;
  std::memcpy(base, bytes.data(), bytes.size());
  return Model::Load(base, bytes.size());
}

struct Loaded {
  std::vector<uint8_t> storage;
  Result<Model> model;
  explicit Loaded(const std::vector<uint8_t>& bytes) : model(LoadAligned(&storage, bytes)) {}
};

TEST_CASE(
    "marian text: a map per side from vocab.json, encoded by source.spm, decoded by target.spm") {
  ScratchDir dir;
  Prepare(dir);
  const TernContents c = Convert(dir);
  // vocab.json's ids (make_marian_text_fixture.py): source "▁ab" is 17, target "de" is 6.
  REQUIRE(c.vocabulary_map.size() == 12);
  REQUIRE(c.target_vocabulary_map.size() == 12);
  CHECK(c.vocabulary_map[0] == 0);         // </s>
  CHECK(c.vocabulary_map[1] == 1);         // <unk>
  CHECK(c.vocabulary_map[3] == 17);        // ▁ab
  CHECK(c.target_vocabulary_map[2] == 6);  // de
  Loaded loaded(SerializeModel(c));
  REQUIRE(loaded.model.ok());
  const Model& m = loaded.model.value();
  CHECK(m.format_minor() == 9);
  TranslationTokenizer t;
  REQUIRE(t.Load(m).ok());
  std::vector<int32_t> ids;
  REQUIRE(t.Encode("ab cab.", m.config().eos_id, &ids).ok());
  CHECK(ids == std::vector<int32_t>{17, 2, 3, 15, 0});  // translate.tsv's row, </s> appended
  std::string text;
  const int32_t out[] = {6, 6, 4, 2};  // "de" "de" "ed" and "▁c", a source-only piece
  REQUIRE(t.Decode(out, 4, &text).ok());
  CHECK(text == "dedeed");
}

TEST_CASE("marian text: a piece missing from vocab.json, or vocab.json missing, is refused") {
  ScratchDir dir;
  Prepare(dir);
  std::string vocab = ReadBytes(dir / "vocab.json");
  const std::string entry =
      "\n \"\xE2\x96\x81"
      "fed\": 16,";
  REQUIRE(vocab.find(entry) != std::string::npos);
  vocab.erase(vocab.find(entry), entry.size());
  WriteBytes(dir / "vocab.json", vocab);
  CHECK(ThrownBy([&] { Convert(dir); }) == dir / "target.spm" +
                                               ": piece \"\xE2\x96\x81"
                                               "fed\" (id 6) is not in " +
                                               dir / "vocab.json");
  ScratchDir none;
  Prepare(none, false);
  CHECK(ThrownBy([&] { Convert(none); }) ==
        none.path + ": --arch marian takes source.spm, target.spm and vocab.json together, and " +
            none / "vocab.json" + " does not exist (--no-tokenizer converts without a tokenizer)");
}

// The loader's check of Tokenizer.target_mapped (Model::Load), as of Tokenizer.mapped.
TEST_CASE(
    "marian text: the loader refuses a target map with an id outside the vocabulary or twice") {
  ScratchDir dir;
  Prepare(dir);
  const TernContents good = Convert(dir);
  struct Case {
    int32_t piece, id;
    const char* message;
  } cases[] = {
      {5, 24, "tokenizer.target_mapped.model_ids[5] = 24 is outside the vocabulary (24)"},
      {5, 6, "tokenizer.target_mapped.model_ids[5] = 6: another piece has that id"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.message);
    TernContents bad = good;
    bad.target_vocabulary_map[c.piece] = c.id;
    Loaded loaded(SerializeModel(bad));
    REQUIRE_FALSE(loaded.model.ok());
    CHECK(std::string(loaded.model.status().message()) == c.message);
  }
}

}  // namespace
}  // namespace tern::convert
