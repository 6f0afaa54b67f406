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
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/checkpoint_files.h"

namespace tern::convert {
namespace {

using Catch::Matchers::ContainsSubstring;
using testing::CheckpointFixture;

struct Gpt2Expected {
  int64_t batch = 0, prompt_stride = 0, max_new = 0, seq = 0, vocab = 0;
  std::vector<int32_t> prompts, prompt_lengths, greedy, greedy_lengths;
  std::vector<float> logits;  // [batch, seq, vocab] over prompt + greedy continuation
};

Gpt2Expected LoadGpt2Expected() {
  const SafetensorsFile f = SafetensorsFile::Read(CheckpointFixture("gpt2/expected.safetensors"));
  auto ints = [&](const std::string& name) {
    std::vector<int32_t> out;
    for (int64_t v : f.Ints(name)) out.push_back(static_cast<int32_t>(v));
    return out;
  };
  Gpt2Expected e;
  e.prompts = ints("prompt_ids");
  e.prompt_lengths = ints("prompt_lengths");
  e.greedy = ints("greedy_ids");
  e.greedy_lengths = ints("greedy_lengths");
  e.logits = f.Float("logits").values;
  e.batch = f.entries().at("prompt_ids").shape[0];
  e.prompt_stride = f.entries().at("prompt_ids").shape[1];
  e.max_new = f.entries().at("greedy_ids").shape[1];
  e.seq = f.entries().at("logits").shape[1];
  e.vocab = f.entries().at("logits").shape[2];
  return e;
}

ConvertOptions Gpt2(DType dtype = DType::kF32) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("gpt2/pytorch_model.bin");
  o.arch = "gpt2";
  o.dtype = dtype;
  return o;
}

std::vector<Backend> Backends() {
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  return {Backend::kReference, Backend::kXnnpack};
#else
  return {Backend::kReference};
#endif
}

struct Prepared {
  testing::AlignedBytes bytes;
  Model model;
  std::vector<uint8_t> arena;
  Generator generator;
};

void Prepare(Prepared* p, const ConvertOptions& options, Backend backend, int32_t batch,
             const Gpt2Expected& e) {
  p->bytes = testing::AlignedBytes(SerializeModel(BuildContents(options)));
  auto model = Model::Load(p->bytes.data(), p->bytes.size());
  INFO(model.status().message());
  REQUIRE(model.ok());
  p->model = model.value();
  Limits limits;
  limits.backend = backend;
  limits.max_batch = batch;
  limits.max_source_length = static_cast<int32_t>(e.prompt_stride);
  limits.max_target_length = static_cast<int32_t>(e.seq);
  auto need = Generator::RequiredArenaBytes(p->model, limits);
  INFO(need.status().message());
  REQUIRE(need.ok());
  p->arena.assign(need.value(), 0xCD);
  const Status s = p->generator.Prepare(p->model, limits, p->arena.data(), p->arena.size());
  INFO(s.message());
  REQUIRE(s.ok());
}

// Logits at every position of prompt + greedy continuation for every sequence, run as one batch:
// prefill, then teacher-forced steps (a sequence whose continuation is done is kFinished).
float LogitError(DecoderOnly& m, const Gpt2Expected& e) {
  float worst = 0.0f;
  auto compare = [&](const float* logits, int64_t b, int64_t position) {
    for (int64_t v = 0; v < e.vocab; ++v) {
      worst = std::max(worst, std::fabs(logits[b * e.vocab + v] -
                                        e.logits[(b * e.seq + position) * e.vocab + v]));
    }
  };
  const float* logits = nullptr;
  REQUIRE(m.Prefill(e.prompts.data(), e.prompt_stride, e.prompt_lengths.data(),
                    static_cast<int32_t>(e.batch), &logits)
              .ok());
  for (int64_t b = 0; b < e.batch; ++b) compare(logits, b, e.prompt_lengths[b] - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(e.batch));
  for (int64_t step = 0; step < e.max_new; ++step) {
    // Step `step` appends greedy token `step` (position prompt + step) of every sequence that has
    // one; the logits that follow are the expected ones at that position.
    bool any = false;
    for (int64_t b = 0; b < e.batch; ++b) {
      tokens[b] =
          step < e.greedy_lengths[b] ? e.greedy[b * e.max_new + step] : DecoderOnly::kFinished;
      any = any || tokens[b] != DecoderOnly::kFinished;
    }
    if (!any) break;
    const Status s = m.DecodeStep(tokens.data(), &logits);
    INFO(s.message());
    REQUIRE(s.ok());
    for (int64_t b = 0; b < e.batch; ++b) {
      if (tokens[b] != DecoderOnly::kFinished) compare(logits, b, e.prompt_lengths[b] + step);
    }
  }
  return worst;
}

TEST_CASE("GPT-2 matches its PyTorch forward at every step, both backends",
          "[architectures][gpt2]") {
  const Gpt2Expected e = LoadGpt2Expected();
  for (Backend backend : Backends()) {
    Prepared p;
    Prepare(&p, Gpt2(), backend, static_cast<int32_t>(e.batch), e);
    INFO(p.generator.backend_report());
    CHECK(LogitError(p.generator.decoder_only(), e) <= 1e-4f);
    // Greedy continuations: alone, then the whole batch at once.
    GenerationOptions options;
    options.max_new_tokens = static_cast<int32_t>(e.max_new);
    std::vector<int32_t> out(static_cast<size_t>(e.batch * e.max_new)),
        lengths(static_cast<size_t>(e.batch));
    for (int64_t b = 0; b < e.batch; ++b) {
      size_t n = 0;
      REQUIRE(p.generator
                  .Generate(Span<const int32_t>(e.prompts.data() + b * e.prompt_stride,
                                                static_cast<size_t>(e.prompt_lengths[b])),
                            Span<int32_t>(out.data(), static_cast<size_t>(e.max_new)), &n, options)
                  .ok());
      CHECK(std::vector<int32_t>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n)) ==
            std::vector<int32_t>(e.greedy.begin() + b * e.max_new,
                                 e.greedy.begin() + b * e.max_new + e.greedy_lengths[b]));
    }
    REQUIRE(p.generator
                .Generate(e.prompts.data(), e.prompt_stride, e.prompt_lengths.data(),
                          static_cast<int32_t>(e.batch), options, out.data(), e.max_new,
                          lengths.data())
                .ok());
    for (int64_t b = 0; b < e.batch; ++b) {
      INFO("batch row " << b);
      CHECK(std::vector<int32_t>(out.begin() + b * e.max_new,
                                 out.begin() + b * e.max_new + lengths[b]) ==
            std::vector<int32_t>(e.greedy.begin() + b * e.max_new,
                                 e.greedy.begin() + b * e.max_new + e.greedy_lengths[b]));
    }
  }
}

