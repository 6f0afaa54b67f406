// Hugging Face BART and mBART (converter/architectures/bart.cc): the fixtures
// (tools/fixtures/make_bart_fixture.py, reference tools/model/bart_torch.py) convert with --arch
// bart / mbart (and --arch auto), match the reference's encoder outputs and logits within 1e-4 at
// every step with identical greedy ids, alone and batched, on both backends; int8 and int4
// greedy ids are pinned. Config fields tern does not implement are refused by name.
//   bart   model.safetensors without tied copies; post-LN, no embedding scale
//   mbart  pytorch_model.bin with its tied copies; pre-LN + final norms, sqrt(d) scale
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <fstream>
#include <sstream>

#include "runtime/tokenizer/bpe_tokenizer.h"
#include "tern/tern.h"
#include "tests/converter/architecture_fixture.h"
#include "tests/converter/fixture_copy.h"

namespace tern::convert {
namespace {

using testing::CheckpointFixture;
using testing::ConvertError;

struct Family {
  const char* checkpoint;
  const char* expected;
  const char* arch;
  // Greedy ids of the fixture's sentences (each ended by -1) after int8 / int4 conversion, on
  // the reference kernels and on XNNPACK's backend (which also quantizes activations per row;
  // int4 here is in blocks of 8, which XNNPACK has no operator for: vectorized/linear_qd8.h,
  // the same float roundings on every CPU): pinned. The random fixture's top logits are close,
  // so quantizing x moves a few ids.
  std::vector<int32_t> int8_reference, int8_xnnpack, int4_reference, int4_xnnpack;
};

const Family kFamilies[] = {
    {"bart/model.safetensors",
     "bart/expected.safetensors",
     "bart",
     {156, 156, 156, 156, 156, 156, 156, 156, 156, -1,  200, 200, 200, 200, 200,
      200, 200, 200, 200, -1,  156, 156, 156, 156, 156, 156, 274, 156, 274, -1},
     {156, 156, 156, 156, 156, 156, 156, 156, 156, -1,  200, 200, 200, 200, 200,
      200, 200, 200, 200, -1,  156, 156, 156, 156, 156, 156, 156, 156, 274, -1},
     {200, 200, 200, 200, 200, 200, 200, 200, 200, -1,  156, 156, 156, 156, 156,
      156, 274, 274, 274, -1,  274, 274, 274, 274, 274, 274, 274, 274, 274, -1},
     {200, 200, 200, 200, 200, 200, 200, 200, 200, -1,  156, 156, 156, 156, 156,
      156, 156, 156, 274, -1,  274, 274, 274, 274, 274, 274, 274, 274, 274, -1}},
    {"mbart/pytorch_model.bin",
     "mbart/expected.safetensors",
     "mbart",
     {90, 90, 90, 90, 90, 100, 100, 100, 100, 100, -1, 31, 31, 31, 31, 31, 31,
      31, 31, 10, 10, -1, 54,  54,  54,  54,  54,  54, 54, 54, 54, 54, -1},
     {90, 90, 90, 90, 90, 100, 100, 100, 100, 100, -1, 31, 31, 31, 31, 31, 31,
      31, 10, 10, 10, -1, 54,  54,  54,  54,  54,  54, 54, 54, 54, 54, -1},
     {90, 90, 90, 90, 90, 90, 90, 90, 90, 90, -1, 31, 31, 26, 26, 26, 26,
      26, 26, 26, 26, -1, 54, 54, 54, 54, 54, 54, 54, 54, 54, 54, -1},
     {90, 90, 90, 90, 90, 90, 90, 90, 90, 90, -1, 31, 31, 26, 26, 26, 26,
      26, 26, 26, 26, -1, 54, 54, 54, 54, 54, 54, 54, 54, 54, 54, -1}},
};

ConvertOptions Options(const Family& f, const char* arch = nullptr) {
  ConvertOptions o;
  o.checkpoint = CheckpointFixture(f.checkpoint);
  o.arch = arch != nullptr ? arch : f.arch;
  o.no_tokenizer = true;
  return o;
}

TEST_CASE("BART and mBART match their PyTorch reference, alone and batched, both backends",
          "[architectures][bart]") {
  for (const Family& f : kFamilies) {
    const testing::ExpectedOutputs e = testing::LoadExpected(CheckpointFixture(f.expected));
    for (const char* arch : {f.arch, "auto"}) {
      for (Backend backend : testing::Backends()) {
        INFO(f.checkpoint << " --arch " << arch << ", backend " << static_cast<int>(backend));
        const testing::ParityResult r = testing::RunParity(Options(f, arch), e, backend);
        INFO("encoder error " << r.encoder_error << ", logit error " << r.logit_error << "; "
                              << r.greedy_detail);
        CHECK(r.encoder_error <= 1e-4f);
        CHECK(r.logit_error <= 1e-4f);
        CHECK(r.greedy_equal);
      }
    }
  }
}

TEST_CASE("mBART with a target-language token forced per call matches its reference",
          "[architectures][bart]") {
  // expected.safetensors also holds the reference's greedy ids with forced_bos (mBART-50's
  // target language: the first generated token, log-probability 0).
  const std::string path = CheckpointFixture("mbart/expected.safetensors");
  const testing::ExpectedOutputs e = testing::LoadExpected(path);
  const SafetensorsFile f = SafetensorsFile::Read(path);
  const int32_t forced = testing::Int32s(f, "forced_bos")[0];
  const std::vector<int32_t> want_ids = testing::Int32s(f, "forced_greedy_ids");
  const std::vector<int32_t> want_lengths = testing::Int32s(f, "forced_greedy_lengths");
  testing::AlignedBytes bytes(SerializeModel(BuildContents(Options(kFamilies[1]))));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  for (Backend backend : testing::Backends()) {
    INFO("backend " << static_cast<int>(backend));
    Limits limits;
    limits.backend = backend;
    limits.max_batch = static_cast<int32_t>(e.batch);
    limits.beam_size = 2;
    limits.max_source_length = static_cast<int32_t>(e.src_seq);
    // The reference counts the forced token among its max_len; tern gives it a decoder
    // position but does not write it: the expected ids without their first.
    limits.max_target_length = static_cast<int32_t>(e.max_len);
    auto need = Session::RequiredArenaBytes(model.value(), limits);
    REQUIRE(need.ok());
    std::vector<uint8_t> arena(need.value());
    Session session;
    REQUIRE(session.Prepare(model.value(), limits, arena.data(), arena.size()).ok());
    DecodingOptions options;
    options.forced_bos_id = forced;
    std::vector<int32_t> want_lengths_after(want_lengths);
    for (int64_t b = 0; b < e.batch; ++b) {
      REQUIRE(want_ids[static_cast<size_t>(b * e.max_len)] == forced);
      --want_lengths_after[static_cast<size_t>(b)];
    }
    auto want = [&](int64_t b) {
      return std::vector<int32_t>(want_ids.begin() + b * e.max_len + 1,
                                  want_ids.begin() + b * e.max_len + want_lengths[b]);
    };
    std::vector<int32_t> ids(static_cast<size_t>(e.batch * e.max_len));
    std::vector<int32_t> lengths(static_cast<size_t>(e.batch));
    // Batched, then each sentence alone.
    REQUIRE(session
                .TranslateIds(e.src_ids.data(), e.src_seq, e.src_lengths.data(),
                              static_cast<int32_t>(e.batch), options, ids.data(), e.max_len,
                              lengths.data())
                .ok());
    CHECK(lengths == want_lengths_after);
    for (int64_t b = 0; b < e.batch; ++b) {
      INFO("sentence " << b);
      CHECK(std::vector<int32_t>(ids.begin() + b * e.max_len,
                                 ids.begin() + b * e.max_len + lengths[b]) == want(b));
      size_t n = 0;
      REQUIRE(session
                  .TranslateIds(Span<const int32_t>(e.src_ids.data() + b * e.src_seq,
                                                    static_cast<size_t>(e.src_lengths[b])),
                                Span<int32_t>(ids.data(), static_cast<size_t>(e.max_len)), &n,
                                options)
                  .ok());
      CHECK(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n)) ==
            want(b));
    }
    // Beam search starts from the forced token too (not written to the output either).
    options.beam_size = 2;
    size_t n = 0;
    REQUIRE(session
                .TranslateIds(
                    Span<const int32_t>(e.src_ids.data(), static_cast<size_t>(e.src_lengths[0])),
                    Span<int32_t>(ids.data(), static_cast<size_t>(e.max_len)), &n, options)
                .ok());
    REQUIRE(n > 0);
    CHECK(ids[0] != forced);
    // A token outside the target vocabulary is refused by name.
    options.beam_size = 1;
    options.forced_bos_id = 120;
    const Status s = session.TranslateIds(
        Span<const int32_t>(e.src_ids.data(), static_cast<size_t>(e.src_lengths[0])),
        Span<int32_t>(ids.data(), static_cast<size_t>(e.max_len)), &n, options);
    CHECK(std::string(s.message()) ==
          "options.forced_bos_id = 120; -1 (the model's, if any) or a target id below 120");
  }
}

