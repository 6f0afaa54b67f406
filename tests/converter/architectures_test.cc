// Each architecture's fixture (a checkpoint in that layout, made by its own script with its own
// PyTorch forward) converts and matches the generator's outputs within 1e-4 in fp32, and its
// int8 / int4 conversions load and run.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "tests/converter/architecture_fixture.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::CheckpointFixture;

void ExpectParity(const ConvertOptions& options, const std::string& expected) {
  const testing::ExpectedOutputs e = testing::LoadExpected(CheckpointFixture(expected));
  const testing::ParityResult r = testing::RunParity(options, e);
  INFO("encoder error " << r.encoder_error << ", logit error " << r.logit_error << "; "
                        << r.greedy_detail);
  CHECK(r.encoder_error <= 1e-4f);
  CHECK(r.logit_error <= 1e-4f);
  CHECK(r.greedy_equal);
}

void ExpectQuantizedRuns(ConvertOptions options, const std::string& expected) {
  const testing::ExpectedOutputs e = testing::LoadExpected(CheckpointFixture(expected));
  for (DType dtype : {DType::kI8, DType::kI4}) {
    options.dtype = dtype;
    options.group_size = 8;
    const testing::ParityResult r = testing::RunParity(options, e);
    INFO(DTypeName(dtype) << ": logit error " << r.logit_error);
    CHECK(r.logit_error > 0.0f);  // really quantized
    CHECK(std::isfinite(r.logit_error));
    // int8 stays close; int4 on these tiny random matrices (rows of 16-64 values) may not.
    if (dtype == DType::kI8) CHECK(r.logit_error < 1.0f);
  }
}

ConvertOptions Marian(const std::string& checkpoint) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(checkpoint);
  o.arch = "marian";
  return o;
}

TEST_CASE("MarianMT pytorch_model.bin matches its PyTorch forward", "[architectures][marian]") {
  ExpectParity(Marian("marian/pytorch_model.bin"), "marian/expected.safetensors");
}

TEST_CASE("MarianMT sharded safetensors matches its PyTorch forward", "[architectures][marian]") {
  ExpectParity(Marian("marian/sharded/model.safetensors.index.json"),
               "marian/expected.safetensors");
}

TEST_CASE("MarianMT int8 and int4 conversions load and run", "[architectures][marian]") {
  ExpectQuantizedRuns(Marian("marian/pytorch_model.bin"), "marian/expected.safetensors");
}

TEST_CASE("MarianMT config is mapped from config.json", "[architectures][marian]") {
  const TernContents c = BuildContents(Marian("marian/pytorch_model.bin"));
  CHECK(c.config.d_model == 16);
  CHECK(c.config.heads == 2);
  CHECK(c.config.activation == ref::Activation::kSwish);
  CHECK(c.config.sinusoid_layout ==
        ref::SinusoidLayout::kSplitHalves);  // transformers' table, stored in the checkpoint
  CHECK(c.config.embedding_scale == 4.0f);
  CHECK(c.config.pad_id == 23);
  CHECK(c.config.decoder_start_id == 23);
  CHECK(c.config.eos_id == 0);
  CHECK(c.config.shared_embeddings);
  CHECK(c.config.tied_output);
  CHECK(c.config.max_positions == 64);
  CHECK(c.source_format == "torch-zip/marian");
}

ConvertOptions MarianNpz(const std::string& checkpoint) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(checkpoint);
  o.arch = "marian_npz";
  return o;
}

TEST_CASE("Marian C++ model.npz (post-LN, tied) matches its forward with the zero start vector",
          "[architectures][marian_npz]") {
  ExpectParity(MarianNpz("marian_npz/model.npz"), "marian_npz/expected.safetensors");
}

TEST_CASE("Marian C++ model.npz (pre-LN, untied, two vocabularies) matches its forward",
          "[architectures][marian_npz]") {
  ExpectParity(MarianNpz("marian_npz/pre/model.npz"), "marian_npz/pre/expected.safetensors");
}

TEST_CASE("Marian C++ model.npz int8 and int4 conversions load and run",
          "[architectures][marian_npz]") {
  ExpectQuantizedRuns(MarianNpz("marian_npz/model.npz"), "marian_npz/expected.safetensors");
  ExpectQuantizedRuns(MarianNpz("marian_npz/pre/model.npz"), "marian_npz/pre/expected.safetensors");
}

