// Bad input for the architecture maps: every case is an error that names the tensor (in the
// checkpoint's own naming, and the canonical name) or the config field, and what was expected.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "converter/convert.h"
#include "converter/readers/checkpoint.h"
#include "runtime/core/fp16.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"
#include "tests/converter/fixture_copy.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::CheckpointFixture;
using testing::ScratchDir;

// The Marian fixture's tensors as float32 safetensors, edited, with an edited config.json.
struct MarianCopy : testing::FixtureCopy {
  MarianCopy() : FixtureCopy("marian/pytorch_model.bin", "marian/config.json", "marian") {}
};

TEST_CASE("Marian: a copy of the fixture in safetensors still converts",
          "[architectures][errors][marian]") {
  MarianCopy m;
  const TernContents c = BuildContents(m.Write());
  CHECK(c.source_format == "safetensors/marian");
}

TEST_CASE("Marian: a float16 checkpoint (as transformers' converter saves them) converts",
          "[architectures][marian]") {
  MarianCopy m;
  for (auto& kv : m.tensors) {
    const float* f = reinterpret_cast<const float*>(kv.second.bytes.data());
    std::string half;
    for (size_t i = 0; i < kv.second.bytes.size() / 4; ++i) {
      const uint16_t h = Fp32ToFp16(f[i]);
      half.append(reinterpret_cast<const char*>(&h), 2);
    }
    kv.second = {"F16", kv.second.shape, half};
  }
  std::vector<std::string> notes;
  ConvertOptions o = m.Write();
  o.note = [&](const std::string& n) { notes.push_back(n); };
  const TernContents c = BuildContents(o);  // the f16 position tables verify within f16 rounding
  bool verified = false;
  for (const auto& n : notes)
    verified = verified || n.find("verified and dropped model.encoder.embed_positions") == 0;
  CHECK(verified);
  CHECK(c.tensors.front().dtype == DType::kF32);
}

TEST_CASE(
    "Marian: the stored position table decides the layout; unknown tables are refused unless asked",
    "[architectures][errors][marian]") {
  MarianCopy m;
  const int64_t rows = 64, d = 16;
  auto table_of = [&](ref::SinusoidLayout layout) {
    std::vector<float> table(rows * d);
    ref::SinusoidalPositions(0, rows, d, layout, table.data());
    return table;
  };
  auto store = [&](const std::vector<float>& table) {
    for (const char* name :
         {"model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"}) {
      m.tensors[name] = {"F32", {rows, d}, testing::Floats(table)};
    }
  };
  // transformers' table (sin/cos halves, frequencies 1/10000^(2i/d)), written out by hand here.
  std::vector<float> hf(rows * d);
  for (int64_t p = 0; p < rows; ++p) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle =
          static_cast<double>(p) / std::pow(10000.0, 2.0 * static_cast<double>(i) / d);
      hf[p * d + i] = static_cast<float>(std::sin(angle));
      hf[p * d + d / 2 + i] = static_cast<float>(std::cos(angle));
    }
  }
  store(hf);
  CHECK(BuildContents(m.Write()).config.sinusoid_layout == ref::SinusoidLayout::kSplitHalves);
  // Marian C++'s table (concatenated, frequencies 1/10000^(i/(d/2-1))).
  store(table_of(ref::SinusoidLayout::kConcatenated));
  CHECK(BuildContents(m.Write()).config.sinusoid_layout == ref::SinusoidLayout::kConcatenated);
  // Neither: the paper's interleaved table is named, and refused unless asked.
  store(table_of(ref::SinusoidLayout::kInterleaved));
  ConvertOptions o = m.Write();
  REQUIRE_THROWS_WITH(
      BuildContents(o),
      ContainsSubstring(
          "position table \"model.encoder.embed_positions.weight\" is not the sinusoidal "
          "table the runtime computes for sinusoid_layout=concatenated (row 0, column 1") &&
          ContainsSubstring("it is the interleaved layout instead") &&
          ContainsSubstring("--ignore-position-table"));
  o.ignore_position_mismatch = true;
  std::vector<std::string> notes;
  o.note = [&](const std::string& n) { notes.push_back(n); };
  CHECK_NOTHROW(BuildContents(o));
  bool warned = false;
  for (const auto& n : notes) warned = warned || n.find("warning: ") == 0;
  CHECK(warned);
}

