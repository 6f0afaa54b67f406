// --arch gpt2: the fixture (tests/fixtures/checkpoints/gpt2, made by
// tools/fixtures/make_gpt2_fixture.py with tools/model/gpt_torch.py) converts, and the
// decoder-only runtime matches its PyTorch logits within 1e-4 at every step (prompt prefilled,
// then one teacher-forced token per step) with identical greedy continuations, alone and as a
// batch, on the reference kernels and on XNNPACK; int8 loads and generates; a checkpoint without
// the "transformer." prefix converts the same; bad input names the tensor or field.
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

ConvertOptions Gpt2(DType dtype = DType::kF32) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("gpt2/pytorch_model.bin");
  o.arch = "gpt2";
  o.dtype = dtype;
  return o;
}

TEST_CASE("GPT-2 matches its PyTorch forward at every step, both backends",
          "[architectures][gpt2]") {
  const LmExpected e = testing::LoadLmExpected("gpt2/expected.safetensors");
  for (Backend backend : testing::Backends()) {
    testing::PreparedGenerator p;
    testing::PrepareConverted(&p, Gpt2(), backend, static_cast<int32_t>(e.batch), e);
    INFO(p.generator.backend_report());
    CHECK(testing::LogitError(tern::internal::decoder_only(p.generator), e) <= 1e-4f);
    testing::CheckGreedy(p.generator, e);
  }
}

TEST_CASE("GPT-2 int8 conversion loads and generates", "[architectures][gpt2]") {
  const LmExpected e = testing::LoadLmExpected("gpt2/expected.safetensors");
  for (Backend backend : testing::Backends()) {
    testing::PreparedGenerator p;
    testing::PrepareConverted(&p, Gpt2(DType::kI8), backend, 1, e);
    INFO(p.generator.backend_report());
    testing::CheckQuantized(p.generator, e, 1.0f);
  }
}

TEST_CASE("GPT-2 config is mapped from config.json", "[architectures][gpt2]") {
  const TernContents c = BuildContents(Gpt2());
  CHECK(c.config.architecture == Architecture::kDecoderOnly);
  CHECK(c.config.d_model == 32);
  CHECK(c.config.heads == 4);
  CHECK(c.config.decoder_layers == 2);
  CHECK(c.config.encoder_layers == 0);
  CHECK(c.config.d_ff == 128);  // n_inner null: 4 * n_embd
  CHECK(c.config.activation == ref::Activation::kGELUTanh);
  CHECK(c.config.norm_placement == NormPlacement::kPre);
  CHECK(c.config.position == PositionKind::kLearned);
  CHECK(c.config.tied_output);
  CHECK(c.config.src_vocab_size == 0);
  CHECK(c.config.tgt_vocab_size == 48);
  CHECK(c.config.max_positions == 32);
  CHECK(c.config.eos_id == 47);
  bool has_lm_head = false;
  for (const auto& t : c.tensors) has_lm_head = has_lm_head || t.name == "output_projection.weight";
  CHECK(!has_lm_head);
}

// The fixture as safetensors, to edit; strip_prefix: as GPT2Model (no "transformer.", no head).
struct Gpt2Copy : testing::FixtureCopy {
  explicit Gpt2Copy(bool strip_prefix = false)
      : FixtureCopy("gpt2/pytorch_model.bin", "gpt2/config.json", "gpt2",
                    strip_prefix ? "transformer." : "") {}
};

TEST_CASE("GPT-2 without the transformer. prefix (GPT2Model) converts the same",
          "[architectures][gpt2]") {
  Gpt2Copy copy(true);
  const TernContents a = BuildContents(copy.Write());
  const TernContents b = BuildContents(Gpt2());
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    CHECK(a.tensors[i].name == b.tensors[i].name);
    CHECK(a.tensors[i].data == b.tensors[i].data);
  }
}

TEST_CASE("GPT-2: missing, mis-shaped and unexpected tensors and config fields are named",
          "[architectures][gpt2]") {
  {
    Gpt2Copy copy;
    copy.tensors.erase("transformer.h.1.attn.c_attn.bias");
    CHECK_THAT(
        ConvertError(copy.Write()),
        ContainsSubstring("required tensor \"transformer.h.1.attn.c_attn.bias\" is missing"));
  }
  {
    Gpt2Copy copy;
    copy.tensors.erase("transformer.h.0.mlp.c_proj.weight");
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("\"transformer.h.0.mlp.c_proj.weight (Conv1D, transposed)\" "
                                 "(decoder.layers.0.fc2.weight) is missing"));
  }
  {
    Gpt2Copy copy;
    auto& w = copy.tensors["transformer.h.0.mlp.c_fc.weight"];
    std::swap(w.shape[0], w.shape[1]);  // nn.Linear's layout instead of Conv1D's
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring(
                   "\"transformer.h.0.mlp.c_fc.weight\" has shape [128, 32], expected [32, 128]"));
  }
  {
    Gpt2Copy copy;
    copy.tensors["transformer.h.0.attn.extra"] = {"F32", {2}, testing::Floats({1, 2})};
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("unexpected tensor \"transformer.h.0.attn.extra\""));
  }
  {
    Gpt2Copy copy;
    copy.config.erase("n_embd");
    CHECK_THAT(ConvertError(copy.Write()), ContainsSubstring("lacks \"n_embd\""));
  }
  {
    Gpt2Copy copy;
    copy.config["n_layer"] = 3;
    CHECK_THAT(ConvertError(copy.Write()), ContainsSubstring("\"n_layer\": 3"));
  }
  {
    Gpt2Copy copy;
    copy.config["activation_function"] = "quick_gelu";
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("\"activation_function\" = \"quick_gelu\""));
  }
  {
    Gpt2Copy copy;
    copy.config["n_head"] = 5;
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("\"n_head\" = 5 does not divide \"n_embd\" = 32"));
  }
  {
    Gpt2Copy copy;
    auto& lm = copy.tensors["lm_head.weight"];
    std::vector<float> values(lm.bytes.size() / 4, 0.5f);
    lm.bytes = testing::Floats(values);
    CHECK_THAT(ConvertError(copy.Write()),
               ContainsSubstring("\"lm_head.weight\" differs from \"transformer.wte.weight\""));
  }
  {
    Gpt2Copy copy;
    copy.config["tie_word_embeddings"] = false;  // lm_head becomes its own output projection
    std::vector<float> values(copy.tensors["lm_head.weight"].bytes.size() / 4, 0.25f);
    copy.tensors["lm_head.weight"].bytes = testing::Floats(values);
    const TernContents c = BuildContents(copy.Write());
    CHECK(!c.config.tied_output);
  }
}

}  // namespace
}  // namespace tern::convert