// Greedy ids of every sentence of `e`, one at a time, each followed by -1, with the model
// `options` converts.
std::vector<int32_t> AllGreedy(const ConvertOptions& options, const testing::ExpectedOutputs& e,
                               Backend backend) {
  testing::AlignedBytes bytes(SerializeModel(BuildContents(options)));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = backend;
  limits.max_source_length = static_cast<int32_t>(e.src_seq);
  limits.max_target_length = static_cast<int32_t>(e.max_len);
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  REQUIRE(need.ok());
  std::vector<uint8_t> arena(need.value());
  Session session;
  REQUIRE(session.Prepare(model.value(), limits, arena.data(), arena.size()).ok());
  std::vector<int32_t> all;
  for (int64_t b = 0; b < e.batch; ++b) {
    std::vector<int32_t> out(static_cast<size_t>(e.max_len));
    size_t n = 0;
    REQUIRE(session
                .TranslateIds(Span<const int32_t>(e.src_ids.data() + b * e.src_seq,
                                                  static_cast<size_t>(e.src_lengths[b])),
                              Span<int32_t>(out.data(), out.size()), &n)
                .ok());
    all.insert(all.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n));
    all.push_back(-1);
  }
  return all;
}

std::string Ids(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  for (int32_t v : ids) s << v << ", ";
  return s.str();
}

