// Mixed precision (--keep DTYPE:GLOB) and the size-budgeted automatic mode (--auto-budget).
#include "converter/precision.h"

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <random>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/convert.h"
#include "converter/model_config_json.h"
#include "converter/readers/safetensors.h"
#include "tests/converter/checkpoint_files.h"
#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;

// The tiny model as a safetensors checkpoint. `sensitive` gets values int4 represents badly:
// in each block of 8, one +-1 and seven +-1/14 (half an int4 step: each rounds off by that half
// step), a relative squared error of about 3.4% against about 0.5-1% for Gaussian values.
std::string WriteTiny(const testing::ScratchDir& dir, const std::string& sensitive = "") {
  const ModelConfig config = testing::TinyConfig();
  std::vector<HostTensor> tensors;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (const auto& e : EncoderDecoderLayout(config)) {
    HostTensor t;
    t.name = e.name;
    t.shape = e.shape;
    t.values.resize(static_cast<size_t>(t.elements()));
    for (auto& v : t.values) v = normal(rng);
    if (e.name == sensitive) {
      for (size_t i = 0; i < t.values.size(); ++i) {
        const float sign = normal(rng) < 0 ? -1.0f : 1.0f;
        t.values[i] = sign * (i % 8 == 0 ? 1.0f : 0.5f / 7.0f);
      }
    }
    tensors.push_back(t);
  }
  const std::string path = dir / "tiny.safetensors";
  WriteSafetensors(path, tensors, {{"config", ModelConfigToJson(config)}});
  return path;
}

std::map<std::string, DType> DTypes(const TernContents& c) {
  std::map<std::string, DType> out;
  for (const auto& t : c.tensors) out[t.name] = t.dtype;
  return out;
}

TEST_CASE("glob patterns and --keep rules", "[precision]") {
  CHECK(GlobMatch("decoder.layers.*.fc2.weight", "decoder.layers.1.fc2.weight"));
  CHECK(GlobMatch("*", "anything"));
  CHECK(GlobMatch("*.fc?.weight", "encoder.layers.0.fc1.weight"));
  CHECK_FALSE(GlobMatch("decoder.layers.*.fc2.weight", "decoder.layers.1.fc2.bias"));
  CHECK_FALSE(GlobMatch("encoder.*", "decoder.layers.0.fc1.weight"));
  CHECK(GlobMatch("encoder.layers.*.self_attn.*_proj.weight",
                  "encoder.layers.3.self_attn.out_proj.weight"));
  const KeepRule r = ParseKeepRule("fp16:decoder.layers.*.fc2.weight");
  CHECK(r.dtype == DType::kF16);
  CHECK(r.pattern == "decoder.layers.*.fc2.weight");
  REQUIRE_THROWS_WITH(ParseKeepRule("decoder.layers.0"),
                      ContainsSubstring("expected DTYPE:PATTERN"));
  REQUIRE_THROWS_WITH(ParseKeepRule("fp12:x"), ContainsSubstring("unknown dtype \"fp12\""));
  CHECK(ParseBudget("1000") == 1000.0);
  CHECK(ParseBudget("2K") == 2048.0);
  CHECK(ParseBudget("1.5M") == 1.5 * 1048576.0);
  CHECK(ParseBudget("40%") == -40.0);
  REQUIRE_THROWS_WITH(ParseBudget("lots"), ContainsSubstring("expected bytes"));
  REQUIRE_THROWS_WITH(ParseBudget("5T"), ContainsSubstring("unknown unit \"T\""));
  REQUIRE_THROWS_WITH(ParseBudget("150%"), ContainsSubstring("above 100"));
}

