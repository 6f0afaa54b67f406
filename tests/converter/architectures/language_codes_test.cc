// mBART's language table (converter/architectures/language_codes.cc): which convention the
// tokenizer files beside the checkpoint say, and fairseq's fixed code lists when no
// tokenizer_config.json lists the codes. The mBART fixture's sentencepiece.bpe.model has 66
// pieces (tools/fixtures/make_mbart50_text_fixture.py), so vocab_size 120 leaves 52 codes
// (mBART-50) and 93 leaves 25 (cc25).
#include "converter/architectures/language_codes.h"

#include <catch2/catch_test_macros.hpp>

#include "converter/error.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert::arch {
namespace {

using testing::CheckpointFixture;
using testing::ReadBytes;
using testing::ScratchDir;
using testing::WriteBytes;

// A directory holding only the fixture's sentencepiece.bpe.model (and `tokenizer_config` when
// not empty).
void Prepare(const ScratchDir& dir, const std::string& tokenizer_config = "") {
  WriteBytes(dir / "sentencepiece.bpe.model",
             ReadBytes(CheckpointFixture("mbart/sentencepiece.bpe.model")));
  if (!tokenizer_config.empty()) WriteBytes(dir / "tokenizer_config.json", tokenizer_config);
}

TEST_CASE("mbart: without tokenizer_config.json the piece count picks mBART-50's list") {
  ScratchDir dir;
  Prepare(dir);
  std::vector<std::string> notes;
  const MbartLanguages got = ReadMbartLanguages(dir.path, 120, &notes);
  CHECK(got.refusal.empty());
  REQUIRE(got.codes.size() == 52);
  CHECK(got.codes[0] == std::make_pair(std::string("ar_AR"), 67));
  CHECK(got.codes[3] == std::make_pair(std::string("en_XX"), 70));
  CHECK(got.codes[51] == std::make_pair(std::string("sl_SI"), 118));
}

TEST_CASE("mbart: 25 codes left by the vocabulary is cc25, refused") {
  ScratchDir dir;
  Prepare(dir);
  std::vector<std::string> notes;
  const MbartLanguages got = ReadMbartLanguages(dir.path, 93, &notes);
  CHECK(got.codes.empty());
  CHECK(got.refusal == "vocab_size 93 = 66 pieces of " + dir.path +
                           "/sentencepiece.bpe.model + 2 + 25 codes: mBART cc25's convention "
                           "(source X </s> [src_lang_code], decoding from the target code), which "
                           "tern translate does not apply (it takes mBART-50's [src_lang_code] X "
                           "</s>); convert with --no-tokenizer and translate with --ids");
}

TEST_CASE("mbart: neither file tells the convention: no table") {
  ScratchDir dir;
  Prepare(dir);
  std::vector<std::string> notes;
  const MbartLanguages got = ReadMbartLanguages(dir.path, 100, &notes);
  CHECK(got.codes.empty());
  CHECK(got.refusal.empty());
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] == "no language table: neither " + dir.path + "/tokenizer_config.json nor " +
                        dir.path +
                        "/sentencepiece.bpe.model tells mBART-50's codes from mBART cc25's "
                        "(source and target languages are given as ids)");
}

TEST_CASE("mbart: tokenizer_class MBart50Tokenizer without codes takes fairseq's list") {
  ScratchDir dir;
  Prepare(dir, R"({"tokenizer_class": "MBart50TokenizerFast"})");
  std::vector<std::string> notes;
  // 100 ids: the class decides (the piece count would not), the codes end before <mask>.
  const MbartLanguages got = ReadMbartLanguages(dir.path, 100, &notes);
  REQUIRE(got.codes.size() == 52);
  CHECK(got.codes[0].second == 47);
  CHECK(got.codes[51].second == 98);
}

TEST_CASE("mbart: tokenizer_class MBartTokenizer is cc25, refused by name") {
  ScratchDir dir;
  Prepare(dir, R"({"tokenizer_class": "MBartTokenizer", "additional_special_tokens": ["en_XX"],
                   "added_tokens_decoder": {"70": {"content": "en_XX"}}})");
  std::vector<std::string> notes;
  const MbartLanguages got = ReadMbartLanguages(dir.path, 120, &notes);
  CHECK(got.codes.empty());
  CHECK(got.refusal == dir.path +
                           "/tokenizer_config.json: tokenizer_class MBartTokenizer is mBART "
                           "cc25's convention (source X </s> [src_lang_code], decoding from the "
                           "target code), which tern translate does not apply (it takes "
                           "mBART-50's [src_lang_code] X </s>); convert with --no-tokenizer and "
                           "translate with --ids");
}

TEST_CASE("mbart: a listed code without an id is refused by name") {
  ScratchDir dir;
  Prepare(dir, R"({"tokenizer_class": "MBart50Tokenizer", "additional_special_tokens": ["en_XX"],
                   "added_tokens_decoder": {"71": {"content": "ro_RO"}}})");
  std::vector<std::string> notes;
  try {
    ReadMbartLanguages(dir.path, 120, &notes);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == dir.path +
                                       "/tokenizer_config.json: language token \"en_XX\" has no "
                                       "id in added_tokens_decoder");
  }
}

}  // namespace
}  // namespace tern::convert::arch