TEST_CASE("BART and mBART: int8 and int4 run and their greedy ids are pinned",
          "[architectures][bart]") {
  for (const Family& f : kFamilies) {
    const testing::ExpectedOutputs e = testing::LoadExpected(CheckpointFixture(f.expected));
    for (DType dtype : {DType::kI8, DType::kI4}) {
      ConvertOptions o = Options(f);
      o.dtype = dtype;
      o.group_size = 8;
      const testing::ParityResult r = testing::RunParity(o, e);
      INFO(f.checkpoint << " " << DTypeName(dtype) << ": logit error " << r.logit_error);
      CHECK(r.logit_error > 0.0f);  // really quantized
      CHECK(std::isfinite(r.logit_error));
      if (dtype == DType::kI8) CHECK(r.logit_error < 1.0f);
      for (Backend backend : testing::Backends()) {
        const std::vector<int32_t> got = AllGreedy(o, e, backend);
        const bool reference = backend == Backend::kReference;
        INFO("backend " << static_cast<int>(backend) << ": " << Ids(got));
        CHECK(got == (dtype == DType::kI8 ? (reference ? f.int8_reference : f.int8_xnnpack)
                                          : (reference ? f.int4_reference : f.int4_xnnpack)));
      }
    }
  }
}

TEST_CASE("BART and mBART configs are mapped from config.json", "[architectures][bart]") {
  const TernContents bart = BuildContents(Options(kFamilies[0]));
  CHECK(bart.config.norm_placement == NormPlacement::kPost);
  CHECK(bart.config.layernorm_embedding);
  CHECK(bart.config.position == PositionKind::kLearned);
  CHECK(bart.config.max_positions == 64);
  CHECK(bart.config.activation == ref::Activation::kGELU);
  CHECK(bart.config.embedding_scale == 1.0f);
  CHECK(bart.config.tgt_vocab_size == 300);
  CHECK(bart.config.decoder_start_id == 2);
  CHECK(bart.config.pad_id == 1);
  CHECK(bart.config.eos_id == 2);
  CHECK(bart.config.unk_id == 3);
  CHECK(bart.config.forced_bos_id == 0);  // bart-large's <s> after the </s> it starts from
  CHECK(bart.config.shared_embeddings);
  CHECK(bart.config.tied_output);
  CHECK(bart.source_format == "safetensors/bart");
  const TernContents mbart = BuildContents(Options(kFamilies[1]));
  CHECK(mbart.config.norm_placement == NormPlacement::kPre);
  CHECK(mbart.config.layernorm_embedding);
  CHECK(mbart.config.embedding_scale == static_cast<float>(std::sqrt(32.0)));
  CHECK(mbart.config.tgt_vocab_size == 120);
  CHECK(mbart.config.forced_bos_id == -1);
  CHECK(mbart.source_format == "torch-zip/mbart");
  // The learned tables lose their two offset rows.
  for (const auto& t : bart.tensors) {
    if (t.name == "encoder.embed_positions.weight") CHECK(t.shape == std::vector<int64_t>{64, 32});
  }
}

