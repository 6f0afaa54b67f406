// The loader: every kind of bad file returns an error that names the problem, and never
// crashes (a few thousand random corruptions run under the sanitizer build too).
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "converter/writer.h"
#include "tests/support/prepare_status.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

using Catch::Matchers::ContainsSubstring;

Status LoadStatus(const std::vector<uint8_t>& bytes) {
  testing::AlignedBytes aligned(bytes);
  auto model = Model::Load(aligned.data(), aligned.size());
  return model.ok() ? Status::Ok() : model.status();
}

std::vector<uint8_t> Serialize(const convert::TernContents& c) {
  return convert::SerializeModel(c);
}

using testing::PrepareStatus;

TEST_CASE("a well-formed model loads and exposes its config and tensors", "[loader]") {
  const ModelConfig config = testing::TinyConfig();
  testing::AlignedBytes bytes = testing::RandomModelBytes(config, 1);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  CHECK(model->config().d_model == 16);
  CHECK(model->config().heads == 2);
  CHECK(model->format_major() == 1);
  TensorInfo info;
  REQUIRE(model->Find("decoder.layers.1.fc2.weight", &info));
  CHECK(info.rank == 2);
  CHECK(info.dims[0] == 16);
  CHECK(info.dims[1] == 24);
  CHECK(reinterpret_cast<uintptr_t>(info.data) % 64 == 0);
  CHECK_FALSE(model->Find("decoder.layers.2.fc2.weight", nullptr));
}

TEST_CASE("truncated files are rejected at every length", "[loader]") {
  const std::vector<uint8_t> good = Serialize(testing::RandomContents(testing::TinyConfig(), 2));
  for (size_t keep :
       {size_t{0}, size_t{3}, size_t{11}, size_t{64}, good.size() / 2, good.size() - 1}) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(keep));
    const Status s = LoadStatus(cut);
    INFO("kept " << keep << " bytes: " << s.message());
    CHECK(s.code() == StatusCode::kInvalidModel);
  }
  // Cutting only into the weight segment names the tensor whose data is missing.
  std::vector<uint8_t> cut(good.begin(), good.end() - 100);
  const Status s = LoadStatus(cut);
  CHECK_THAT(s.message(), ContainsSubstring("truncated model: tensor \""));
}

TEST_CASE("a foreign file is reported as not a tern model", "[loader]") {
  std::vector<uint8_t> bytes = Serialize(testing::RandomContents(testing::TinyConfig(), 3));
  bytes[8] = 'X';  // [u32 size prefix][u32 root offset]["TERN"]
  const Status s = LoadStatus(bytes);
  CHECK(s.code() == StatusCode::kInvalidModel);
  CHECK_THAT(s.message(), ContainsSubstring("file identifier"));
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w',
                                     'o', 'r', 'l', 'd', '!', '!'};
  CHECK(LoadStatus(text).code() == StatusCode::kInvalidModel);
}

TEST_CASE("random byte flips in the description never crash the loader", "[loader]") {
  const std::vector<uint8_t> good = Serialize(testing::RandomContents(testing::TinyConfig(), 4));
  const uint32_t description =
      good[0] | (good[1] << 8) | (good[2] << 16) | (uint32_t{good[3]} << 24);
  std::mt19937 rng(5);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i)
      bad[rng() % (description + 4)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const Status s = LoadStatus(bad);
    if (!s.ok()) {
      ++rejected;
      CHECK(std::string(s.message()).size() > 0);
    }
  }
  CHECK(rejected > 100);  // Most flips hit something the checks catch.
}

TEST_CASE("a missing tensor is named", "[loader]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 6);
  c.tensors.erase(std::remove_if(c.tensors.begin(), c.tensors.end(),
                                 [](const convert::EncodedTensor& t) {
                                   return t.name == "decoder.layers.1.encoder_attn.k_proj.weight";
                                 }),
                  c.tensors.end());
  const Status s = PrepareStatus(Serialize(c));
  CHECK(s.code() == StatusCode::kMissingTensor);
  CHECK_THAT(s.message(), ContainsSubstring("decoder.layers.1.encoder_attn.k_proj.weight"));
}

