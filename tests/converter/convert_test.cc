// The conversion pipeline on checkpoints written by the test: each bad input gets an error
// that names the tensor or field, and a failed conversion leaves no output file.
#include "converter/convert.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/model_config_json.h"
#include "converter/readers/safetensors.h"
#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tern-convert-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

std::vector<HostTensor> Checkpoint(const ModelConfig& config) {
  std::vector<HostTensor> tensors;
  float v = 0.0f;
  for (const auto& e : EncoderDecoderLayout(config)) {
    HostTensor t;
    t.name = e.name;
    t.shape = e.shape;
    t.values.resize(static_cast<size_t>(t.elements()));
    for (auto& x : t.values) x = std::sin(v += 0.37f) * 0.2f;
    tensors.push_back(t);
  }
  return tensors;
}

std::string Write(const TempDir& dir, const std::vector<HostTensor>& tensors,
                  const ModelConfig& config) {
  const std::string path = dir.path + "/model.safetensors";
  WriteSafetensors(path, tensors, {{"config", ModelConfigToJson(config)}});
  return path;
}

ConvertOptions Options(const std::string& checkpoint) {
  ConvertOptions o;
  o.checkpoint = checkpoint;
  return o;
}

TEST_CASE("a checkpoint converts in every dtype and loads", "[convert]") {
  TempDir dir;
  const ModelConfig config = testing::TinyConfig();
  const std::string ckpt = Write(dir, Checkpoint(config), config);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8, DType::kI4}) {
    ConvertOptions o = Options(ckpt);
    o.dtype = dtype;
    o.group_size = 8;
    const std::string out = dir.path + "/m.tern";
    WriteModelFile(out, BuildContents(o), true);
    std::ifstream in(out, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    testing::AlignedBytes aligned(bytes);
    auto model = Model::Load(aligned.data(), aligned.size());
    REQUIRE(model.ok());
    TensorInfo info;
    REQUIRE(model->Find("encoder.layers.0.fc1.weight", &info));
    CHECK(info.dtype == dtype);
    REQUIRE(model->Find("encoder.layers.0.fc1.bias", &info));
    CHECK(info.dtype == DType::kF32);  // vectors stay f32
    REQUIRE(model->Find("encoder.embed_tokens.weight", &info));
    CHECK(info.dtype == (dtype == DType::kI4 ? DType::kI8 : dtype));  // int4 keeps int8 embeddings
  }
}

TEST_CASE("checkpoint problems name the tensor", "[convert]") {
  TempDir dir;
  const ModelConfig config = testing::TinyConfig();
  SECTION("missing tensor") {
    auto tensors = Checkpoint(config);
    const std::string name = "encoder.layers.0.self_attn.k_proj.weight";
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(),
                                 [&](const HostTensor& t) { return t.name == name; }),
                  tensors.end());
    REQUIRE_THROWS_WITH(BuildContents(Options(Write(dir, tensors, config))),
                        ContainsSubstring("\"" + name + "\" is missing"));
  }
  SECTION("shape mismatch") {
    auto tensors = Checkpoint(config);
    for (auto& t : tensors) {
      if (t.name == "decoder.layers.0.fc1.weight") t.shape = {16, 24};
    }
    REQUIRE_THROWS_WITH(
        BuildContents(Options(Write(dir, tensors, config))),
        ContainsSubstring("\"decoder.layers.0.fc1.weight\" has shape [16, 24], expected [24, 16]"));
  }
  SECTION("NaN and Inf weights") {
    auto tensors = Checkpoint(config);
    tensors[7].values[3] = std::numeric_limits<float>::quiet_NaN();
    REQUIRE_THROWS_WITH(
        BuildContents(Options(Write(dir, tensors, config))),
        ContainsSubstring("\"" + tensors[7].name + "\" has a non-finite value at index 3"));
    tensors[7].values[3] = 0.0f;
    tensors[2].values[0] = std::numeric_limits<float>::infinity();
    REQUIRE_THROWS_WITH(BuildContents(Options(Write(dir, tensors, config))),
                        ContainsSubstring("\"" + tensors[2].name + "\" has a non-finite value"));
  }
  SECTION("unexpected tensor") {
    auto tensors = Checkpoint(config);
    HostTensor extra;
    extra.name = "encoder.layers.7.fc1.weight";
    extra.shape = {1};
    extra.values = {1.0f};
    tensors.push_back(extra);
    REQUIRE_THROWS_WITH(BuildContents(Options(Write(dir, tensors, config))),
                        ContainsSubstring("unexpected tensor \"encoder.layers.7.fc1.weight\""));
  }
  SECTION("config that disagrees with the weights") {
    ModelConfig wrong = config;
    wrong.d_ff = 32;
    REQUIRE_THROWS_WITH(BuildContents(Options(Write(dir, Checkpoint(config), wrong))),
                        ContainsSubstring("expected [32, 16] from the config"));
  }
}