TEST_CASE("Marian: missing, unexpected and mis-shaped tensors name the HF tensor",
          "[architectures][errors][marian]") {
  MarianCopy m;
  SECTION("missing") {
    m.tensors.erase("model.decoder.layers.1.fc2.weight");
    REQUIRE_THROWS_WITH(BuildContents(m.Write()),
                        ContainsSubstring("required tensor \"model.decoder.layers.1.fc2.weight\" "
                                          "(decoder.layers.1.fc2.weight) is missing"));
  }
  SECTION("unexpected") {
    m.tensors["model.encoder.layers.0.adapter.weight"] = {"F32", {2}, testing::Floats({1, 2})};
    REQUIRE_THROWS_WITH(
        BuildContents(m.Write()),
        ContainsSubstring(
            "unexpected tensor \"model.encoder.layers.0.adapter.weight\" (not part of a "
            "MarianMT model with this config.json)"));
  }
  SECTION("config disagreeing with the weights") {
    m.config["encoder_ffn_dim"] = 48;
    m.config["decoder_ffn_dim"] = 48;
    REQUIRE_THROWS_WITH(
        BuildContents(m.Write()),
        ContainsSubstring(
            "tensor \"model.encoder.layers.0.fc1.weight\" (encoder.layers.0.fc1.weight) has "
            "shape [32, 16], expected [48, 16] from the config") &&
            ContainsSubstring("config.json"));
  }
  SECTION("layer count disagreeing") {
    m.config["decoder_layers"] = 1;
    REQUIRE_THROWS_WITH(BuildContents(m.Write()),
                        ContainsSubstring("unexpected tensor \"model.decoder.layers.1."));
  }
  SECTION("an int64 weight") {
    const std::vector<int64_t> ints(32 * 16, 1);
    m.tensors["model.encoder.layers.0.fc1.weight"] = {
        "I64", {32, 16}, std::string(reinterpret_cast<const char*>(ints.data()), ints.size() * 8)};
    REQUIRE_THROWS_WITH(
        BuildContents(m.Write()),
        ContainsSubstring(
            "tensor \"model.encoder.layers.0.fc1.weight\" has dtype I64; expected a float "
            "type"));
  }
  SECTION("a NaN") {
    HostTensor t;
    std::vector<float> v(16, 0.5f);
    v[5] = std::nanf("");
    m.tensors["model.decoder.layers.0.self_attn_layer_norm.weight"] = {
        "F32", {16}, testing::Floats(v)};
    REQUIRE_THROWS_WITH(
        BuildContents(m.Write()),
        ContainsSubstring(
            "tensor \"model.decoder.layers.0.self_attn_layer_norm.weight\" "
            "(decoder.layers.0.self_attn_layer_norm.weight) has a non-finite value at "
            "index 5 (nan)"));
  }
  SECTION("an untied lm_head under tie_word_embeddings") {
    std::vector<float> v(24 * 16, 0.25f);
    m.tensors["lm_head.weight"] = {"F32", {24, 16}, testing::Floats(v)};
    REQUIRE_THROWS_WITH(
        BuildContents(m.Write()),
        ContainsSubstring("tensor \"lm_head.weight\" differs from \"model.shared.weight\" although "
                          "config tie_word_embeddings is true"));
  }
  SECTION("config fields the runtime cannot honour") {
    m.config["decoder_attention_heads"] = 4;
    REQUIRE_THROWS_WITH(
        BuildContents(m.Write()),
        ContainsSubstring("encoder_attention_heads 2 != decoder_attention_heads 4"));
  }
  SECTION("another model type") {
    m.config["model_type"] = "bart";
    REQUIRE_THROWS_WITH(BuildContents(m.Write()),
                        ContainsSubstring("\"model_type\" is \"bart\", not \"marian\""));
  }
  SECTION("no config.json") {
    ConvertOptions o = m.Write();
    std::remove((m.dir / "config.json").c_str());
    REQUIRE_THROWS_WITH(
        BuildContents(o),
        ContainsSubstring("--arch marian needs the model's Hugging Face config.json"));
  }
}

