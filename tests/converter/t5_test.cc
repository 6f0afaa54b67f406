// The T5 family (converter/architectures/t5.cc; fixtures by tools/fixtures/make_t5_fixture.py,
// reference tools/model/t5_torch.py):
//   t5       T5 v1.0: relu, tied output with the d_model^-0.5 rescale, pytorch_model.bin with
//            the tied copies and the ignored cross-attention bias of block 0
//   t5_v1_1  T5 v1.1 / Flan-T5: gated-gelu, untied lm_head, 3 heads of d_kv 16 with d_model 32
//            (head_dim), 2 encoder and 3 decoder layers, vocabulary larger than spiece.model
// Each matches its PyTorch forward within 1e-4 (encoder output, logits at every step), with
// identical greedy ids alone and batched, on both backends; int8 and int4 greedy ids are pinned.
// What tern does not compute is refused by name.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "tests/converter/architecture_fixture.h"
#include "tests/converter/fixture_copy.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::CheckpointFixture;
using testing::ConvertError;

struct Fixture {
  const char* checkpoint;  // under tests/fixtures/checkpoints/
  const char* expected;
  // Greedy ids of the first source after int8 / int4 conversion, per backend: pinned (the fp32
  // ones are expected.safetensors' PyTorch ids). The reference kernels multiply f32 activations
  // by dequantized weights; XNNPACK also quantizes the activations per row.
  std::vector<int32_t> int8_reference, int8_xnnpack, int4_reference, int4_xnnpack;
};