TEST_CASE("GPT-2 int8 conversion loads and generates", "[architectures][gpt2]") {
  const Gpt2Expected e = LoadGpt2Expected();
  for (Backend backend : Backends()) {
    Prepared p;
    Prepare(&p, Gpt2(DType::kI8), backend, 1, e);
    INFO(p.generator.backend_report());
    Gpt2Expected first = e;  // the first prompt alone (a batch-1 session)
    first.batch = 1;
    const float error = LogitError(p.generator.decoder_only(), first);
    CHECK(error > 0.0f);  // really quantized
    CHECK(error < 1.0f);
    std::vector<int32_t> out(8);
    size_t n = 0;
    GenerationOptions options;
    options.stop_at_eos = false;
    options.sampling.temperature = 0.8f;
    options.sampling.top_k = 10;
    options.sampling.seed = 4;
    REQUIRE(p.generator
                .Generate(
                    Span<const int32_t>(e.prompts.data(), static_cast<size_t>(e.prompt_lengths[0])),
                    Span<int32_t>(out.data(), out.size()), &n, options)
                .ok());
    CHECK(n == 8);
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

// The fixture's tensors as float32 safetensors (optionally renamed), edited, with an edited config.
struct Gpt2Copy {
  testing::ScratchDir dir;
  std::map<std::string, testing::RawTensor> tensors;
  nlohmann::json config;

  explicit Gpt2Copy(bool strip_prefix = false) {
    const Checkpoint ckpt = Checkpoint::Open(CheckpointFixture("gpt2/pytorch_model.bin"));
    for (const auto& kv : ckpt.tensors()) {
      std::string name = kv.first;
      if (strip_prefix && name.compare(0, 12, "transformer.") == 0) name = name.substr(12);
      if (strip_prefix && name == "lm_head.weight") continue;  // GPT2Model has no LM head
      if (kv.second.dtype == SourceDType::kBool) {
        tensors[name] = {"BOOL", kv.second.shape,
                         std::string(static_cast<size_t>(kv.second.elements()), '\1')};
        continue;
      }
      const HostTensor t = ckpt.Float(kv.first);
      tensors[name] = {"F32", t.shape, testing::Floats(t.values)};
    }
    config = nlohmann::json::parse(testing::ReadBytes(CheckpointFixture("gpt2/config.json")));
  }
  ConvertOptions Write() {
    testing::WriteRawSafetensors(dir / "model.safetensors", tensors);
    testing::WriteBytes(dir / "config.json", config.dump(2));
    ConvertOptions o;
    o.checkpoint = dir / "model.safetensors";
    o.arch = "gpt2";
    return o;
  }
};

std::string ConvertError(const ConvertOptions& o) {
  try {
    BuildContents(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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