TEST_CASE("BART translates text through the C API with its byte-level BPE tokenizer",
          "[architectures][bart]") {
  // Converted with the tokenizer.json beside the checkpoint: "QZ" is <s> Q Z </s> = 0 52 61 2
  // (no merge joins Q and Z); tern_translate_text gives the text of those ids' translation.
  ConvertOptions o;
  o.checkpoint = CheckpointFixture("bart/model.safetensors");
  o.arch = "bart";
  const TernContents contents = BuildContents(o);
  REQUIRE(contents.bpe_tokenizer.has_value());
  testing::AlignedBytes bytes(SerializeModel(contents));
  tern_model* model = nullptr;
  REQUIRE(tern_model_load_from_memory(bytes.data(), bytes.size(), &model) == TERN_OK);
  tern_limits limits = tern_default_limits();
  limits.max_source_length = 16;
  limits.max_target_length = 8;
  size_t need = 0;
  REQUIRE(tern_required_arena_bytes(model, &limits, &need) == TERN_OK);
  std::vector<uint8_t> arena(need);
  tern_session* session = nullptr;
  REQUIRE(tern_session_create(model, &limits, arena.data(), arena.size(), &session) == TERN_OK);
  char text[256];
  REQUIRE(tern_translate_text(session, "QZ", nullptr, text, sizeof text) == TERN_OK);
  const int32_t src[] = {0, 52, 61, 2};
  int32_t ids[8];
  size_t n = 0;
  REQUIRE(tern_translate_ids(session, src, 4, nullptr, ids, 8, &n) == TERN_OK);
  auto loaded = Model::Load(bytes.data(), bytes.size());
  REQUIRE(loaded.ok());
  auto bpe = BpeTokenizer::FromModel(loaded.value());
  std::string want;
  REQUIRE(bpe.ok());
  REQUIRE(bpe->Decode(Span<const int32_t>(ids, n), true, &want).ok());
  CHECK(!want.empty());
  CHECK(std::string(text) == want);
  tern_session_free(session);
  tern_model_free(model);
}

testing::FixtureCopy BartCopy() {
  return testing::FixtureCopy("bart/model.safetensors", "bart/config.json", "bart");
}