TEST_CASE("Load checks the file format only; a missing tensor is refused by the session",
          "[loader]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 6);
  c.tensors.erase(std::remove_if(c.tensors.begin(), c.tensors.end(),
                                 [](const convert::EncodedTensor& t) {
                                   return t.name == "encoder.layers.0.fc2.weight";
                                 }),
                  c.tensors.end());
  testing::AlignedBytes bytes(Serialize(c));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());  // the loader depends on no architecture (runtime/models/)
  const Status check = ValidateArchitecture(model.value());
  CHECK(check.code() == StatusCode::kMissingTensor);
  CHECK_THAT(check.message(), ContainsSubstring("encoder.layers.0.fc2.weight"));
  Limits limits;
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  REQUIRE_FALSE(need.ok());
  CHECK(std::string(need.status().message()) == check.message());
  std::vector<uint8_t> arena(1 << 20);
  Session session;
  const Status prepared = session.Prepare(model.value(), limits, arena.data(), arena.size());
  CHECK(prepared.code() == StatusCode::kMissingTensor);
  CHECK(std::string(prepared.message()) == check.message());
}

TEST_CASE("a tensor whose shape disagrees with the config is named with both shapes", "[loader]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 7);
  for (auto& t : c.tensors) {
    if (t.name == "encoder.layers.0.fc1.weight") {
      t.shape = {12, 32};  // same bytes, wrong shape
    }
  }
  const Status s = PrepareStatus(Serialize(c));
  CHECK(s.code() == StatusCode::kShapeMismatch);
  CHECK_THAT(s.message(), ContainsSubstring("encoder.layers.0.fc1.weight"));
  CHECK_THAT(s.message(), ContainsSubstring("[12,32]"));
  CHECK_THAT(s.message(), ContainsSubstring("[24,16]"));
}

ModelConfig ShawConfig() {
  ModelConfig c = testing::TinyConfig();
  c.position = PositionKind::kRelative;
  c.relative_attention = RelativeAttention::kShaw;
  c.relative_max_distance = 3;
  return c;
}

ModelConfig T5Config() {
  ModelConfig c = testing::TinyConfig();
  c.position = PositionKind::kRelative;
  c.relative_attention = RelativeAttention::kT5Bias;
  c.relative_buckets = 8;
  c.relative_max_distance = 6;
  return c;
}

ModelConfig LlamaLikeConfig() {
  ModelConfig c = testing::TinyConfig();
  c.position = PositionKind::kRotary;
  c.rotary_dim = 4;
  c.norm_placement = NormPlacement::kPre;
  c.norm_kind = ref::NormKind::kRMSNorm;
  c.activation = ref::Activation::kSwiGLU;
  return c;
}

ModelConfig LearnedConfig() {
  ModelConfig c = testing::TinyConfig();
  c.position = PositionKind::kLearned;
  return c;
}

TEST_CASE("position variants and SwiGLU load, and each new tensor missing is named",
          "[loader][positions]") {
  struct Case {
    ModelConfig config;
    const char* tensor;
  };
  const Case cases[] = {
      {ShawConfig(), "encoder.layers.0.self_attn.relative_key.weight"},
      {ShawConfig(), "decoder.layers.1.self_attn.relative_value.weight"},
      {T5Config(), "encoder.relative_attention_bias.weight"},
      {T5Config(), "decoder.relative_attention_bias.weight"},
      {LlamaLikeConfig(), "decoder.layers.1.fc3.weight"},
      {LearnedConfig(), "encoder.embed_positions.weight"},
      {LearnedConfig(), "decoder.embed_positions.weight"},
  };
  for (const Case& k : cases) {
    INFO(k.tensor);
    convert::TernContents c = testing::RandomContents(k.config, 13);
    CHECK(PrepareStatus(Serialize(c)).ok());
    const auto before = c.tensors.size();
    c.tensors.erase(
        std::remove_if(c.tensors.begin(), c.tensors.end(),
                       [&](const convert::EncodedTensor& t) { return t.name == k.tensor; }),
        c.tensors.end());
    REQUIRE(c.tensors.size() + 1 == before);
    const Status s = PrepareStatus(Serialize(c));
    CHECK(s.code() == StatusCode::kMissingTensor);
    CHECK_THAT(s.message(), ContainsSubstring(k.tensor));
  }
  // Cross-attention has no relative tables: the Shaw model has none to miss there.
  convert::TernContents shaw = testing::RandomContents(ShawConfig(), 14);
  for (const auto& t : shaw.tensors)
    CHECK(t.name.find("encoder_attn.relative") == std::string::npos);
}

