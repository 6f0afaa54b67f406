// Hugging Face M2M100 and NLLB-200 (converter/architectures/m2m100.cc): the fixtures
// (tools/fixtures/make_m2m100_fixture.py, reference tools/model/m2m100_torch.py) convert and match
// their PyTorch forward within 1e-4, alone and batched, on both backends, with identical greedy
// ids when the target language is forced as the first target token; int8 and int4 greedy ids are
// pinned. Config fields tern does not implement are refused by name.
//   nllb    model.safetensors as save_pretrained writes it (no tied copies, no position buffer),
//           relu, scale_embedding, tied output, tokenizer_class NllbTokenizer
//   m2m100  pytorch_model.bin with the tied embed_tokens copies and the position buffers of
//           older checkpoints, gelu, scale_embedding false, its own lm_head
#include <catch2/catch_test_macros.hpp>
#include <cmath>

#include "converter/architectures/architecture.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/fixture_copy.h"

namespace tern::convert {
namespace {

using testing::AlignedBytes;
using testing::CheckpointFixture;
using testing::ConvertError;

struct Family {
  const char* checkpoint;
  const char* arch;
  // Greedy ids of sentence 0 (eng_Latn forced) after int8 / int4 conversion (group size 8), on
  // the reference kernels and on XNNPACK: pinned (XNNPACK quantizes the activations too).
  std::vector<int32_t> int8_reference, int8_xnnpack, int4_reference, int4_xnnpack;
};

const Family kFamilies[] = {
    {"nllb/model.safetensors",
     "nllb",
     {7, 7, 45, 45, 45, 45, 45, 45, 45, 45},
     {7, 7, 45, 45, 45, 45, 45, 45, 45, 45},
     {92, 92, 92, 92, 92, 92, 92, 92, 92, 92},
     {92, 92, 92, 92, 92, 92, 92, 92, 92, 92}},
    {"m2m100/pytorch_model.bin",
     "m2m100",
     {75, 75, 42, 42, 42, 42, 42, 42, 42, 42},
     {75, 75, 19, 63, 63, 63, 63, 63, 63, 63},
     {75, 45, 37, 88, 86, 15, 48, 48, 64, 42},
     {75, 45, 37, 88, 86, 15, 48, 48, 64, 42}},
};

std::string Dir(const Family& f) {
  const std::string c = f.checkpoint;
  return c.substr(0, c.find('/'));
}

ConvertOptions Options(const Family& f, DType dtype = DType::kF32) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(f.checkpoint);
  o.arch = f.arch;
  o.dtype = dtype;
  o.group_size = dtype == DType::kF32 ? 0 : 8;
  return o;
}

TEST_CASE(
    "NLLB and M2M100 match PyTorch with the target language forced, alone and batched, "
    "both backends",
    "[architectures][m2m100][nllb]") {
  for (const Family& f : kFamilies) {
    INFO(f.checkpoint);
    const testing::ExpectedOutputs e =
        testing::LoadExpected(CheckpointFixture(Dir(f) + "/expected.safetensors"));
    REQUIRE(e.forced_bos_id == 98);  // eng_Latn
    for (Backend backend : testing::Backends()) {
      INFO("backend " << static_cast<int>(backend));
      const testing::ParityResult r = testing::RunParity(Options(f), e, backend);
      INFO("encoder error " << r.encoder_error << ", logit error " << r.logit_error << "; "
                            << r.greedy_detail);
      CHECK(r.encoder_error <= 1e-4f);
      CHECK(r.logit_error <= 1e-4f);
      CHECK(r.greedy_equal);
    }
  }
}

TEST_CASE("NLLB and M2M100: int8 and int4 greedy ids are pinned", "[architectures][m2m100][nllb]") {
  for (const Family& f : kFamilies) {
    INFO(f.checkpoint);
    testing::ExpectedOutputs e =
        testing::LoadExpected(CheckpointFixture(Dir(f) + "/expected.safetensors"));
    for (DType dtype : {DType::kI8, DType::kI4}) {
      for (Backend backend : testing::Backends()) {
        INFO(DTypeName(dtype) << ", backend " << static_cast<int>(backend));
        const TernContents contents = BuildContents(Options(f, dtype));
        AlignedBytes bytes(SerializeModel(contents));
        auto model = Model::Load(bytes.data(), bytes.size());
        REQUIRE(model.ok());
        Limits limits;
        limits.backend = backend;
        limits.max_source_length = static_cast<int32_t>(e.src_seq);
        limits.max_target_length = static_cast<int32_t>(e.max_len + 1);
        std::vector<uint8_t> arena(Session::RequiredArenaBytes(model.value(), limits).value());
        Session session;
        REQUIRE(session.Prepare(model.value(), limits, arena.data(), arena.size()).ok());
        DecodingOptions options;
        options.forced_bos_id = e.forced_bos_id;
        std::vector<int32_t> out(static_cast<size_t>(e.max_len));
        size_t n = 0;
        REQUIRE(session
                    .TranslateIds(Span<const int32_t>(e.src_ids.data(),
                                                      static_cast<size_t>(e.src_lengths[0])),
                                  Span<int32_t>(out.data(), out.size()), &n, options)
                    .ok());
        out.resize(n);
        const bool reference = backend == Backend::kReference;
        std::string got;
        for (int32_t v : out) got += std::to_string(v) + ", ";
        INFO("got {" << got << "}");
        CHECK(out == (dtype == DType::kI8 ? (reference ? f.int8_reference : f.int8_xnnpack)
                                          : (reference ? f.int4_reference : f.int4_xnnpack)));
      }
    }
  }
}

TEST_CASE("NLLB and M2M100 configs: pre-LN, fairseq positions from pad + 1, ids, tying",
          "[architectures][m2m100][nllb]") {
  const TernContents n = BuildContents(Options(kFamilies[0]));
  CHECK(n.config.d_model == 32);
  CHECK(n.config.heads == 4);
  CHECK(n.config.encoder_layers == 2);
  CHECK(n.config.d_ff == 64);
  CHECK(n.config.norm_placement == NormPlacement::kPre);
  CHECK(n.config.activation == ref::Activation::kReLU);
  CHECK(n.config.position == PositionKind::kSinusoidal);
  CHECK(n.config.sinusoid_layout == ref::SinusoidLayout::kFairseq);
  CHECK(n.config.embedding_scale == std::sqrt(32.0f));
  CHECK(n.config.bos_id == 0);
  CHECK(n.config.pad_id == 1);
  CHECK(n.config.eos_id == 2);
  CHECK(n.config.unk_id == 3);
  CHECK(n.config.decoder_start_id == 2);
  CHECK(n.config.src_vocab_size == 102);
  CHECK(n.config.shared_embeddings);
  CHECK(n.config.tied_output);
  CHECK(n.config.max_positions == 64);
  CHECK(FormatMinor(n) == 8);  // the vocabulary map of the sentencepiece.bpe.model beside it
  TernContents ids_only = n;
  ids_only.vocabulary_map.clear();
  ids_only.source_tokenizer.clear();
  CHECK(FormatMinor(ids_only) == 7);  // sinusoid_layout fairseq
  const TernContents m = BuildContents(Options(kFamilies[1]));
  CHECK(m.config.activation == ref::Activation::kGELU);
  CHECK(m.config.embedding_scale == 1.0f);
  CHECK(m.config.shared_embeddings);
  CHECK_FALSE(m.config.tied_output);
  CHECK(m.source_format == "torch-zip/m2m100");
}

TEST_CASE("Auto-detected arch: model_type m2m100 is m2m100, or nllb with NLLB's tokenizer_class",
          "[architectures][m2m100][nllb]") {
  testing::FixtureCopy copy("nllb/model.safetensors", "nllb/config.json", "auto");
  auto detected = [&copy] {
    ArchitectureOptions a;
    a.checkpoint = copy.Write().checkpoint;
    return DetectArchitecture(a);
  };
  CHECK(detected() == "nllb");
  copy.config["tokenizer_class"] = "NllbTokenizerFast";
  CHECK(detected() == "nllb");
  copy.config.erase("tokenizer_class");
  CHECK(detected() == "m2m100");
  copy.config.erase("model_type");  // architectures: M2M100ForConditionalGeneration
  CHECK(detected() == "m2m100");
  CHECK(BuildContents(copy.Write()).config.sinusoid_layout == ref::SinusoidLayout::kFairseq);
}

TEST_CASE("M2M100 / NLLB config fields tern does not implement are refused by name",
          "[architectures][m2m100][nllb]") {
  testing::FixtureCopy copy("nllb/model.safetensors", "nllb/config.json", "nllb");
  const std::string at = copy.config_path() + ": ";
  auto refused = [&](const char* key, const nlohmann::json& value) {
    const nlohmann::json saved = copy.config.contains(key) ? copy.config[key] : nlohmann::json();
    copy.config[key] = value;
    const std::string message = ConvertError(copy.Write());
    if (saved.is_null()) {
      copy.config.erase(key);
    } else {
      copy.config[key] = saved;
    }
    return message;
  };
  CHECK(refused("activation_function", "tanh") ==
        at + "\"activation_function\" = \"tanh\" is not supported; expected swish, silu, gelu, "
             "relu or gelu_new");
  CHECK(refused("decoder_attention_heads", 2) ==
        at + "encoder_attention_heads 4 != decoder_attention_heads 2; the runtime uses one head "
             "count");
  CHECK(refused("decoder_ffn_dim", 32) ==
        at + "encoder_ffn_dim 64 != decoder_ffn_dim 32; the runtime uses one d_ff");
  CHECK(refused("model_type", "nllb-moe") ==
        at + "\"model_type\" is \"nllb-moe\": NLLB-MoE (mixture-of-experts layers) is not "
             "supported");
  CHECK(refused("model_type", "bart") == at + "\"model_type\" is \"bart\", not \"m2m100\"");
  CHECK(refused("num_experts", 4) ==
        at + "\"num_experts\" belongs to NLLB-MoE (mixture-of-experts layers), which is not "
             "supported");
  // LayerDrop is a training-time rule (whole layers skipped at random): inference ignores it.
  const ConvertOptions o = copy.Write();
  ArchitectureOptions a;
  a.checkpoint = o.checkpoint;
  a.arch = "nllb";
  const MappedCheckpoint mapped = MapCheckpoint(Checkpoint::Open(o.checkpoint), a);
  bool noted = false;
  for (const auto& note : mapped.notes)
    noted = noted || note.find("ignored encoder_layerdrop") == 0;
  CHECK(noted);
}

TEST_CASE("A forced first token outside the target vocabulary is refused",
          "[architectures][m2m100][nllb]") {
  const TernContents contents = BuildContents(Options(kFamilies[0]));
  AlignedBytes bytes(SerializeModel(contents));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.max_source_length = limits.max_target_length = 8;
  std::vector<uint8_t> arena(Session::RequiredArenaBytes(model.value(), limits).value());
  Session session;
  REQUIRE(session.Prepare(model.value(), limits, arena.data(), arena.size()).ok());
  const int32_t src[] = {97, 10, 2};
  int32_t out[8];
  size_t n = 0;
  DecodingOptions options;
  options.forced_bos_id = 102;
  const Status s =
      session.TranslateIds(Span<const int32_t>(src, 3), Span<int32_t>(out, 8), &n, options);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) ==
        "options.forced_bos_id = 102; -1 (the model's, if any) or a target id below 102");
}

}  // namespace
}  // namespace tern::convert