const Fixture kFixtures[] = {
    {"t5/pytorch_model.bin",
     "t5/expected.safetensors",
     {23, 12, 12, 12, 12, 12, 12, 12, 12, 12},
     {23, 12, 12, 12, 12, 12, 12, 12, 12, 12},
     {23, 12, 12, 12, 12, 12, 12, 12, 12, 12},
     {23, 12, 12, 12, 12, 12, 12, 12, 12, 12}},
    {"t5_v1_1/model.safetensors",
     "t5_v1_1/expected.safetensors",
     {54, 22, 51, 60, 22, 59, 51, 52, 51, 7},
     {54, 22, 51, 60, 22, 59, 51, 52, 51, 7},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
};

ConvertOptions Options(const char* checkpoint, DType dtype = DType::kF32, const char* arch = "t5") {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(checkpoint);
  o.arch = arch;
  o.dtype = dtype;
  o.group_size = 8;
  return o;
}

TEST_CASE("T5 v1.0 and v1.1 match PyTorch at every step, alone and batched, both backends",
          "[architectures][t5]") {
  for (const Fixture& f : kFixtures) {
    INFO(f.checkpoint);
    const testing::ExpectedOutputs e = testing::LoadExpected(CheckpointFixture(f.expected));
    for (Backend backend : testing::Backends()) {
      INFO((backend == Backend::kReference ? "reference" : "xnnpack"));
      const testing::ParityResult r = testing::RunParity(Options(f.checkpoint), e, backend);
      INFO("encoder error " << r.encoder_error << ", logit error " << r.logit_error << "; "
                            << r.greedy_detail);
      CHECK(r.encoder_error <= 1e-4f);
      CHECK(r.logit_error <= 1e-4f);
      CHECK(r.greedy_equal);
    }
  }
}

TEST_CASE("T5 v1.0 and v1.1: int8 and int4 greedy ids are pinned", "[architectures][t5]") {
  for (const Fixture& f : kFixtures) {
    INFO(f.checkpoint);
    const testing::ExpectedOutputs e = testing::LoadExpected(CheckpointFixture(f.expected));
    for (DType dtype : {DType::kI8, DType::kI4}) {
      for (Backend backend : testing::Backends()) {
        INFO(DTypeName(dtype) << " on "
                              << (backend == Backend::kReference ? "reference" : "xnnpack"));
        const testing::ParityResult r =
            testing::RunParity(Options(f.checkpoint, dtype), e, backend);
        INFO("logit error " << r.logit_error);
        CHECK(r.logit_error > 0.0f);  // really quantized
        CHECK(std::isfinite(r.logit_error));
        if (dtype == DType::kI8) CHECK(r.logit_error < 1.0f);
        const bool reference = backend == Backend::kReference;
        CHECK(r.greedy[0] == (dtype == DType::kI8
                                  ? (reference ? f.int8_reference : f.int8_xnnpack)
                                  : (reference ? f.int4_reference : f.int4_xnnpack)));
      }
    }
  }
}

TEST_CASE("T5 v1.0 config: relu, tied, relative bias, RMSNorm, the folded constants",
          "[architectures][t5]") {
  std::vector<std::string> notes;
  ConvertOptions o = Options("t5/pytorch_model.bin");
  o.note = [&](const std::string& n) { notes.push_back(n); };
  const TernContents c = BuildContents(o);
  CHECK(c.config.architecture == Architecture::kEncoderDecoder);
  CHECK(c.config.d_model == 32);
  CHECK(c.config.heads == 4);
  CHECK(c.config.head_dim == 0);  // 4 x 8 = d_model
  CHECK(c.config.encoder_layers == 2);
  CHECK(c.config.decoder_layers == 2);  // num_decoder_layers absent: num_layers
  CHECK(c.config.activation == ref::Activation::kReLU);
  CHECK(c.config.norm_placement == NormPlacement::kPre);
  CHECK(c.config.norm_kind == ref::NormKind::kRMSNorm);
  CHECK(c.config.layer_norm_eps == 1e-6f);
  CHECK(c.config.position == PositionKind::kRelative);
  CHECK(c.config.relative_attention == RelativeAttention::kT5Bias);
  CHECK(c.config.relative_buckets == 16);
  CHECK(c.config.relative_max_distance == 12);
  CHECK(c.config.embedding_scale == 1.0f);
  CHECK(c.config.shared_embeddings);
  CHECK(c.config.tied_output);
  CHECK(c.config.pad_id == 0);
  CHECK(c.config.eos_id == 1);
  CHECK(c.config.unk_id == 2);
  CHECK(c.config.decoder_start_id == 0);
  CHECK(c.config.max_positions == 512);
  CHECK(c.source_format == "torch-zip/t5");
  std::string all;
  for (const auto& n : notes) all += n + "\n";
  CHECK_THAT(all, ContainsSubstring("dropped decoder.embed_tokens.weight: same table as "
                                    "shared.weight"));
  CHECK_THAT(all, ContainsSubstring("dropped lm_head.weight: tied to shared.weight"));
  CHECK_THAT(all, ContainsSubstring(
                      "dropped decoder.block.0.layer.1.EncDecAttention.relative_attention_bias."
                      "weight: transformers ignores it (cross-attention has no position bias)"));
  CHECK_THAT(all, ContainsSubstring("q projections x sqrt(d_kv) = 2.828427"));
  CHECK_THAT(all, ContainsSubstring("decoder.layer_norm.weight x d_model^-0.5"));
  // spiece.model beside the checkpoint is the tokenizer of both sides, unless --no-tokenizer.
  CHECK_THAT(all, ContainsSubstring("tokenizer: took " + CheckpointFixture("t5") +
                                    "/spiece.model: SentencePiece, 64 pieces, both sides"));
  CHECK_FALSE(c.source_tokenizer.empty());
  CHECK(c.target_tokenizer.empty());
  o.no_tokenizer = true;
  CHECK(BuildContents(o).source_tokenizer.empty());
}

TEST_CASE("T5 v1.1 config: gated-gelu, untied, head_dim, decoder layers of their own",
          "[architectures][t5]") {
  const TernContents c = BuildContents(Options("t5_v1_1/model.safetensors"));
  CHECK(c.config.d_model == 32);
  CHECK(c.config.heads == 3);
  CHECK(c.config.head_dim == 16);  // 3 x 16 = 48 != d_model
  CHECK(c.config.d_ff == 48);
  CHECK(c.config.encoder_layers == 2);
  CHECK(c.config.decoder_layers == 3);
  CHECK(c.config.activation == ref::Activation::kGeGLU);
  CHECK_FALSE(c.config.tied_output);
  CHECK(c.config.tgt_vocab_size == 72);
  CHECK(c.source_tokenizer.empty());  // no spiece.model beside it
  // 64 pieces serve a vocabulary of 72 rows (T5 pads 32000 pieces to 32128).
  ConvertOptions o = Options("t5_v1_1/model.safetensors");
  o.tokenizer = CheckpointFixture("t5/spiece.model");
  CHECK_FALSE(BuildContents(o).source_tokenizer.empty());
}

TEST_CASE("T5: --arch auto from model_type; mT5 converts with --arch mt5", "[architectures][t5]") {
  CHECK(BuildContents(Options("t5_v1_1/model.safetensors", DType::kF32, "auto")).config.heads == 3);
  testing::FixtureCopy copy("t5_v1_1/model.safetensors", "t5_v1_1/config.json", "mt5");
  copy.config["model_type"] = "mt5";
  copy.config["architectures"] = {"MT5ForConditionalGeneration"};
  ConvertOptions mt5 = copy.Write();
  CHECK(BuildContents(mt5).config.activation == ref::Activation::kGeGLU);
  mt5.arch = "auto";
  CHECK(BuildContents(mt5).config.heads == 3);
  mt5.arch = "t5";
  CHECK(ConvertError(mt5) == copy.config_path() +
                                 ": \"model_type\" is \"mt5\", not \"t5\" (convert it with --arch "
                                 "mt5)");
}

TEST_CASE("T5 configs and checkpoints: what tern does not compute is refused by name",
          "[architectures][t5]") {
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* message;  // after "<config.json path>: "
  };
  const Case cases[] = {
      {"feed_forward_proj", "gated-relu",
       "\"feed_forward_proj\" = \"gated-relu\" is not supported; tern computes \"relu\" (T5 "
       "v1.0) and \"gated-gelu\" (T5 v1.1, mT5, Flan-T5: wo(gelu_tanh(wi_0 x) * wi_1 x))"},
      {"feed_forward_proj", "gelu",
       "\"feed_forward_proj\" = \"gelu\" is not supported; tern computes \"relu\" (T5 v1.0) and "
       "\"gated-gelu\" (T5 v1.1, mT5, Flan-T5: wo(gelu_tanh(wi_0 x) * wi_1 x))"},
      {"feed_forward_proj", "gated-gelu-new",
       "\"feed_forward_proj\" = \"gated-gelu-new\" is not of the form \"ACT\" or \"gated-ACT\""},
      {"feed_forward_proj", "double-gelu",
       "\"feed_forward_proj\" = \"double-gelu\" is not of the form \"ACT\" or \"gated-ACT\""},
      {"is_gated_act", false,
       "\"is_gated_act\" = false contradicts \"feed_forward_proj\" = \"gated-gelu\""},
      {"dense_act_fn", "gelu",
       "\"dense_act_fn\" = \"gelu\" contradicts \"feed_forward_proj\" = \"gated-gelu\" (which "
       "means \"gelu_new\")"},
      {"is_encoder_decoder", false,
       "\"is_encoder_decoder\" is false: only the encoder-decoder T5 "
       "(T5ForConditionalGeneration) is supported"},
      {"model_type", "umt5", "\"model_type\" is \"umt5\", not \"t5\""},
      {"num_decoder_layers", 2,
       "3 layers (decoder.block.N) in the checkpoint, but {config} says \"num_decoder_layers\": "
       "2"},
  };
  for (const Case& c : cases) {
    INFO(c.key << " = " << c.value.dump());
    testing::FixtureCopy copy("t5_v1_1/model.safetensors", "t5_v1_1/config.json", "t5");
    copy.config[c.key] = c.value;
    const ConvertOptions o = copy.Write();
    std::string want = c.message;
    const size_t at = want.find("{config}");
    if (at != std::string::npos) {
      want.replace(at, 8, copy.config_path());
      CHECK(ConvertError(o) == o.checkpoint + ": " + want);
    } else {
      CHECK(ConvertError(o) == copy.config_path() + ": " + want);
    }
  }
  {
    testing::FixtureCopy copy("t5_v1_1/model.safetensors", "t5_v1_1/config.json", "t5");
    copy.tensors.erase("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) ==
          o.checkpoint +
              ": required tensor \"encoder.block.0.layer.0.SelfAttention.relative_attention_bias."
              "weight\" (encoder.relative_attention_bias.weight) is missing");
  }
  {
    // A bias table in a later block (per-layer biases, as umT5 has) is not T5's.
    testing::FixtureCopy copy("t5_v1_1/model.safetensors", "t5_v1_1/config.json", "t5");
    copy.tensors["decoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight"] =
        copy.tensors.at("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) ==
          o.checkpoint +
              ": unexpected tensor \"decoder.block.1.layer.0.SelfAttention.relative_attention_bias."
              "weight\" (not part of a T5 model with this config.json)");
  }
  {
    // Untied (v1.1) without lm_head.
    testing::FixtureCopy copy("t5_v1_1/model.safetensors", "t5_v1_1/config.json", "t5");
    copy.tensors.erase("lm_head.weight");
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) == o.checkpoint +
                                 ": required tensor \"lm_head.weight\" "
                                 "(output_projection.weight) is missing");
  }
  {
    // Tied, but lm_head differs from the embedding.
    testing::FixtureCopy copy("t5_v1_1/model.safetensors", "t5_v1_1/config.json", "t5");
    copy.config["tie_word_embeddings"] = true;
    const ConvertOptions o = copy.Write();
    CHECK(ConvertError(o) == o.checkpoint +
                                 ": tensor \"lm_head.weight\" differs from \"shared.weight\" "
                                 "although config tie_word_embeddings is true (transformers "
                                 "would replace it)");
  }
}

}  // namespace
}  // namespace tern::convert