TEST_CASE("BART and mBART config fields tern does not implement are refused by name",
          "[architectures][bart]") {
  auto refused = [](testing::FixtureCopy& copy, const std::string& key, const nlohmann::json& v) {
    copy.config[key] = v;
    ConvertOptions o = copy.Write();
    o.no_tokenizer = true;
    return ConvertError(o);
  };
  struct Case {
    const char* key;
    nlohmann::json value;
    const char* message;  // after "<config.json path>: "
  };
  const Case cases[] = {
      {"activation_function", "quick_gelu",
       "\"activation_function\" = \"quick_gelu\" is not supported; expected swish, silu, gelu, "
       "relu or gelu_new"},
      {"add_bias_logits", true,
       "\"add_bias_logits\": true (a second logits bias) is not supported; tern adds "
       "final_logits_bias only"},
      {"add_final_layer_norm", true,
       "\"add_final_layer_norm\": true contradicts --arch bart: BART stacks end without a final "
       "LayerNorm"},
      {"normalize_before", true,
       "\"normalize_before\": true contradicts --arch bart: BART layers are post-LN (mBART's "
       "pre-LN layers: --arch mbart)"},
      {"normalize_embedding", false,
       "\"normalize_embedding\": false contradicts --arch bart: every BART and mBART stack has a "
       "layernorm_embedding"},
      {"static_position_embeddings", true,
       "\"static_position_embeddings\": true contradicts --arch bart: BART and mBART positions "
       "are learned (offset 2), not sinusoidal"},
      {"extra_pos_embeddings", 1,
       "\"extra_pos_embeddings\" = 1 is not supported; BART's learned positions have an offset "
       "of 2"},
      {"model_type", "mbart", "\"model_type\" is \"mbart\", not \"bart\" (use --arch mbart)"},
  };
  for (const Case& c : cases) {
    INFO(c.key);
    testing::FixtureCopy copy = BartCopy();
    CHECK(refused(copy, c.key, c.value) == copy.config_path() + ": " + c.message);
  }
  {
    // mBART's flags are the other way round.
    testing::FixtureCopy copy("mbart/pytorch_model.bin", "mbart/config.json", "mbart");
    CHECK(refused(copy, "add_final_layer_norm", false) ==
          copy.config_path() +
              ": \"add_final_layer_norm\": false contradicts --arch mbart: every mBART stack "
              "ends with a LayerNorm");
    copy.config.erase("add_final_layer_norm");
    CHECK(refused(copy, "normalize_before", false) ==
          copy.config_path() +
              ": \"normalize_before\": false contradicts --arch mbart: mBART layers are pre-LN "
              "(BART's post-LN layers: --arch bart)");
  }
}

TEST_CASE("BART checkpoints that lack a tensor or have the wrong position table are refused",
          "[architectures][bart]") {
  auto error = [](testing::FixtureCopy& copy) {
    ConvertOptions o = copy.Write();
    o.no_tokenizer = true;
    return ConvertError(o);
  };
  {
    testing::FixtureCopy copy = BartCopy();
    copy.tensors.erase("model.decoder.layernorm_embedding.weight");
    CHECK(error(copy) == copy.dir / "model.safetensors" +
                             ": required tensor \"model.decoder.layernorm_embedding.weight\" "
                             "(decoder.layernorm_embedding.weight) is missing");
  }
  {
    testing::FixtureCopy copy = BartCopy();
    copy.tensors.erase("model.encoder.layers.1.fc2.bias");
    CHECK(error(copy) == copy.dir / "model.safetensors" +
                             ": required tensor \"model.encoder.layers.1.fc2.bias\" is missing "
                             "(BART layers have biases)");
  }
  {
    testing::FixtureCopy copy = BartCopy();
    copy.config["max_position_embeddings"] = 66;  // the table is 64 + 2 rows
    CHECK(error(copy) ==
          copy.dir / "model.safetensors" +
              ": tensor \"model.encoder.embed_positions.weight\" has shape [66, 32], expected "
              "[68, 32] (max_position_embeddings + 2 rows: learned positions with offset 2)");
  }
}

}  // namespace
}  // namespace tern::convert