namespace tern::convert {
namespace {

Result<Model> LoadContents(const TernContents& contents, testing::AlignedBytes* bytes) {
  *bytes = testing::AlignedBytes(SerializeModel(contents));
  return Model::Load(bytes->data(), bytes->size());
}

TEST_CASE("NLLB and M2M100 language codes are stored in the file (format 1.7) and looked up",
          "[architectures][m2m100][nllb][languages]") {
  const TernContents n = BuildContents(Options(kFamilies[0]));
  REQUIRE(n.languages.size() == 4);
  CHECK(FormatMinor(n) == 8);  // the sentencepiece.bpe.model beside it has a vocabulary map
  TernContents no_map = n;
  no_map.vocabulary_map.clear();
  no_map.source_tokenizer.clear();
  CHECK(FormatMinor(no_map) == 7);
  testing::AlignedBytes bytes;
  auto model = LoadContents(n, &bytes);
  REQUIRE(model.ok());
  REQUIRE(model->language_count() == 4);
  CHECK(std::string(model->language_code(0)) == "deu_Latn");
  CHECK(model->language_token(0) == 97);
  int32_t token = -1;
  REQUIRE(model->LanguageToken("eng_Latn", &token).ok());
  CHECK(token == 98);
  REQUIRE(model->LanguageToken("spa_Latn", &token).ok());
  CHECK(token == 100);
  Status s = model->LanguageToken("eng_Latm", &token);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()) ==
        "unknown language code \"eng_Latm\"; nearest known: eng_Latn, deu_Latn, fra_Latn");
  // M2M100 writes __de__; the code is de.
  const TernContents m = BuildContents(Options(kFamilies[1]));
  testing::AlignedBytes m_bytes;
  auto m_model = LoadContents(m, &m_bytes);
  REQUIRE(m_model.ok());
  REQUIRE(m_model->LanguageToken("fr", &token).ok());
  CHECK(token == 99);
  s = m_model->LanguageToken("__fr__", &token);
  CHECK(std::string(s.message()) == "unknown language code \"__fr__\"; nearest known: fr, de, en");
  // A model without a table.
  TernContents plain = n;
  plain.languages.clear();
  plain.vocabulary_map.clear();
  plain.source_tokenizer.clear();
  CHECK(FormatMinor(plain) == 7);  // still the fairseq positions
  testing::AlignedBytes p_bytes;
  auto p_model = LoadContents(plain, &p_bytes);
  REQUIRE(p_model.ok());
  CHECK(p_model->language_count() == 0);
  s = p_model->LanguageToken("eng_Latn", &token);
  CHECK(s.code() == StatusCode::kFailedPrecondition);
  CHECK(std::string(s.message()) ==
        "this model has no language table (convert a multilingual model with its "
        "tokenizer_config.json)");
}