TEST_CASE("config.json problems name the key", "[convert]") {
  REQUIRE_THROWS_WITH(ParseModelConfig("{\"d_model\": 8}", "c.json"),
                      ContainsSubstring("lacks \"heads\""));
  REQUIRE_THROWS_WITH(
      ParseModelConfig(
          "{\"d_model\": 8, \"heads\": 2, \"d_ff\": 4, \"vocab_size\": 5, \"colour\": 1}",
          "c.json"),
      ContainsSubstring("unknown key \"colour\""));
  REQUIRE_THROWS_WITH(
      ParseModelConfig(
          "{\"d_model\": 8, \"heads\": 2, \"d_ff\": 4, \"vocab_size\": 5, \"norm\": \"middle\"}",
          "c.json"),
      ContainsSubstring("\"norm\" = \"middle\"; expected one of post, pre"));
  REQUIRE_THROWS_WITH(ParseModelConfig("{\"d_model\": \"8\"}", "c.json"),
                      ContainsSubstring("\"d_model\" must be"));
  REQUIRE_THROWS_WITH(ParseModelConfig("{not json", "c.json"), ContainsSubstring("not valid JSON"));
  const ModelConfig round =
      ParseModelConfig(ModelConfigToJson(testing::TinyConfig()), "round trip");
  CHECK(round.d_model == 16);
  CHECK(round.shared_embeddings);
  CHECK(round.embedding_scale == 4.0f);
}

TEST_CASE("a model that does not load is never written", "[convert]") {
  TempDir dir;
  ModelConfig config = testing::TinyConfig();
  TernContents contents = testing::RandomContents(config, 3);
  contents.config.heads = 3;  // does not divide d_model: the runtime refuses it
  const std::string out = dir.path + "/bad.tern";
  REQUIRE_THROWS_WITH(WriteModelFile(out, contents, false), ContainsSubstring("does not load"));
  std::ifstream probe(out);
  CHECK_FALSE(probe.good());
  // A well-formed file missing a tensor: Model::Load accepts it (it checks the format only),
  // the converter's explicit architecture check (what Prepare runs) refuses it by name.
  TernContents missing = testing::RandomContents(config, 3);
  missing.tensors.erase(std::remove_if(missing.tensors.begin(), missing.tensors.end(),
                                       [](const EncodedTensor& t) {
                                         return t.name == "decoder.layers.0.fc1.weight";
                                       }),
                        missing.tensors.end());
  REQUIRE_THROWS_WITH(
      WriteModelFile(out, missing, false),
      ContainsSubstring("does not load") && ContainsSubstring("decoder.layers.0.fc1.weight"));
  std::ifstream probe_missing(out);
  CHECK_FALSE(probe_missing.good());
  // And an existing file is kept unless overwrite is asked.
  TernContents good = testing::RandomContents(testing::TinyConfig(), 4);
  WriteModelFile(out, good, false);
  REQUIRE_THROWS_WITH(WriteModelFile(out, good, false), ContainsSubstring("exists"));
  WriteModelFile(out, good, true);
}

}  // namespace
}  // namespace tern::convert