TEST_CASE("mixed precision: --keep stores the matching tensors in their own dtype", "[precision]") {
  testing::ScratchDir dir;
  ConvertOptions o;
  o.checkpoint = WriteTiny(dir);
  o.dtype = DType::kI8;
  o.keep = {"fp16:decoder.layers.*.fc2.weight", "fp32:encoder.embed_tokens.weight",
            "int4:encoder.layers.1.*"};
  o.group_size = 8;
  const auto d = DTypes(BuildContents(o));
  CHECK(d.at("decoder.layers.0.fc2.weight") == DType::kF16);
  CHECK(d.at("decoder.layers.1.fc2.weight") == DType::kF16);
  CHECK(d.at("decoder.layers.1.fc1.weight") == DType::kI8);
  CHECK(d.at("encoder.embed_tokens.weight") == DType::kF32);
  CHECK(d.at("encoder.layers.1.fc1.weight") == DType::kI4);
  CHECK(d.at("encoder.layers.1.fc1.bias") == DType::kF32);  // vectors never change
  // And the model loads and runs.
  testing::AlignedBytes bytes(SerializeModel(BuildContents(o)));
  REQUIRE(Model::Load(bytes.data(), bytes.size()).ok());
  SECTION("a rule matching nothing is an error") {
    o.keep = {"fp16:decoder.layer.*.fc2.weight"};
    REQUIRE_THROWS_WITH(BuildContents(o),
                        ContainsSubstring("--keep f16:decoder.layer.*.fc2.weight matches no weight "
                                          "matrix or embedding of this model"));
  }
  SECTION("the tied output projection is named when asked for") {
    o.keep = {"fp32:output_projection.weight"};
    REQUIRE_THROWS_WITH(
        BuildContents(o),
        ContainsSubstring(
            "(output_projection.weight is tied to encoder.embed_tokens.weight here)"));
  }
}

TEST_CASE("mixed precision: --auto-budget spends bytes where quantization hurts most",
          "[precision]") {
  testing::ScratchDir dir;
  const std::string sensitive = "decoder.layers.1.fc2.weight";
  ConvertOptions o;
  o.checkpoint = WriteTiny(dir, sensitive);
  o.dtype = DType::kI4;
  o.group_size = 8;
  const TernContents floor = BuildContents(o);
  uint64_t floor_bytes = 0;
  for (const auto& t : floor.tensors) floor_bytes += t.data.size() + 4 * t.scales.size();
  // Room for one int4 -> int8 step of a [16, 24] matrix (+192 bytes data, -96 bytes of scales... ).
  const uint64_t step = StoredBytes({16, 24}, DType::kI8, 8) - StoredBytes({16, 24}, DType::kI4, 8);
  o.auto_budget = std::to_string(floor_bytes + step);
  std::vector<std::string> notes;
  o.note = [&](const std::string& n) { notes.push_back(n); };
  const TernContents mixed = BuildContents(o);
  const auto d = DTypes(mixed);
  CHECK(d.at(sensitive) == DType::kI8);
  size_t upgraded = 0;
  uint64_t bytes = 0;
  for (const auto& t : mixed.tensors) {
    bytes += t.data.size() + 4 * t.scales.size();
    if (t.name != sensitive && t.dtype != floor.tensors[&t - mixed.tensors.data()].dtype)
      ++upgraded;
  }
  CHECK(upgraded == 0);
  CHECK(bytes <= floor_bytes + step);
  CHECK_FALSE(notes.empty());
  SECTION("a generous budget raises everything") {
    o.auto_budget = "100%";
    for (const auto& kv : DTypes(BuildContents(o))) CHECK(kv.second == DType::kF32);
  }
  SECTION("a budget below the floor is an error") {
    o.auto_budget = std::to_string(floor_bytes - 1);
    REQUIRE_THROWS_WITH(BuildContents(o),
                        ContainsSubstring("is below the") && ContainsSubstring("at --dtype i4"));
  }
  SECTION("kept tensors stay as asked") {
    o.keep = {"fp16:" + sensitive};
    o.auto_budget = std::to_string(floor_bytes + StoredBytes({16, 24}, DType::kF16, 8));
    CHECK(DTypes(BuildContents(o)).at(sensitive) == DType::kF16);
  }
}

}  // namespace
}  // namespace tern::convert