// Marian C++'s model.npz with its options replaced through --config (a model.yml file).
std::string MarianNpzError(const std::string& yml, std::vector<std::string> skip = {}) {
  ScratchDir dir;
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("marian_npz/model.npz");
  o.arch = "marian_npz";
  o.skip_prefixes = std::move(skip);
  if (!yml.empty()) {
    testing::WriteBytes(dir / "model.yml", yml);
    o.config = dir / "model.yml";
  }
  try {
    BuildContents(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const char* const kMarianYml =
    "type: transformer\ndim-emb: 16\nenc-depth: 2\ndec-depth: 2\ndim-vocabs: [24, 24]\n"
    "transformer-heads: 2\ntransformer-dim-ffn: 32\ntransformer-ffn-activation: swish\n"
    "tied-embeddings-all: true\n";

TEST_CASE("Marian npz: the yml's options are checked, and tensors are named in Marian's terms",
          "[architectures][marian_npz][errors]") {
  // The embedded yml, read back through --config, converts (flow-style list, no quotes).
  CHECK(MarianNpzError(kMarianYml) == "(no error)");
  CHECK_THAT(MarianNpzError(std::string(kMarianYml) + "transformer-ffn-activation: gelu\n"),
             ContainsSubstring("\"transformer-ffn-activation\" = \"gelu\" is not supported"));
  CHECK_THAT(MarianNpzError("type: s2s\n"),
             ContainsSubstring("\"type\" is \"s2s\"; only Marian's \"transformer\""));
  CHECK_THAT(
      MarianNpzError(std::string(kMarianYml) + "transformer-decoder-autoreg: average-attention\n"),
      ContainsSubstring(
          "\"transformer-decoder-autoreg\" = \"average-attention\" is not supported"));
  CHECK_THAT(MarianNpzError(std::string(kMarianYml) + "transformer-postprocess: da\n"),
             ContainsSubstring("transformer-postprocess \"da\""));
  CHECK_THAT(MarianNpzError("dim-vocabs: [24]\n"),
             ContainsSubstring("\"dim-vocabs\" must list two sizes"));
  CHECK_THAT(MarianNpzError("dim-vocabs: [24, 24]\ndim-emb: -3\n"),
             ContainsSubstring("\"dim-emb\" must be a non-negative integer"));
  // A model with more layers than the file holds: the missing tensor by its Marian name.
  CHECK_THAT(MarianNpzError(std::string(kMarianYml) + "enc-depth: 3\n"),
             ContainsSubstring("encoder_l3_self_Wq"));
  // A tensor the options do not explain is unexpected.
  CHECK_THAT(MarianNpzError(std::string(kMarianYml) + "enc-depth: 1\n"),
             ContainsSubstring("unexpected tensor \"encoder_l2_"));
  CHECK_THAT(MarianNpzError("", {"decoder_l2_context_Wq"}),
             ContainsSubstring("decoder_l2_context_Wq"));
}

TEST_CASE("nn.Transformer: what the weights cannot say must be in the map",
          "[architectures][errors][nn_transformer]") {
  ScratchDir dir;
  nlohmann::json map =
      nlohmann::json::parse(testing::ReadBytes(CheckpointFixture("nn_transformer/map.json")));
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("nn_transformer/model.pt");
  o.arch = "nn_transformer";
  o.map = dir / "map.json";
  SECTION("no head count") {
    map["config"].erase("heads");
    testing::WriteBytes(o.map, map.dump());
    REQUIRE_THROWS_WITH(BuildContents(o),
                        ContainsSubstring("the head count is not in the weights: set \"heads\""));
    o.overrides_json = "{\"heads\": 2}";  // --set heads=2 is enough
    CHECK_NOTHROW(BuildContents(o));
  }
  SECTION("post-LN with nn.Transformer's final norms keeps them as post_ln_final_norm") {
    map["config"]["norm"] = "post";
    testing::WriteBytes(o.map, map.dump());
    const TernContents c = BuildContents(o);
    CHECK(c.config.post_ln_final_norm);
  }
  SECTION("a tensor outside nn.Transformer and the map") {
    map.erase("positions");
    testing::WriteBytes(o.map, map.dump());
    REQUIRE_THROWS_WITH(
        BuildContents(o),
        ContainsSubstring(
            "unexpected tensor \"positional_encoding.pos_embedding\" (not nn.Transformer's "
            "nor named in the map"));
    map["ignore"] = {"positional_encoding."};
    testing::WriteBytes(o.map, map.dump());
    CHECK_NOTHROW(BuildContents(o));
  }
  SECTION("a wrong position layout") {
    map["positions"][0]["layout"] = "concatenated";
    testing::WriteBytes(o.map, map.dump());
    REQUIRE_THROWS_WITH(BuildContents(o),
                        ContainsSubstring("it is the interleaved layout instead"));
  }
  SECTION("a misspelled key and a missing embedding") {
    map["generatr"] = "generator";
    testing::WriteBytes(o.map, map.dump());
    REQUIRE_THROWS_WITH(BuildContents(o), ContainsSubstring("unknown map key \"generatr\""));
    map.erase("generatr");
    map["src_embedding"] = "src_emb.weight";
    testing::WriteBytes(o.map, map.dump());
    REQUIRE_THROWS_WITH(
        BuildContents(o),
        ContainsSubstring("map src_embedding \"src_emb.weight\" is not in the checkpoint"));
  }
  SECTION("no map") {
    o.map.clear();
    REQUIRE_THROWS_WITH(BuildContents(o),
                        ContainsSubstring("--arch nn_transformer needs --map MAP.json"));
  }
  SECTION("the wrong head count changes the outputs") {
    testing::WriteBytes(o.map, map.dump());
    o.overrides_json = "{\"heads\": 4}";
    const testing::ParityResult r = testing::RunParity(
        o, testing::LoadExpected(CheckpointFixture("nn_transformer/expected.safetensors")));
    CHECK(r.logit_error > 1e-3f);
  }
}

TEST_CASE("Annotated Transformer: the head count is required",
          "[architectures][errors][annotated]") {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("annotated/model.pt");
  o.arch = "annotated";
  REQUIRE_THROWS_WITH(
      BuildContents(o),
      ContainsSubstring("the head count is not in the weights: pass --set heads=N"));
  o.overrides_json = "{\"heads\": 3}";
  REQUIRE_THROWS_WITH(BuildContents(o),
                      ContainsSubstring("heads = 3 does not divide d_model = 16"));
}

TEST_CASE("unknown --arch", "[architectures][errors]") {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("annotated/model.pt");
  o.arch = "xlnet";
  REQUIRE_THROWS_WITH(
      BuildContents(o),
      ContainsSubstring("unknown --arch \"xlnet\"; expected one of tern, marian, "
                        "marian_npz, nn_transformer, annotated, bart, mbart, gpt2"));
}

}  // namespace
}  // namespace tern::convert