TEST_CASE("misshaped position tensors are named with both shapes", "[loader][positions]") {
  struct Case {
    ModelConfig config;
    const char* tensor;
    std::vector<int64_t> shape;  // same element count, wrong shape
    const char* got;
    const char* want;
  };
  const Case cases[] = {
      {ShawConfig(), "encoder.layers.1.self_attn.relative_key.weight", {8, 7}, "[8,7]", "[7,8]"},
      {T5Config(), "decoder.relative_attention_bias.weight", {2, 8}, "[2,8]", "[8,2]"},
      {LearnedConfig(), "encoder.embed_positions.weight", {16, 64}, "[16,64]", "[64,16]"},
      {LlamaLikeConfig(), "encoder.layers.0.fc3.weight", {16, 24}, "[16,24]", "[24,16]"},
  };
  for (const Case& k : cases) {
    INFO(k.tensor);
    convert::TernContents c = testing::RandomContents(k.config, 15);
    for (auto& t : c.tensors) {
      if (t.name == k.tensor) t.shape = k.shape;
    }
    const Status s = PrepareStatus(Serialize(c));
    CHECK(s.code() == StatusCode::kShapeMismatch);
    CHECK_THAT(s.message(), ContainsSubstring(k.tensor));
    CHECK_THAT(s.message(), ContainsSubstring(k.got));
    CHECK_THAT(s.message(), ContainsSubstring(k.want));
  }
}

TEST_CASE("bad position settings are refused", "[loader][positions]") {
  struct Case {
    const char* what;
    ModelConfig config;
    const char* message;
  };
  ModelConfig odd = LlamaLikeConfig();
  odd.rotary_dim = 3;
  ModelConfig wide = LlamaLikeConfig();
  wide.rotary_dim = 10;  // d_head is 8
  ModelConfig few = T5Config();
  few.relative_buckets = 2;
  ModelConfig near = T5Config();
  near.relative_max_distance = 4;  // not beyond buckets / 2
  const Case cases[] = {
      {"odd rotary_dim", odd, "rotary_dim"},
      {"rotary_dim beyond d_head", wide, "rotary_dim"},
      {"two T5 buckets", few, "relative_buckets"},
      {"T5 max distance within the exact buckets", near, "relative_max_distance"},
  };
  for (const Case& k : cases) {
    ModelConfig valid = k.config;
    valid.rotary_dim = 4;
    valid.relative_buckets = 8;
    valid.relative_max_distance = 6;
    convert::TernContents c = testing::RandomContents(valid, 16);  // tensors of a valid config
    c.config = k.config;
    const Status s = PrepareStatus(Serialize(c));
    INFO(k.what << ": " << s.message());
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring(k.message));
  }
}

TEST_CASE("kv_heads must divide heads", "[loader][gqa]") {
  // Grouped-query attention: each K/V head serves heads / kv_heads query heads, so kv_heads that
  // does not divide heads (or exceeds it) is refused at load, by name.
  ModelConfig valid = testing::TinyConfig();  // 2 heads
  for (int32_t kv_heads : {3, -1}) {
    convert::TernContents c = testing::RandomContents(valid, 17);
    c.config.kv_heads = kv_heads;
    const Status s = LoadStatus(Serialize(c));
    INFO(kv_heads);
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK(std::string(s.message()) ==
          "config.kv_heads = " + std::to_string(kv_heads) +
              " must divide config.heads = 2 (grouped-query attention: each K/V head serves "
              "heads / kv_heads query heads)");
  }
}

