// --arch llama: the fixture (tests/fixtures/checkpoints/llama, made by
// tools/fixtures/make_llama_fixture.py with tools/model/llama_torch.py) converts, and the
// decoder-only runtime with rotary positions, RMSNorm and SwiGLU matches its PyTorch logits
// within 1e-4 at every step (prompt prefilled, then one teacher-forced token per step) with
// identical greedy continuations, alone and as a batch of prompts of different lengths, on the
// reference kernels and on XNNPACK; int8 and int4 load and generate; the config maps as
// documented; every refused config field has its exact message.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "converter/convert.h"
#include "converter/readers/checkpoint.h"
#include "runtime/api/session_internal.h"
#include "tests/converter/checkpoint_files.h"
#include "tests/converter/decoder_only_fixture.h"
#include "tests/converter/fixture_copy.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::CheckpointFixture;
using testing::ConvertError;
using testing::LmExpected;

ConvertOptions Llama(DType dtype = DType::kF32, const char* fixture = "llama") {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(std::string(fixture) + "/model.safetensors");
  o.arch = "llama";
  o.dtype = dtype;
  return o;
}

void Prepare(testing::PreparedGenerator* p, const ConvertOptions& options, Backend backend,
             int32_t batch, const LmExpected& e) {
  testing::PrepareConverted(p, options, backend, batch, e);
  REQUIRE(p->generator.backend() == backend);
}

TEST_CASE("LLaMA matches its PyTorch forward at every step, alone and batched, both backends",
          "[architectures][llama]") {
  const LmExpected e = testing::LoadLmExpected("llama/expected.safetensors");
  REQUIRE(e.batch == 3);
  // The prompts really differ in length (the batch mixes positions at every step).
  CHECK(e.prompt_lengths[0] != e.prompt_lengths[1]);
  for (Backend backend : testing::Backends()) {
    testing::PreparedGenerator p;
    Prepare(&p, Llama(), backend, static_cast<int32_t>(e.batch), e);
    INFO(p.generator.backend_report());
    DecoderOnly& m = tern::internal::decoder_only(p.generator);
    CHECK(testing::LogitError(m, e) <= 1e-4f);
    for (int64_t b = 0; b < e.batch; ++b) {
      INFO("prompt " << b << " alone");
      CHECK(testing::LogitError(m, e.Row(b)) <= 1e-4f);
    }
    testing::CheckGreedy(p.generator, e);
  }
}

// Grouped-query attention (tests/fixtures/checkpoints/llama_gqa: num_key_value_heads = 2 of 4,
// make_llama_fixture.py --gqa): the same checks as the multi-head fixture, and the K/V cache is
// half the size.
TEST_CASE("LLaMA with grouped-query attention matches its PyTorch forward, both backends",
          "[architectures][llama][gqa]") {
  const LmExpected e = testing::LoadLmExpected("llama_gqa/expected.safetensors");
  for (Backend backend : testing::Backends()) {
    testing::PreparedGenerator p;
    Prepare(&p, Llama(DType::kF32, "llama_gqa"), backend, static_cast<int32_t>(e.batch), e);
    INFO(p.generator.backend_report());
    DecoderOnly& m = tern::internal::decoder_only(p.generator);
    REQUIRE(m.config().kv_heads == 2);
    REQUIRE(m.config().heads == 4);
    CHECK(testing::LogitError(m, e) <= 1e-4f);
    for (int64_t b = 0; b < e.batch; ++b) {
      INFO("prompt " << b << " alone");
      CHECK(testing::LogitError(m, e.Row(b)) <= 1e-4f);
    }
    testing::CheckGreedy(p.generator, e);
  }
  for (DType dtype : {DType::kI8, DType::kI4}) {
    for (Backend backend : testing::Backends()) {
      INFO(DTypeName(dtype));
      testing::PreparedGenerator p;
      Prepare(&p, Llama(dtype, "llama_gqa"), backend, 1, e);
      testing::CheckQuantized(p.generator, e, dtype == DType::kI8 ? 1.0f : 12.0f);
    }
  }
}

TEST_CASE("LLaMA int8 and int4 conversions load and generate", "[architectures][llama]") {
  const LmExpected e = testing::LoadLmExpected("llama/expected.safetensors");
  for (DType dtype : {DType::kI8, DType::kI4}) {
    for (Backend backend : testing::Backends()) {
      INFO(DTypeName(dtype));
      testing::PreparedGenerator p;
      Prepare(&p, Llama(dtype), backend, 1, e);
      INFO(p.generator.backend_report());
      // Loose bounds: a sanity check on a tiny random model (int4 measured ~3.9, int8 ~0.3).
      testing::CheckQuantized(p.generator, e, dtype == DType::kI8 ? 1.0f : 12.0f);
    }
  }
}