TEST_CASE(
    "The loader refuses a language table with a token outside the vocabulary or repeated "
    "codes",
    "[architectures][nllb][languages]") {
  TernContents c = BuildContents(Options(kFamilies[0]));
  testing::AlignedBytes bytes;
  auto refusal = [&](std::vector<std::pair<std::string, int32_t>> languages) {
    c.languages = std::move(languages);
    auto model = LoadContents(c, &bytes);
    if (model.ok()) return std::string("loaded");
    CHECK(model.status().code() == StatusCode::kInvalidModel);
    return std::string(model.status().message());
  };
  CHECK(refusal({{"xx", 102}}) == "languages[0] \"xx\": token 102 is outside the vocabulary (102)");
  CHECK(refusal({{"xx", 5}, {"xx", 6}}) == "languages[1] \"xx\": codes must be sorted and unique");
  CHECK(refusal({{"", 5}}) == "languages[0]: empty code");
  CHECK(refusal({{"xx", 101}}) == "loaded");
}

TEST_CASE("tokenizer_config.json language tokens are checked by name",
          "[architectures][nllb][languages]") {
  testing::FixtureCopy copy("nllb/model.safetensors", "nllb/config.json", "nllb");
  nlohmann::json tok =
      nlohmann::json::parse(testing::ReadBytes(CheckpointFixture("nllb/tokenizer_config.json")));
  const std::string path = copy.dir / "tokenizer_config.json";
  tok["additional_special_tokens"].push_back("zul_Latn");
  testing::WriteBytes(path, tok.dump());
  CHECK(ConvertError(copy.Write()) ==
        path + ": language token \"zul_Latn\" has no id in added_tokens_decoder");
  tok["added_tokens_decoder"]["102"] = {{"content", "zul_Latn"}};
  testing::WriteBytes(path, tok.dump());
  CHECK(ConvertError(copy.Write()) ==
        path + ": language token \"zul_Latn\" has id 102, outside the vocabulary (102)");
}

}  // namespace
}  // namespace tern::convert