TEST_CASE("forced_bos_id is -1 or a target token id", "[loader]") {
  ModelConfig valid = testing::TinyConfig();
  convert::TernContents c = testing::RandomContents(valid, 17);
  c.config.forced_bos_id = c.config.tgt_vocab_size - 1;
  CHECK(LoadStatus(Serialize(c)).ok());
  for (int32_t id : {c.config.tgt_vocab_size, -2}) {
    c.config.forced_bos_id = id;
    const Status s = LoadStatus(Serialize(c));
    INFO(id);
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK(std::string(s.message()) ==
          "config.forced_bos_id = " + std::to_string(id) +
              " is neither -1 (none) nor a token id below tgt_vocab_size " +
              std::to_string(c.config.tgt_vocab_size));
  }
}

TEST_CASE("data sizes that do not match dtype and shape are rejected", "[loader]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 8);
  c.tensors[3].data.resize(c.tensors[3].data.size() - 4);
  const Status s = LoadStatus(Serialize(c));
  CHECK(s.code() == StatusCode::kInvalidModel);
  CHECK_THAT(s.message(), ContainsSubstring(c.tensors[3].name));
}

TEST_CASE("a bias with the wrong dtype is rejected", "[loader]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 9);
  for (auto& t : c.tensors) {
    if (t.name == "encoder.layers.0.fc1.bias") {
      convert::HostTensor h;
      h.name = t.name;
      h.shape = t.shape;
      h.values.assign(24, 0.5f);
      t = convert::Encode(h, DType::kF16);
    }
  }
  const Status s = PrepareStatus(Serialize(c));
  CHECK(s.code() == StatusCode::kDTypeMismatch);
  CHECK_THAT(s.message(), ContainsSubstring("encoder.layers.0.fc1.bias"));
}

TEST_CASE("absurd configs are rejected before anything is sized from them", "[loader]") {
  struct Case {
    const char* what;
    void (*mutate)(ModelConfig*);
    const char* message;
  };
  const Case cases[] = {
      {"heads not dividing d_model", [](ModelConfig* c) { c->heads = 3; }, "does not divide"},
      {"negative d_model", [](ModelConfig* c) { c->d_model = -16; }, "config.d_model"},
      {"huge vocab", [](ModelConfig* c) { c->src_vocab_size = 1 << 30; }, "config.src_vocab_size"},
      {"2^31-1 layers", [](ModelConfig* c) { c->encoder_layers = 2147483647; },
       "config.encoder_layers"},
      {"eos outside vocab", [](ModelConfig* c) { c->eos_id = 20; }, "config.eos_id"},
      {"zero max_positions", [](ModelConfig* c) { c->max_positions = 0; }, "config.max_positions"},
  };
  for (const Case& k : cases) {
    convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 10);
    k.mutate(&c.config);
    const Status s = LoadStatus(Serialize(c));
    INFO(k.what << ": " << s.message());
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring(k.message));
  }
}

TEST_CASE("unsupported architectures and versions say so", "[loader]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 11);
  // An encoder-decoder config marked decoder-only: its encoder fields are named as wrong.
  c.config.architecture = Architecture::kDecoderOnly;
  Status s = PrepareStatus(Serialize(c));
  CHECK(s.code() == StatusCode::kInvalidConfig);
  CHECK_THAT(s.message(), ContainsSubstring("a decoder-only model has no encoder"));
}

TEST_CASE("unaligned and null model pointers are rejected", "[loader]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 12);
  CHECK(Model::Load(nullptr, 100).status().code() == StatusCode::kInvalidArgument);
  CHECK(Model::Load(bytes.data() + 1, bytes.size() - 1).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("a tensor shape vector off its 8-byte alignment is refused by name", "[loader]") {
  // Found by the load fuzz target (docs/security.md): FlatBuffers' verifier checks the vector's
  // 4-byte length field only, so reading this shape was a misaligned 64-bit load.
  std::ifstream in(
      std::string(TERN_FIXTURES) + "/../fuzz/corpus/load/regression_misaligned_shape.tern",
      std::ios::binary);
  REQUIRE(in);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() == 11048);
  const Status s = LoadStatus(bytes);
  CHECK(s.code() == StatusCode::kInvalidModel);
  CHECK(std::string(s.message()) ==
        "tensor \"decoder.layers.0.self_attn_layer_norm.bias\": its shape is not 8-byte aligned in "
        "the file");
}

}  // namespace
}  // namespace tern
