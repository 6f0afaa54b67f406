// The LLaMA-layout families of converter/architectures/llama.cc beyond LLaMA 1: each fixture
// (tools/fixtures/make_llama_fixture.py --llama3 / --linear / --qwen2 / --gemma / --mistral,
// references in
// tools/model/llama_torch.py) converts with its --arch (and with --arch auto from config.json),
// matches its PyTorch logits within 1e-4 at every step of prefill and decode, alone and batched,
// on both backends, with identical greedy continuations; int8 and int4 greedy ids are pinned.
//   llama3        grouped-query attention (2 of 4), rope_theta 500000, rope_scaling llama3, tied
//   llama_linear  multi-query attention, rope_scaling linear (factor 4), untied
//   qwen2         Qwen2: q/k/v biases, grouped-query attention, rope_theta 10^6, tied
//   gemma         Gemma: GeGLU, sqrt(d) embedding scale, (1 + w) RMSNorm, tied, head_dim 16
//                 with d_model 32 and 4 heads (heads * head_dim = 64), multi-query attention
//   mistral       Mistral: sliding-window attention (window 4, shorter than the prompts and the
//                 continuations), grouped-query attention, untied
// Config fields tern does not implement are refused by name (rope types, soft-capping, experts,
// Qwen2 windows on some layers only).
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstring>

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

struct Family {
  const char* fixture;
  const char* arch;
  // Greedy continuation of the first prompt after int8 and int4 conversion (at most 12 tokens,
  // stopping at EOS), on the reference kernels and on XNNPACK: pinned. The fp32 ones are
  // expected.safetensors' PyTorch ids. The backends may differ: the reference kernels multiply
  // f32 activations by the dequantized weights, XNNPACK quantizes the activations per row too.
  std::vector<int32_t> int8_reference, int8_xnnpack, int4_reference, int4_xnnpack;
};

const Family kFamilies[] = {
    {"llama3",
     "llama",
     {28, 28, 16, 1, 25, 25, 25, 39, 39, 39, 39, 17},
     {28, 28, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16},
     {28, 28, 16, 16, 16, 3, 3, 17, 16, 16, 16, 16},
     {28, 28, 16, 16, 16, 3, 3, 17, 16, 16, 16, 16}},
    {"llama_linear",
     "llama",
     {29, 29, 29, 29, 29, 29, 39, 36, 6, 6, 6, 23},
     {29, 29, 29, 29, 29, 29, 39, 36, 6, 6, 6, 23},
     {25, 31, 16, 10, 41, 40, 3, 42, 29, 29, 29, 29},
     {25, 31, 16, 10, 41, 40, 3, 42, 29, 29, 29, 29}},
    {"qwen2",
     "qwen2",
     {33, 3, 3, 33, 38, 43, 43, 43, 34, 34, 34, 17},
     {33, 3, 3, 33, 38, 44},
     {33, 3, 3, 3, 3, 3, 3, 31, 18, 18, 18, 18},
     {33, 3, 3, 3, 3, 3, 3, 31, 18, 18, 18, 18}},
    {"gemma",
     "gemma",
     {13, 13, 13, 13, 23, 23, 27, 22, 8, 20, 22, 42},
     {13, 13, 13, 13, 23, 23, 27, 22, 8, 20, 22, 42},
     {13, 13, 13, 13, 13, 23, 27, 27, 27, 22, 42, 26},
     {13, 13, 13, 13, 13, 23, 27, 27, 27, 22, 42, 26}},
    {"mistral",
     "mistral",
     {29, 36, 38, 19, 19, 19, 35, 35, 35, 35, 29, 14},
     {29, 36, 38, 19, 19, 19, 35, 35, 35, 35, 29, 14},
     {29, 36, 38, 19, 45, 30, 13, 19, 47, 25, 9, 35},
     {29, 36, 38, 19, 45, 30, 13, 19, 47, 25, 9, 35}},
};

ConvertOptions Options(const Family& f, DType dtype = DType::kF32, const char* arch = nullptr) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(std::string(f.fixture) + "/model.safetensors");
  o.arch = arch != nullptr ? arch : f.arch;
  o.dtype = dtype;
  return o;
}

