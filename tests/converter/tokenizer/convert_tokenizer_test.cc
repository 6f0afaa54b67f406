// tern convert's tokenizer.json: taken from beside the checkpoint (and said so), or named, or
// refused; stored as format 1.4 and loaded back as the text path loads it.
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "converter/architectures/decoder_only_layout.h"
#include "converter/convert.h"
#include "converter/error.h"
#include "converter/model_config_json.h"
#include "converter/readers/safetensors.h"
#include "runtime/tokenizer/bpe_tokenizer.h"
#include "tests/converter/checkpoint_files.h"
#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;

const std::string kFixture = std::string(TERN_FIXTURES) + "/tokenizer/bpe_gpt2/tokenizer.json";

// A tern checkpoint of a small language model with `vocab` tokens in dir/model.safetensors
// (translation: a TinyConfig encoder-decoder).
std::string WriteCheckpoint(const testing::ScratchDir& dir, int32_t vocab,
                            bool translation = false) {
  ModelConfig config = testing::TinyConfig();
  if (!translation) {
    config.architecture = Architecture::kDecoderOnly;
    config.encoder_layers = 0;
    config.norm_placement = NormPlacement::kPre;
    config.position = PositionKind::kLearned;
    config.src_vocab_size = 0;
    config.shared_embeddings = false;
    config.eos_id = config.bos_id = config.pad_id = config.unk_id = config.decoder_start_id = 1;
  } else {
    config.src_vocab_size = vocab;
  }
  config.tgt_vocab_size = vocab;
  std::vector<HostTensor> tensors;
  float v = 0.0f;
  for (const auto& e : ModelLayout(config)) {
    HostTensor t;
    t.name = e.name;
    t.shape = e.shape;
    t.values.resize(static_cast<size_t>(t.elements()));
    for (auto& x : t.values) x = std::sin(v += 0.37f) * 0.2f;
    tensors.push_back(t);
  }
  const std::string path = dir / "model.safetensors";
  WriteSafetensors(path, tensors, {{"config", ModelConfigToJson(config)}});
  return path;
}

struct Converted {
  TernContents contents;
  std::vector<std::string> notes;
};

Converted Build(ConvertOptions options) {
  Converted c;
  options.note = [&c](const std::string& n) { c.notes.push_back(n); };
  c.contents = BuildContents(options);
  return c;
}

bool HasNote(const Converted& c, const std::string& part) {
  for (const auto& n : c.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("tokenizer.json beside the checkpoint is taken, stored and loads",
          "[tokenizer][convert]") {
  testing::ScratchDir dir;
  ConvertOptions options;
  options.checkpoint = WriteCheckpoint(dir, 1600);
  testing::WriteBytes(dir / "tokenizer.json", testing::ReadBytes(kFixture));
  const Converted c = Build(options);
  REQUIRE(c.contents.bpe_tokenizer.has_value());
  CHECK(HasNote(c, "tokenizer: took " + dir.path + "/tokenizer.json: byte-level BPE, 1500 tokens"));
  CHECK(std::find(c.contents.inputs.begin(), c.contents.inputs.end(), dir / "tokenizer.json") !=
        c.contents.inputs.end());

  WriteModelFile(dir / "out.tern", c.contents, false);
  const testing::AlignedBytes bytes([&] {
    const std::string s = testing::ReadBytes(dir / "out.tern");
    return std::vector<uint8_t>(s.begin(), s.end());
  }());
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  CHECK(model.value().format_minor() == 4);
  auto tokenizer = BpeTokenizer::FromModel(model.value());
  REQUIRE(tokenizer.ok());
  CHECK(tokenizer.value().vocab_size() == 1500);
  std::vector<int32_t> ids;
  REQUIRE(tokenizer.value().Encode("Hello world<|endoftext|>", {}, &ids).ok());
  CHECK(ids.back() == 1499);

  // --no-tokenizer: none.
  options.no_tokenizer = true;
  const Converted without = Build(options);
  CHECK_FALSE(without.contents.bpe_tokenizer.has_value());
  CHECK_FALSE(HasNote(without, "tokenizer"));
}

TEST_CASE("a named tokenizer.json; the ones that do not fit are refused", "[tokenizer][convert]") {
  testing::ScratchDir dir;
  ConvertOptions options;
  options.checkpoint = WriteCheckpoint(dir, 1600);
  options.tokenizer = kFixture;
  const Converted named = Build(options);
  REQUIRE(named.contents.bpe_tokenizer.has_value());
  CHECK(HasNote(named, "tokenizer: " + kFixture + ": byte-level BPE"));

  options.checkpoint = WriteCheckpoint(dir, 1000);
  CHECK_THROWS_WITH(Build(options),
                    ContainsSubstring("1500 tokens, more than the model's tgt_vocab_size = 1000"));
  options.checkpoint = WriteCheckpoint(dir, 1600);
  options.target_tokenizer = std::string(TERN_FIXTURES) + "/tokenizer/tgt41.model";
  CHECK_THROWS_WITH(Build(options), ContainsSubstring("serves both sides"));

  // Found beside the checkpoint but not convertible: the error says how to do without it.
  ConvertOptions beside;
  beside.checkpoint = options.checkpoint;
  testing::WriteBytes(dir / "tokenizer.json", R"({"model": {"type": "WordPiece"}})");
  CHECK_THROWS_WITH(Build(beside), ContainsSubstring("model.type: \"WordPiece\" is not supported"));
  CHECK_THROWS_WITH(Build(beside), ContainsSubstring("--no-tokenizer converts without it"));
  beside.no_tokenizer = true;
  CHECK_NOTHROW(Build(beside));
}

TEST_CASE("beside a translation model tokenizer.json is not taken, unless named",
          "[tokenizer][convert]") {
  testing::ScratchDir dir;
  ConvertOptions options;
  options.checkpoint = WriteCheckpoint(dir, 1600, /*translation=*/true);
  testing::WriteBytes(dir / "tokenizer.json", testing::ReadBytes(kFixture));
  const Converted c = Build(options);
  CHECK_FALSE(c.contents.bpe_tokenizer.has_value());
  CHECK(HasNote(c, dir.path + "/tokenizer.json not taken: a translation model's text path uses "
                              "SentencePiece"));
  options.tokenizer = dir / "tokenizer.json";
  const Converted named = Build(options);
  CHECK(named.contents.bpe_tokenizer.has_value());
  CHECK(named.contents.bpe_tokenizer->vocab_size() == 1500);
}

}  // namespace
}  // namespace tern::convert