TEST_CASE("Marian C++ model.npz config comes from special:model.yml",
          "[architectures][marian_npz]") {
  const TernContents post = BuildContents(MarianNpz("marian_npz/model.npz"));
  CHECK(post.config.d_model == 16);
  CHECK(post.config.heads == 2);
  CHECK(post.config.encoder_layers == 2);
  CHECK(post.config.activation == ref::Activation::kSwish);
  CHECK(post.config.norm_placement == NormPlacement::kPost);
  CHECK(post.config.layer_norm_eps == 1e-6f);
  CHECK(post.config.sinusoid_layout == ref::SinusoidLayout::kConcatenated);
  CHECK(post.config.embedding_scale == 4.0f);
  // 24 Marian tokens + the appended zero start row.
  CHECK(post.config.src_vocab_size == 25);
  CHECK(post.config.tgt_vocab_size == 25);
  CHECK(post.config.decoder_start_id == 24);
  CHECK(post.config.pad_id == 24);
  CHECK(post.config.eos_id == 0);
  CHECK(post.config.unk_id == 1);
  CHECK(post.config.shared_embeddings);
  CHECK(post.config.tied_output);
  CHECK(post.source_format == "npz/marian_npz");
  const TernContents pre = BuildContents(MarianNpz("marian_npz/pre/model.npz"));
  CHECK(pre.config.norm_placement == NormPlacement::kPre);
  CHECK(pre.config.activation == ref::Activation::kReLU);
  CHECK(pre.config.src_vocab_size == 24);
  CHECK(pre.config.tgt_vocab_size == 21);
  CHECK(pre.config.decoder_start_id == 20);
  CHECK_FALSE(pre.config.shared_embeddings);
  CHECK_FALSE(pre.config.tied_output);
}

}  // namespace
}  // namespace tern::convert

namespace tern::convert {
namespace {

ConvertOptions NnTransformer() {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("nn_transformer/model.pt");
  o.arch = "nn_transformer";
  o.map = CheckpointFixture("nn_transformer/map.json");
  return o;
}

ConvertOptions NnTransformerPost() {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("nn_transformer_post/model.pt");
  o.arch = "nn_transformer";
  o.map = CheckpointFixture("nn_transformer_post/map.json");
  return o;
}

ConvertOptions Annotated() {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("annotated/model.pt");
  o.arch = "annotated";
  o.overrides_json = "{\"heads\": 2}";
  return o;
}

TEST_CASE("nn.Transformer's default (post-LN layers + final norms) matches its PyTorch forward",
          "[architectures][nn_transformer]") {
  const TernContents c = BuildContents(NnTransformerPost());
  CHECK(c.config.norm_placement == NormPlacement::kPost);
  CHECK(c.config.post_ln_final_norm);
  ExpectParity(NnTransformerPost(), "nn_transformer_post/expected.safetensors");
}

TEST_CASE("nn.Transformer (pre-LN, gelu, tutorial wrapper) matches its PyTorch forward",
          "[architectures][nn_transformer]") {
  ExpectParity(NnTransformer(), "nn_transformer/expected.safetensors");
}

TEST_CASE("nn.Transformer int8 and int4 conversions load and run",
          "[architectures][nn_transformer]") {
  ExpectQuantizedRuns(NnTransformer(), "nn_transformer/expected.safetensors");
}

TEST_CASE("nn.Transformer config comes from the weights and the map",
          "[architectures][nn_transformer]") {
  const TernContents c = BuildContents(NnTransformer());
  CHECK(c.config.d_model == 16);
  CHECK(c.config.encoder_layers == 2);
  CHECK(c.config.decoder_layers == 1);
  CHECK(c.config.d_ff == 32);
  CHECK(c.config.src_vocab_size == 20);
  CHECK(c.config.tgt_vocab_size == 22);
  CHECK_FALSE(c.config.shared_embeddings);
  CHECK_FALSE(c.config.tied_output);
  CHECK(c.config.norm_placement == NormPlacement::kPre);
  CHECK(c.config.activation == ref::Activation::kGELU);
  CHECK(c.config.max_positions == 64);  // rows of the verified position buffer
  CHECK(c.config.eos_id == 3);
}

TEST_CASE("The Annotated Transformer matches its PyTorch forward", "[architectures][annotated]") {
  ExpectParity(Annotated(), "annotated/expected.safetensors");
}

TEST_CASE("The Annotated Transformer int8 and int4 conversions load and run",
          "[architectures][annotated]") {
  ExpectQuantizedRuns(Annotated(), "annotated/expected.safetensors");
}

TEST_CASE("The Annotated Transformer config: std+eps LayerNorm, pre-LN, interleaved positions",
          "[architectures][annotated]") {
  const TernContents c = BuildContents(Annotated());
  CHECK(c.config.norm_kind == ref::NormKind::kLayerNormStdEps);
  CHECK(c.config.layer_norm_eps == 1e-6f);
  CHECK(c.config.norm_placement == NormPlacement::kPre);
  CHECK(c.config.sinusoid_layout == ref::SinusoidLayout::kInterleaved);
  CHECK(c.config.embedding_scale == 4.0f);
  CHECK(c.config.bos_id == 0);
  CHECK(c.config.eos_id == 1);
  CHECK(c.config.pad_id == 2);
  CHECK(c.config.max_positions == 64);
}

}  // namespace
}  // namespace tern::convert