TEST_CASE("LLaMA config is mapped from config.json", "[architectures][llama]") {
  const TernContents c = BuildContents(Llama());
  CHECK(c.config.architecture == Architecture::kDecoderOnly);
  CHECK(c.config.d_model == 32);
  CHECK(c.config.heads == 4);
  CHECK(c.config.decoder_layers == 2);
  CHECK(c.config.encoder_layers == 0);
  CHECK(c.config.d_ff == 64);
  CHECK(c.config.activation == ref::Activation::kSwiGLU);
  CHECK(c.config.norm_placement == NormPlacement::kPre);
  CHECK(c.config.norm_kind == ref::NormKind::kRMSNorm);
  CHECK(c.config.layer_norm_eps == 1e-6f);
  CHECK(c.config.position == PositionKind::kRotary);
  CHECK(c.config.rotary_dim == 0);
  CHECK(c.config.rotary_base == 1000.0f);
  CHECK(c.config.embedding_scale == 1.0f);
  CHECK(!c.config.tied_output);
  CHECK(!c.config.shared_embeddings);
  CHECK(c.config.src_vocab_size == 0);
  CHECK(c.config.tgt_vocab_size == 48);
  CHECK(c.config.max_positions == 32);
  CHECK(c.config.bos_id == 1);
  CHECK(c.config.eos_id == 2);
  CHECK(c.config.pad_id == 2);  // pad_token_id null: EOS
  CHECK(c.config.unk_id == 0);
  CHECK(c.config.decoder_start_id == 1);
  std::vector<std::string> names;
  for (const auto& t : c.tensors) names.push_back(t.name);
  for (const char* name :
       {"output_projection.weight", "decoder.layers.1.fc3.weight", "decoder.layer_norm.weight",
        "decoder.layers.0.self_attn.out_proj.weight"}) {
    INFO(name);
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
  // No biases, no norm biases (RMSNorm), no position tables: 1 embedding + 1 output + 1 final
  // norm + 9 per layer.
  CHECK(names.size() == 3 + 9 * 2);
}

// The fixture, to edit; strip_prefix: as LlamaModel saves it (no "model.", no head).
struct LlamaCopy : testing::FixtureCopy {
  explicit LlamaCopy(bool strip_prefix = false)
      : FixtureCopy("llama/model.safetensors", "llama/config.json", "llama",
                    strip_prefix ? "model." : "") {}
};

TEST_CASE("LLaMA: unsupported config fields are refused by name", "[architectures][llama]") {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* message;  // after "<config.json path>: "
  };
  const Case cases[] = {
      {"num_key_value_heads", 3,
       "\"num_key_value_heads\" = 3 does not divide \"num_attention_heads\" = 4 (grouped-query "
       "attention shares each K/V head among heads / kv_heads query heads)"},
      {"rope_scaling",
       {{"type", "dynamic"}, {"factor", 2.0}},
       "\"rope_scaling\" {\"factor\":2.0,\"type\":\"dynamic\"}: rope type \"dynamic\" is not "
       "supported (tern implements \"default\", \"linear\" and \"llama3\")"},
      {"attention_bias", true,
       "\"attention_bias\" is true: LLaMA attention projections with biases are not supported"},
      {"mlp_bias", true,
       "\"mlp_bias\" is true: LLaMA MLP projections with biases are not supported"},
      {"hidden_act", "gelu",
       "\"hidden_act\" = \"gelu\" is not supported; LLaMA's MLP is SwiGLU, down(silu(gate(x)) * "
       "up(x)), so it must "
       "be \"silu\""},
      {"model_type", "mistral",
       "\"model_type\" is \"mistral\", not \"llama\" (convert it with --arch mistral)"},
      {"model_type", "gemma",
       "\"model_type\" is \"gemma\", not \"llama\" (convert it with --arch gemma)"},
      {"model_type", "gemma2", "\"model_type\" is \"gemma2\", not \"llama\""},
      {"num_attention_heads", 5,
       "\"num_attention_heads\" = 5 does not divide \"hidden_size\" = 32"},
      {"head_dim", 7,
       "the head size head_dim = 7 is odd; rotary positions pair dimension i with i + head_size / "
       "2"},
      {"eos_token_id",
       {2, 7},
       "\"eos_token_id\" is a list [2,7]; tern's model file holds one id: write one in config.json "
       "(or --config a "
       "copy)"},
  };
  for (const Case& c : cases) {
    INFO(c.key);
    LlamaCopy copy;
    copy.config[c.key] = c.value;
    if (std::string(c.key) == "num_attention_heads") copy.config["num_key_value_heads"] = 5;
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) == copy.config_path() + ": " + c.message);
  }
  {
    LlamaCopy copy;
    copy.config.erase("hidden_size");
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) == copy.config_path() + ": LLaMA config lacks \"hidden_size\"");
  }
  {
    LlamaCopy copy;
    copy.config["num_attention_heads"] = copy.config["num_key_value_heads"] = 32;  // d_head 1: odd
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) ==
          copy.config_path() +
              ": the head size hidden_size / num_attention_heads = 1 is odd; rotary positions "
              "pair dimension i with i + head_size / 2");
  }
}

