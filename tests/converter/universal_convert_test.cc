// Converting a Universal Transformer checkpoint in tern's own layout: the block once as layer 0,
// the ACT halting units kept f32 in every dtype, and the config's shape enforced with errors
// that name the field or tensor.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdlib>
#include <fstream>

#include "converter/architectures/encoder_decoder_layout.h"
#include "converter/convert.h"
#include "converter/model_config_json.h"
#include "converter/readers/safetensors.h"
#include "tests/support/tiny_model.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/tern-universal-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
};

ModelConfig Universal(float act) {
  ModelConfig c = testing::TinyConfig();
  c.architecture = Architecture::kUniversal;
  c.encoder_layers = c.decoder_layers = 1;
  c.universal_steps = 3;
  c.act_threshold = act;
  return c;
}

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

ConvertOptions Write(const TempDir& dir, const std::vector<HostTensor>& tensors,
                     const ModelConfig& config) {
  ConvertOptions o;
  o.checkpoint = dir.path + "/model.safetensors";
  WriteSafetensors(o.checkpoint, tensors, {{"config", ModelConfigToJson(config)}});
  return o;
}

TEST_CASE("a universal transformer with ACT converts in every dtype, halting units in f32",
          "[convert][universal]") {
  TempDir dir;
  const ModelConfig config = Universal(0.9f);
  ConvertOptions o = Write(dir, Checkpoint(config), config);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8, DType::kI4}) {
    o.dtype = dtype;
    o.group_size = 8;
    testing::AlignedBytes bytes(SerializeModel(BuildContents(o)));
    auto model = Model::Load(bytes.data(), bytes.size());
    INFO(model.status().message());
    REQUIRE(model.ok());
    CHECK(model->config().architecture == Architecture::kUniversal);
    CHECK(model->config().universal_steps == 3);
    CHECK(model->config().act_threshold == 0.9f);
    for (const char* name : {"encoder.halting.weight", "encoder.halting.bias",
                             "decoder.halting.weight", "decoder.halting.bias"}) {
      TensorInfo info;
      REQUIRE(model->Find(name, &info));
      CHECK(info.dtype == DType::kF32);
    }
    TensorInfo info;
    CHECK_FALSE(model->Find("encoder.layers.1.fc1.weight", &info));
  }
}

TEST_CASE("universal transformer checkpoint problems name the field or tensor",
          "[convert][universal]") {
  TempDir dir;
  SECTION("halting tensors without ACT") {
    const std::vector<HostTensor> with_act = Checkpoint(Universal(0.9f));
    REQUIRE_THROWS_WITH(BuildContents(Write(dir, with_act, Universal(0.0f))),
                        ContainsSubstring("unexpected tensor \"decoder.halting.bias\""));
  }
  SECTION("a missing halting tensor") {
    auto tensors = Checkpoint(Universal(0.9f));
    tensors.erase(
        std::remove_if(tensors.begin(), tensors.end(),
                       [](const HostTensor& t) { return t.name == "encoder.halting.weight"; }),
        tensors.end());
    REQUIRE_THROWS_WITH(BuildContents(Write(dir, tensors, Universal(0.9f))),
                        ContainsSubstring("\"encoder.halting.weight\" is missing"));
  }
  SECTION("more than one layer per stack") {
    ModelConfig config = Universal(0.0f);
    config.encoder_layers = 2;
    REQUIRE_THROWS_WITH(BuildContents(Write(dir, Checkpoint(config), config)),
                        ContainsSubstring("encoder_layers = 2"));
  }
  SECTION("no steps") {
    ModelConfig config = Universal(0.0f);
    config.universal_steps = 0;
    REQUIRE_THROWS_WITH(BuildContents(Write(dir, Checkpoint(config), config)),
                        ContainsSubstring("universal_steps = 0"));
  }
}

}  // namespace
}  // namespace tern::convert