TEST_CASE(
    "LLaMA 3 (llama3 rope scaling), linear rope scaling, Qwen2, Gemma and Mistral (sliding "
    "window) match PyTorch at every step, alone and batched, both backends",
    "[architectures][llama][qwen2][gemma][mistral]") {
  for (const Family& f : kFamilies) {
    INFO(f.fixture);
    const LmExpected e = testing::LoadLmExpected(std::string(f.fixture) + "/expected.safetensors");
    for (Backend backend : testing::Backends()) {
      testing::PreparedGenerator p;
      testing::PrepareConverted(&p, Options(f), backend, static_cast<int32_t>(e.batch), e);
      REQUIRE(p.generator.backend() == backend);
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
}

TEST_CASE(
    "LLaMA 3, linear-scaled LLaMA, Qwen2, Gemma and Mistral: int8 and int4 greedy ids are pinned",
    "[architectures][llama][qwen2][gemma][mistral]") {
  for (const Family& f : kFamilies) {
    INFO(f.fixture);
    const LmExpected e = testing::LoadLmExpected(std::string(f.fixture) + "/expected.safetensors");
    for (DType dtype : {DType::kI8, DType::kI4}) {
      for (Backend backend : testing::Backends()) {
        INFO(DTypeName(dtype));
        testing::PreparedGenerator p;
        testing::PrepareConverted(&p, Options(f, dtype), backend, 1, e);
        INFO(p.generator.backend_report());
        testing::CheckQuantized(p.generator, e, dtype == DType::kI8 ? 1.0f : 12.0f);
        GenerationOptions options;
        options.max_new_tokens = static_cast<int32_t>(e.max_new);
        std::vector<int32_t> out(static_cast<size_t>(e.max_new));
        size_t n = 0;
        REQUIRE(p.generator
                    .Generate(Span<const int32_t>(e.prompts.data(),
                                                  static_cast<size_t>(e.prompt_lengths[0])),
                              Span<int32_t>(out.data(), out.size()), &n, options)
                    .ok());
        out.resize(n);
        const bool reference = backend == Backend::kReference;
        CHECK(out == (dtype == DType::kI8 ? (reference ? f.int8_reference : f.int8_xnnpack)
                                          : (reference ? f.int4_reference : f.int4_xnnpack)));
      }
    }
  }
}

TEST_CASE("LLaMA 3 and Qwen2 configs map rope_theta, rope_scaling, kv heads and tying",
          "[architectures][llama][qwen2]") {
  {
    const TernContents c = BuildContents(Options(kFamilies[0]));
    CHECK(c.config.kv_heads == 2);
    CHECK(c.config.rotary_base == 500000.0f);
    CHECK(c.config.rotary_scaling == ref::RotaryScaling::kLlama3);
    CHECK(c.config.rotary_scaling_factor == 8.0f);
    CHECK(c.config.rotary_low_freq_factor == 1.0f);
    CHECK(c.config.rotary_high_freq_factor == 8.0f);
    CHECK(c.config.rotary_original_max_positions == 512);
    CHECK(c.config.tied_output);
    CHECK(FormatMinor(c) == 6);
  }
  {
    const TernContents c = BuildContents(Options(kFamilies[1]));
    CHECK(c.config.kv_heads == 1);
    CHECK(c.config.rotary_scaling == ref::RotaryScaling::kLinear);
    CHECK(c.config.rotary_scaling_factor == 4.0f);
    CHECK(c.config.rotary_original_max_positions == 0);
    CHECK(!c.config.tied_output);
  }
  {
    const TernContents c = BuildContents(Options(kFamilies[2]));
    CHECK(c.config.kv_heads == 2);
    CHECK(c.config.rotary_base == 1000000.0f);
    CHECK(c.config.rotary_scaling == ref::RotaryScaling::kNone);
    CHECK(c.config.tied_output);
    CHECK(c.config.eos_id == 2);
    CHECK(c.config.bos_id == 2);  // no bos_token_id: EOS
    CHECK(FormatMinor(c) == 3);
    std::vector<std::string> names;
    for (const auto& t : c.tensors) names.push_back(t.name);
    for (const char* name :
         {"decoder.layers.0.self_attn.q_proj.bias", "decoder.layers.1.self_attn.k_proj.bias",
          "decoder.layers.1.self_attn.v_proj.bias"}) {
      INFO(name);
      CHECK(std::find(names.begin(), names.end(), name) != names.end());
    }
    CHECK(std::find(names.begin(), names.end(), "decoder.layers.0.self_attn.out_proj.bias") ==
          names.end());
    // 1 embedding + 1 final norm + 12 per layer (9 weights, 3 biases), tied: no output.
    CHECK(names.size() == 2 + 12 * 2);
  }
}

TEST_CASE("Gemma config: head_dim, GeGLU, the embedding normalizer and (1 + w) norm gains",
          "[architectures][gemma]") {
  const TernContents c = BuildContents(Options(kFamilies[3]));
  CHECK(c.config.head_dim == 16);
  CHECK(c.config.d_head() == 16);
  CHECK(c.config.d_q() == 64);
  CHECK(c.config.kv_heads == 1);
  CHECK(c.config.activation == ref::Activation::kGeGLU);
  CHECK(c.config.embedding_scale == static_cast<float>(std::sqrt(32.0)));
  CHECK(c.config.tied_output);
  CHECK(c.config.bos_id == 1);
  CHECK(c.config.eos_id == 2);
  CHECK(FormatMinor(c) == 6);
  const Checkpoint ckpt = Checkpoint::Open(CheckpointFixture("gemma/model.safetensors"));
  const HostTensor w = ckpt.Float("model.layers.1.post_attention_layernorm.weight");
  bool seen = false;
  for (const auto& t : c.tensors) {
    INFO(t.name);
    if (t.name == "decoder.layers.1.final_layer_norm.weight") {
      seen = true;
      REQUIRE(t.data.size() == w.values.size() * sizeof(float));
      std::vector<float> stored(w.values.size());
      std::memcpy(stored.data(), t.data.data(), t.data.size());
      for (size_t i = 0; i < stored.size(); ++i) CHECK(stored[i] == 1.0f + w.values[i]);
    }
    if (t.name == "decoder.layers.0.self_attn.q_proj.weight") {
      CHECK(t.shape == std::vector<int64_t>{64, 32});
    }
    if (t.name == "decoder.layers.0.self_attn.out_proj.weight") {
      CHECK(t.shape == std::vector<int64_t>{32, 64});
    }
    if (t.name == "decoder.layers.0.self_attn.k_proj.weight") {
      CHECK(t.shape == std::vector<int64_t>{16, 32});
    }
  }
  CHECK(seen);
  // The normalizer as the model ran: rounded to a bfloat16 / float16 torch_dtype.
  testing::FixtureCopy copy("gemma/model.safetensors", "gemma/config.json", "gemma");
  copy.config["torch_dtype"] = "bfloat16";
  CHECK(BuildContents(copy.Write()).config.embedding_scale == 5.65625f);  // sqrt(32) = 5.6569
  copy.config["torch_dtype"] = "float16";
  CHECK(BuildContents(copy.Write()).config.embedding_scale == 5.65625f);
  copy.config["torch_dtype"] = "float32";
  CHECK(BuildContents(copy.Write()).config.embedding_scale == static_cast<float>(std::sqrt(32.0)));
  copy.config["hidden_activation"] = "gelu";
  CHECK(ConvertError(copy.Write()) ==
        copy.config_path() +
            ": \"hidden_activation\" = \"gelu\" is not supported; Gemma's MLP is GeGLU with the "
            "tanh GELU, down(gelu_tanh(gate(x)) * up(x))");
  copy.config.erase("hidden_activation");
  copy.config["hidden_act"] = "gelu";  // the first Gemma configs: the tanh GELU all the same
  CHECK(BuildContents(copy.Write()).config.activation == ref::Activation::kGeGLU);
  copy.config["tie_word_embeddings"] = false;
  CHECK(ConvertError(copy.Write()) ==
        copy.config_path() +
            ": \"tie_word_embeddings\" is false: Gemma's output layer is its embedding "
            "(GemmaForCausalLM ties them)");
}

TEST_CASE(
    "Architecture detection (arch auto) picks the map from config.json's model_type or "
    "architectures",
    "[architectures][llama][qwen2]") {
  for (const Family& f : kFamilies) {
    INFO(f.fixture);
    const TernContents a = BuildContents(Options(f, DType::kF32, "auto"));
    const TernContents b = BuildContents(Options(f));
    CHECK(a.source_format == "safetensors/" + std::string(f.arch));  // the map that ran
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) CHECK(a.tensors[i].data == b.tensors[i].data);
  }
  {
    testing::FixtureCopy copy("qwen2/model.safetensors", "qwen2/config.json", "auto");
    copy.config.erase("model_type");  // only architectures: Qwen2ForCausalLM
    CHECK(BuildContents(copy.Write()).config.kv_heads == 2);
    copy.config["model_type"] = "gemma2";
    CHECK(ConvertError(copy.Write()) ==
          copy.config_path() +
              ": --arch auto does not know \"model_type\" \"gemma2\" (architectures "
              "\"Qwen2ForCausalLM\"); it knows llama, qwen2, mistral, gemma, gpt2, marian, t5, "
              "mt5, m2m100, bart, mbart");
  }
}

// Mistral (v0.2 on: sliding_window null) is the LLaMA network; the LLaMA fixture with a
// MistralConfig converts to the same tensors. A window shorter than the context is stored
// (the mistral fixture runs it); LLaMA itself has none.
TEST_CASE("Mistral converts as LLaMA without a sliding window; a shorter window is stored",
          "[architectures][mistral]") {
  testing::FixtureCopy copy("llama_gqa/model.safetensors", "llama_gqa/config.json", "mistral");
  copy.config["model_type"] = "mistral";
  copy.config["architectures"] = {"MistralForCausalLM"};
  copy.config["sliding_window"] = nullptr;
  for (const char* key : {"attention_bias", "mlp_bias", "pretraining_tp"}) copy.config.erase(key);
  ConvertOptions llama;
  llama.checkpoint = CheckpointFixture("llama_gqa/model.safetensors");
  llama.arch = "llama";
  const TernContents b = BuildContents(llama);
  for (const char* arch : {"mistral", "auto"}) {
    copy.arch = arch;
    const TernContents a = BuildContents(copy.Write());
    CHECK(a.config.kv_heads == 2);
    REQUIRE(a.tensors.size() == b.tensors.size());
    for (size_t i = 0; i < a.tensors.size(); ++i) CHECK(a.tensors[i].data == b.tensors[i].data);
  }
  copy.arch = "mistral";
  copy.config["sliding_window"] = 32;  // = max_position_embeddings: never drops a key
  CHECK(BuildContents(copy.Write()).config.sliding_window == 0);
  copy.config["sliding_window"] = 16;
  const TernContents windowed = BuildContents(copy.Write());
  CHECK(windowed.config.sliding_window == 16);
  CHECK(FormatMinor(windowed) == 7);
  copy.config["sliding_window"] = -3;
  CHECK(ConvertError(copy.Write()) ==
        copy.config_path() + ": \"sliding_window\" must be a positive integer");
  copy.config["sliding_window"] = 16;
  copy.config["model_type"] = "llama";
  copy.config["architectures"] = {"LlamaForCausalLM"};
  copy.arch = "llama";
  CHECK(ConvertError(copy.Write()) ==
        copy.config_path() +
            ": \"sliding_window\" = 16 is shorter than \"max_position_embeddings\" = 32: LLaMA "
            "has no sliding-window attention (a window of at least the context length, or "
            "null, is taken)");
  copy.config["model_type"] = "mistral";
  CHECK(ConvertError(copy.Write()) ==
        copy.config_path() +
            ": \"model_type\" is \"mistral\", not \"llama\" (convert it with --arch mistral)");
}

TEST_CASE("LLaMA-layout configs: what tern does not implement is refused by name",
          "[architectures][llama][qwen2]") {
  struct Case {
    const char* fixture;
    const char* arch;
    const char* key;
    nlohmann::json value;
    const char* message;  // after "<config.json path>: "
  };
  const Case cases[] = {
      {"llama_linear",
       "llama",
       "rope_scaling",
       {{"type", "dynamic"}, {"factor", 2.0}},
       "\"rope_scaling\" {\"factor\":2.0,\"type\":\"dynamic\"}: rope type \"dynamic\" is not "
       "supported (tern implements \"default\", \"linear\" and \"llama3\")"},
      {"llama_linear",
       "llama",
       "rope_scaling",
       {{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32}},
       "\"rope_scaling\" {\"factor\":4.0,\"original_max_position_embeddings\":32,\"rope_type\":"
       "\"yarn\"}: rope type \"yarn\" is not supported (tern implements \"default\", \"linear\" "
       "and \"llama3\")"},
      {"llama_linear",
       "llama",
       "rope_scaling",
       {{"type", "linear"}},
       "\"rope_scaling\" {\"type\":\"linear\"} lacks \"factor\""},
      {"llama_linear",
       "llama",
       "rope_scaling",
       {{"type", "linear"}, {"factor", 2.0}, {"attention_factor", 1.5}},
       "\"rope_scaling\" {\"attention_factor\":1.5,\"factor\":2.0,\"type\":\"linear\"}: key "
       "\"attention_factor\" is not supported with rope type \"linear\""},
      {"llama3",
       "llama",
       "rope_scaling",
       {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0}},
       "\"rope_scaling\" {\"factor\":8.0,\"low_freq_factor\":1.0,\"rope_type\":\"llama3\"} lacks "
       "\"high_freq_factor\""},
      {"llama3",
       "llama",
       "rope_scaling",
       {{"rope_type", "llama3"},
        {"factor", 8.0},
        {"low_freq_factor", 4.0},
        {"high_freq_factor", 1.0},
        {"original_max_position_embeddings", 8192}},
       "\"rope_scaling\" {\"factor\":8.0,\"high_freq_factor\":1.0,\"low_freq_factor\":4.0,"
       "\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"}: "
       "\"high_freq_factor\" must be greater than \"low_freq_factor\""},
      {"llama3", "llama", "attn_logit_softcapping", 50.0,
       "\"attn_logit_softcapping\" = 50.0: attention logit soft-capping is not supported"},
      {"llama3", "llama", "final_logit_softcapping", 30.0,
       "\"final_logit_softcapping\" = 30.0: final logit soft-capping is not supported"},
      {"llama3", "llama", "num_local_experts", 8,
       "\"num_local_experts\" = 8: mixture of experts is not supported"},
      {"qwen2", "qwen2", "num_experts", 4,
       "\"num_experts\" = 4: mixture of experts is not supported"},
      {"qwen2", "llama", "model_type", "qwen2",
       "\"model_type\" is \"qwen2\", not \"llama\" (convert it with --arch qwen2)"},
      {"qwen2", "qwen2", "hidden_act", "gelu",
       "\"hidden_act\" = \"gelu\" is not supported; Qwen2's MLP is SwiGLU, down(silu(gate(x)) * "
       "up(x)), so it must be \"silu\""},
      {"qwen2", "qwen2", "partial_rotary_factor", 0.5,
       "\"partial_rotary_factor\" = 0.5: partial rotary positions are not supported in Qwen2"},
  };
  for (const Case& c : cases) {
    INFO(c.fixture << " " << c.key);
    testing::FixtureCopy copy(std::string(c.fixture) + "/model.safetensors",
                              std::string(c.fixture) + "/config.json", c.arch);
    copy.config[c.key] = c.value;
    CHECK(ConvertError(copy.Write()) == copy.config_path() + ": " + c.message);
  }
  {
    testing::FixtureCopy copy("qwen2/model.safetensors", "qwen2/config.json", "qwen2");
    copy.tensors.erase("model.layers.1.self_attn.k_proj.bias");
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("tensor \"model.layers.1.self_attn.k_proj.bias\" is missing "
                                 "(Qwen2 attention has q/k/v biases)"));
  }
  {
    // Qwen2's window: only with use_sliding_window, on the layers from max_window_layers on
    // (the fixture: 2 of 2 layers attend to everything).
    testing::FixtureCopy copy("qwen2/model.safetensors", "qwen2/config.json", "qwen2");
    copy.config["use_sliding_window"] = true;
    CHECK(BuildContents(copy.Write()).config.sliding_window == 0);
    copy.config["max_window_layers"] = 0;
    CHECK(BuildContents(copy.Write()).config.sliding_window == 16);
    copy.config["max_window_layers"] = -1;
    CHECK(ConvertError(copy.Write()) ==
          copy.config_path() + ": \"max_window_layers\" must be an integer >= 0");
    copy.config["max_window_layers"] = 1;
    CHECK(ConvertError(copy.Write()) ==
          copy.config_path() +
              ": \"max_window_layers\" = 1 of 2 layers: Qwen2 layers with and without a sliding "
              "window in one model are not supported");
    copy.config["use_sliding_window"] = false;
    CHECK(BuildContents(copy.Write()).config.sliding_window == 0);
  }
  {
    testing::FixtureCopy copy("qwen2/model.safetensors", "qwen2/config.json", "qwen2");
    copy.config.erase("eos_token_id");
    CHECK(ConvertError(copy.Write()) ==
          copy.config_path() + ": Qwen2 config lacks \"eos_token_id\"");
  }
  {
    // The frequency buffer of the llama3 fixture holds the scaled frequencies: a config without
    // the scaling no longer matches it.
    testing::FixtureCopy copy("llama3/model.safetensors", "llama3/config.json", "llama");
    copy.config["rope_scaling"] = nullptr;
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("rotary buffer \"model.rotary_emb.inv_freq\" is not the "
                                 "frequency table of config.json's rope_theta (index 1"));
  }
}

}  // namespace
}  // namespace tern::convert