TEST_CASE("LLaMA: rotary buffers are verified against rope_theta; tensors are named",
          "[architectures][llama]") {
  {
    LlamaCopy copy;
    copy.config["rope_theta"] = 10000.0;  // the buffers were made with 1000
    const ConvertOptions o = copy.Write();
    CHECK_THAT(
        ConvertError(o),
        ContainsSubstring(
            "rotary buffer \"model.layers.0.self_attn.rotary_emb.inv_freq\" is not the frequency "
            "table of config.json's rope_theta (index 1: 0.1778279 stored, 0.1 from rope_theta = "
            "10000); fix rope_theta, or --skip-prefix the buffer to use the config's value"));
  }
  for (bool one_buffer : {false, true}) {
    // Without the per-layer buffers (newer transformers save none, or one
    // model.rotary_emb.inv_freq) the result is the same.
    INFO("one model-level buffer: " << one_buffer);
    LlamaCopy copy;
    const testing::RawTensor buffer =
        copy.tensors.at("model.layers.0.self_attn.rotary_emb.inv_freq");
    for (auto it = copy.tensors.begin(); it != copy.tensors.end();) {
      it = it->first.find("inv_freq") != std::string::npos ? copy.tensors.erase(it) : std::next(it);
    }
    if (one_buffer) copy.tensors["model.rotary_emb.inv_freq"] = buffer;
    const TernContents a = BuildContents(copy.Write());
    const TernContents b = BuildContents(Llama());
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) CHECK(a.tensors[i].data == b.tensors[i].data);
  }
  {
    LlamaCopy copy;
    copy.tensors.erase("model.layers.1.mlp.up_proj.weight");
    CHECK_THAT(
        ConvertError(copy.Write()),
        ContainsSubstring(
            "\"model.layers.1.mlp.up_proj.weight\" (decoder.layers.1.fc3.weight) is missing"));
  }
  {
    LlamaCopy copy;
    copy.tensors["model.layers.0.self_attn.q_proj.bias"] = {
        "F32", {32}, testing::Floats(std::vector<float>(32, 0.1f))};
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("unexpected tensor \"model.layers.0.self_attn.q_proj.bias\""));
  }
  {
    LlamaCopy copy;
    copy.config["num_hidden_layers"] = 3;
    CHECK_THAT(ConvertError(copy.Write()), ContainsSubstring("\"num_hidden_layers\": 3"));
  }
  {
    // tie_word_embeddings: lm_head must equal the embedding; then it is dropped.
    LlamaCopy copy;
    copy.config["tie_word_embeddings"] = true;
    CHECK_THAT(
        ConvertError(copy.Write()),
        ContainsSubstring("tensor \"lm_head.weight\" differs from \"model.embed_tokens.weight\""));
    copy.tensors["lm_head.weight"] = copy.tensors["model.embed_tokens.weight"];
    const TernContents c = BuildContents(copy.Write());
    CHECK(c.config.tied_output);
  }
}

TEST_CASE("LLaMA without the model. prefix (LlamaModel) and a tied head converts",
          "[architectures][llama]") {
  LlamaCopy copy(true);
  copy.config["tie_word_embeddings"] = true;
  const TernContents a = BuildContents(copy.Write());
  const TernContents b = BuildContents(Llama());
  CHECK(a.tensors.size() + 1 == b.tensors.size());  // no output_projection.weight
  for (const auto& t : a.tensors) {
    INFO(t.name);
    const auto same = std::find_if(b.tensors.begin(), b.tensors.end(),
                                   [&](const auto& u) { return u.name == t.name; });
    REQUIRE(same != b.tensors.end());
    CHECK(same->data == t.data);
  }
}

}  // namespace
}  // namespace tern::convert
