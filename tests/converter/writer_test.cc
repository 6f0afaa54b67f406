// The writer stamps the oldest format minor version that has everything a file uses (schema
// compatibility rules, schema/README.md): 1.2 for the paper's attention, 1.3 once kv_heads
// (grouped-query attention) is used, 1.6 for the scaled rotary frequencies; the highest "since"
// of config_fields.h among the fields a config sets. Files that use no newer field are byte for
// byte what the converter wrote before those fields existed (tests/fixtures/format).
#include "converter/writer.h"

#include <catch2/catch_test_macros.hpp>
#include <fstream>
#include <iterator>

#include "converter/convert.h"
#include "tern_generated.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

uint16_t MinorOf(const ModelConfig& config) {
  const testing::AlignedBytes bytes(SerializeModel(testing::RandomContents(config, 1)));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  return model.value().format_minor();
}

TEST_CASE("the format minor version follows the features a file uses", "[writer]") {
  ModelConfig c = testing::TinyConfig();  // 2 heads
  CHECK(MinorOf(c) == 2);
  c.kv_heads = c.heads;  // the paper's attention, spelled out: still 1.2
  CHECK(MinorOf(c) == 2);
  c.kv_heads = 1;  // multi-query attention
  CHECK(MinorOf(c) == 3);
  c.position = PositionKind::kRotary;
  c.rotary_scaling = ref::RotaryScaling::kLinear;
  c.rotary_scaling_factor = 2.0f;
  CHECK(MinorOf(c) == 6);
  c.kv_heads = 0;
  CHECK(MinorOf(c) == 6);
  c.rotary_scaling = ref::RotaryScaling::kNone;  // the factor alone, also a 1.6 field
  CHECK(MinorOf(c) == 6);
  c.rotary_scaling_factor = 1.0f;
  CHECK(MinorOf(c) == 2);
}

// tests/fixtures/format/*_int4.tern: the LLaMA, LLaMA GQA and GPT-2 fixtures converted with
// --dtype int4 --no-tokenizer by the converter of format 1.4 (main at 103c2c4, before the since
// column and the 1.6 fields). Converted today, with the golden file's metadata (converter
// version, digest, command line), they are the same bytes.
std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST_CASE("files that use no newer config field are byte for byte what older writers wrote",
          "[writer]") {
  const struct {
    const char* checkpoint;
    const char* arch;
    const char* golden;
    uint16_t minor;
  } cases[] = {{"llama/model.safetensors", "llama", "llama_int4.tern", 2},
               {"llama_gqa/model.safetensors", "llama", "llama_gqa_int4.tern", 3},
               {"gpt2/pytorch_model.bin", "gpt2", "gpt2_int4.tern", 2}};
  for (const auto& c : cases) {
    INFO(c.golden);
    const std::vector<uint8_t> golden =
        ReadFile(std::string(TERN_FIXTURES) + "/format/" + c.golden);
    const schema::Metadata* meta = schema::GetSizePrefixedModel(golden.data())->metadata();
    REQUIRE(meta != nullptr);
    ConvertOptions o;
    o.checkpoint = testing::CheckpointFixture(c.checkpoint);
    o.arch = c.arch;
    o.dtype = DType::kI4;
    o.group_size = 32;  // the default block those writers had (int4 is per row by default now)
    o.no_tokenizer = true;
    TernContents contents = BuildContents(o);
    contents.converter_version = meta->converter_version()->str();
    contents.source_digest = meta->source_digest()->str();
    contents.source_format = meta->source_format()->str();
    contents.creation_options = meta->creation_options()->str();
    CHECK(FormatMinor(contents) == c.minor);
    const bool same = SerializeModel(contents) == golden;  // (Catch2 cannot print 20 kB)
    CHECK(same);
  }
}

}  // namespace
}  // namespace tern::convert
