// Limits: every absurd value in a model file (config fields, enums, tensor records) or in a
// session's Limits is refused by name before anything is sized from it, and the size
// arithmetic at the largest values the checks let through neither overflows nor wraps.
// (Complements model_test.cc's "absurd configs" case; the fuzz targets in tests/fuzz/ explore
// the rest.)
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "converter/writer.h"
#include "runtime/decoding/beam_search.h"
#include "tern_generated.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

using Catch::Matchers::ContainsSubstring;

constexpr int32_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr int32_t kIntMin = std::numeric_limits<int32_t>::min();

Status LoadStatus(const testing::AlignedBytes& bytes) {
  auto model = Model::Load(bytes.data(), bytes.size());
  return model.ok() ? Status::Ok() : model.status();
}

Status LoadWithConfig(void (*mutate)(ModelConfig*)) {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 31);
  mutate(&c.config);
  return LoadStatus(testing::AlignedBytes(convert::SerializeModel(c)));
}

TEST_CASE("limits: every config field's absurd values are refused by name", "[loader][limits]") {
  struct Case {
    const char* what;
    void (*mutate)(ModelConfig*);
    const char* field;
  };
  const Case cases[] = {
      {"d_model 0", [](ModelConfig* c) { c->d_model = 0; }, "config.d_model"},
      {"d_model INT32_MIN", [](ModelConfig* c) { c->d_model = kIntMin; }, "config.d_model"},
      {"d_model 2^16 + 16", [](ModelConfig* c) { c->d_model = (1 << 16) + 16; }, "config.d_model"},
      {"d_model INT32_MAX", [](ModelConfig* c) { c->d_model = kIntMax; }, "config.d_model"},
      {"heads 0", [](ModelConfig* c) { c->heads = 0; }, "config.heads"},
      {"heads -2", [](ModelConfig* c) { c->heads = -2; }, "config.heads"},
      {"heads > d_model", [](ModelConfig* c) { c->heads = 32; }, "config.heads"},
      {"heads 5 not dividing 16", [](ModelConfig* c) { c->heads = 5; }, "does not divide"},
      {"heads INT32_MAX", [](ModelConfig* c) { c->heads = kIntMax; }, "config.heads"},
      {"d_ff 0", [](ModelConfig* c) { c->d_ff = 0; }, "config.d_ff"},
      {"d_ff -24", [](ModelConfig* c) { c->d_ff = -24; }, "config.d_ff"},
      {"d_ff 2^31 - 1", [](ModelConfig* c) { c->d_ff = kIntMax; }, "config.d_ff"},
      {"encoder_layers -1", [](ModelConfig* c) { c->encoder_layers = -1; },
       "config.encoder_layers"},
      {"decoder_layers 1025", [](ModelConfig* c) { c->decoder_layers = 1025; },
       "config.decoder_layers"},
      {"decoder_layers INT32_MIN", [](ModelConfig* c) { c->decoder_layers = kIntMin; },
       "config.decoder_layers"},
      {"src_vocab 0", [](ModelConfig* c) { c->src_vocab_size = 0; }, "config.src_vocab_size"},
      {"src_vocab -20", [](ModelConfig* c) { c->src_vocab_size = -20; }, "config.src_vocab_size"},
      {"tgt_vocab 2^22 + 1", [](ModelConfig* c) { c->tgt_vocab_size = (1 << 22) + 1; },
       "config.tgt_vocab_size"},
      {"tgt_vocab INT32_MAX", [](ModelConfig* c) { c->tgt_vocab_size = kIntMax; },
       "config.tgt_vocab_size"},
      {"max_positions -1", [](ModelConfig* c) { c->max_positions = -1; }, "config.max_positions"},
      {"max_positions 2^20 + 1", [](ModelConfig* c) { c->max_positions = (1 << 20) + 1; },
       "config.max_positions"},
      {"max_positions INT32_MAX", [](ModelConfig* c) { c->max_positions = kIntMax; },
       "config.max_positions"},
      {"universal_steps -1", [](ModelConfig* c) { c->universal_steps = -1; },
       "config.universal_steps"},
      {"universal_steps 2^31 - 1", [](ModelConfig* c) { c->universal_steps = kIntMax; },
       "config.universal_steps"},
      {"layer_norm_eps NaN", [](ModelConfig* c) { c->layer_norm_eps = std::nanf(""); },
       "config.layer_norm_eps"},
      {"layer_norm_eps inf", [](ModelConfig* c) { c->layer_norm_eps = INFINITY; },
       "config.layer_norm_eps"},
      {"layer_norm_eps < 0", [](ModelConfig* c) { c->layer_norm_eps = -1e-5f; },
       "config.layer_norm_eps"},
      {"embedding_scale NaN", [](ModelConfig* c) { c->embedding_scale = std::nanf(""); },
       "config.embedding_scale"},
      {"embedding_scale -inf", [](ModelConfig* c) { c->embedding_scale = -INFINITY; },
       "config.embedding_scale"},
      {"pad_id -1", [](ModelConfig* c) { c->pad_id = -1; }, "config.pad_id"},
      {"bos_id = vocab", [](ModelConfig* c) { c->bos_id = 20; }, "config.bos_id"},
      {"unk_id INT32_MIN", [](ModelConfig* c) { c->unk_id = kIntMin; }, "config.unk_id"},
      {"decoder_start_id INT32_MAX", [](ModelConfig* c) { c->decoder_start_id = kIntMax; },
       "config.decoder_start_id"},
      {"ids checked against the smaller vocabulary",
       [](ModelConfig* c) {
         c->shared_embeddings = false;
         c->tgt_vocab_size = 3;
       },
       "config.unk_id"},
      {"shared embeddings with two vocabularies", [](ModelConfig* c) { c->tgt_vocab_size = 21; },
       "config.shared_embeddings"},
      {"head_dim -1", [](ModelConfig* c) { c->head_dim = -1; }, "config.head_dim"},
      {"heads * head_dim 2^17", [](ModelConfig* c) { c->head_dim = 1 << 16; },
       "config.heads * config.head_dim"},
      {"rotary_scaling without rotary positions",
       [](ModelConfig* c) { c->rotary_scaling = ref::RotaryScaling::kLinear; },
       "config.rotary_scaling = 1 needs config.position = rotary"},
      {"llama3 without its parameters",
       [](ModelConfig* c) {
         c->position = PositionKind::kRotary;
         c->rotary_scaling = ref::RotaryScaling::kLlama3;
       },
       "config.rotary_scaling = llama3 needs"},
      {"llama3 with high <= low",
       [](ModelConfig* c) {
         c->position = PositionKind::kRotary;
         c->rotary_scaling = ref::RotaryScaling::kLlama3;
         c->rotary_original_max_positions = 8192;
         c->rotary_low_freq_factor = 4.0f;
         c->rotary_high_freq_factor = 4.0f;
       },
       "config.rotary_scaling = llama3 needs"},
      {"rotary_scaling_factor 0", [](ModelConfig* c) { c->rotary_scaling_factor = 0.0f; },
       "config.rotary_scaling_factor"},
      {"rotary_original_max_positions -1",
       [](ModelConfig* c) { c->rotary_original_max_positions = -1; },
       "config.rotary_original_max_positions"},
  };
  for (const Case& k : cases) {
    const Status s = LoadWithConfig(k.mutate);
    INFO(k.what << ": " << s.message());
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring(k.field));
  }
}

TEST_CASE("limits: enum values a reader does not know are refused as unknown", "[loader][limits]") {
  struct Case {
    void (*mutate)(ModelConfig*);
    const char* field;
  };
  const Case cases[] = {
      {[](ModelConfig* c) { c->architecture = static_cast<Architecture>(200); },
       "config.architecture"},
      {[](ModelConfig* c) { c->activation = static_cast<ref::Activation>(6); },
       "config.activation"},
      {[](ModelConfig* c) { c->norm_placement = static_cast<NormPlacement>(4); },
       "config.norm_placement"},
      {[](ModelConfig* c) { c->norm_kind = static_cast<ref::NormKind>(255); }, "config.norm_kind"},
      {[](ModelConfig* c) { c->position = static_cast<PositionKind>(6); }, "config.position"},
      {[](ModelConfig* c) { c->sinusoid_layout = static_cast<ref::SinusoidLayout>(4); },
       "config.sinusoid_layout"},
      {[](ModelConfig* c) { c->rotary_scaling = static_cast<ref::RotaryScaling>(3); },
       "config.rotary_scaling"},
  };
  for (const Case& k : cases) {
    const Status s = LoadWithConfig(k.mutate);
    INFO(s.message());
    CHECK(s.code() == StatusCode::kInvalidConfig);
    CHECK_THAT(s.message(), ContainsSubstring(k.field));
    CHECK_THAT(s.message(), ContainsSubstring("unknown"));
  }
}

// Scaled rotary positions (rope_scaling) are stored as PositionKind RotaryScaled, format 1.6: a
// reader that does not know rotary_scaling refuses the value as unknown instead of running
// unscaled frequencies; this reader loads it back as rotary with its scaling.
TEST_CASE("limits: scaled rotary positions are stored as a kind older readers refuse",
          "[loader][limits]") {
  ModelConfig config = testing::TinyConfig();
  config.position = PositionKind::kRotary;
  config.rotary_scaling = ref::RotaryScaling::kLinear;
  config.rotary_scaling_factor = 2.0f;
  const testing::AlignedBytes bytes(convert::SerializeModel(testing::RandomContents(config, 5)));
  const schema::Model* stored = schema::GetSizePrefixedModel(bytes.data());
  CHECK(stored->config()->position() == schema::PositionKind_RotaryScaled);
  CHECK(stored->format_minor() == 6);
  auto model = Model::Load(bytes.data(), bytes.size());
  INFO(model.status().message());
  REQUIRE(model.ok());
  CHECK(model->config().position == PositionKind::kRotary);
  CHECK(model->config().rotary_scaling == ref::RotaryScaling::kLinear);
  // Plain rotary stays Rotary (and 1.2).
  config.rotary_scaling = ref::RotaryScaling::kNone;
  const testing::AlignedBytes plain(convert::SerializeModel(testing::RandomContents(config, 5)));
  CHECK(schema::GetSizePrefixedModel(plain.data())->config()->position() ==
        schema::PositionKind_Rotary);
  // RotaryScaled without a scaling is refused by name.
  const Status s = LoadWithConfig([](ModelConfig* c) {
    c->position = PositionKind::kRotaryScaled;
    c->rotary_scaling = ref::RotaryScaling::kNone;
  });
  CHECK(s.code() == StatusCode::kInvalidConfig);
  CHECK_THAT(s.message(), ContainsSubstring("rotary_scaled needs config.rotary_scaling"));
}

// An embedding LayerNorm (BART's layernorm_embedding) is stored as NormPlacement
// PostEmbeddingNorm / PreEmbeddingNorm, format 1.7: a 1.6 reader, not knowing the field,
// refuses the value as unknown instead of running without the norm; this reader loads it back.
TEST_CASE("limits: an embedding LayerNorm is stored as a norm placement older readers refuse",
          "[loader][limits]") {
  for (NormPlacement placement : {NormPlacement::kPost, NormPlacement::kPre}) {
    ModelConfig config = testing::TinyConfig();
    config.norm_placement = placement;
    config.layernorm_embedding = true;
    const testing::AlignedBytes bytes(convert::SerializeModel(testing::RandomContents(config, 5)));
    const schema::Model* stored = schema::GetSizePrefixedModel(bytes.data());
    CHECK(stored->config()->norm_placement() == (placement == NormPlacement::kPre
                                                     ? schema::NormPlacement_PreEmbeddingNorm
                                                     : schema::NormPlacement_PostEmbeddingNorm));
    CHECK(stored->format_minor() == 7);
    auto model = Model::Load(bytes.data(), bytes.size());
    INFO(model.status().message());
    REQUIRE(model.ok());
    CHECK(model->config().norm_placement == placement);
    CHECK(model->config().layernorm_embedding);
  }
  // The stored form without the flag is refused by name.
  const Status s = LoadWithConfig([](ModelConfig* c) {
    c->norm_placement = NormPlacement::kPreEmbeddingNorm;
    c->layernorm_embedding = false;
  });
  CHECK(s.code() == StatusCode::kInvalidConfig);
  CHECK_THAT(s.message(), ContainsSubstring("norm_placement = 3 needs config.layernorm_embedding"));
  // The flag with a plain placement (the writer never stores it so: the byte overwritten).
  ModelConfig config = testing::TinyConfig();
  config.norm_placement = NormPlacement::kPre;
  config.layernorm_embedding = true;
  const testing::AlignedBytes bytes(convert::SerializeModel(testing::RandomContents(config, 5)));
  auto* table = const_cast<flatbuffers::Table*>(reinterpret_cast<const flatbuffers::Table*>(
      schema::GetSizePrefixedModel(bytes.data())->config()));
  REQUIRE(table->SetField<uint8_t>(schema::Config::VT_NORM_PLACEMENT, 1, 0));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(!model.ok());
  CHECK(std::string(model.status().message()) ==
        "config.layernorm_embedding is stored with config.norm_placement = post_embedding_norm / "
        "pre_embedding_norm (format 1.7), not 1");
}

TEST_CASE("limits: max_positions at its bound loads and plans", "[loader][limits]") {
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 32);
  c.config.max_positions = 1 << 20;
  testing::AlignedBytes bytes(convert::SerializeModel(c));
  auto model = Model::Load(bytes.data(), bytes.size());
  INFO(model.status().message());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kReference;
  CHECK(Session::RequiredArenaBytes(model.value(), limits).ok());
}

// Generated tables derive privately from flatbuffers::Table (at offset 0).
template <typename T>
const flatbuffers::Table* AsTable(const T* t) {
  return reinterpret_cast<const flatbuffers::Table*>(t);
}

// The serialized model with one scalar of one tensor record overwritten in place (FlatBuffers
// scalars live at fixed addresses; the writer stores every field, defaults included).
class Patched {
 public:
  explicit Patched(const char* tensor, uint32_t seed = 33, DType dtype = DType::kF32)
      : bytes_(testing::RandomModelBytes(testing::TinyConfig(), seed, dtype)) {
    const schema::Model* m = schema::GetSizePrefixedModel(bytes_.data());
    t_ = m->tensors()->LookupByKey(tensor);
    REQUIRE(t_ != nullptr);
  }
  template <typename T>
  void Field(flatbuffers::voffset_t field, T value) {
    const uint8_t* at = AsTable(t_)->GetAddressOf(field);
    REQUIRE(at != nullptr);
    Write(at, &value, sizeof value);
  }
  void Dim(int i, int64_t value) { Write(t_->shape()->data() + i, &value, sizeof value); }
  void Scale(int i, float value) {
    Write(t_->quantization()->scales()->data() + i, &value, sizeof value);
  }
  void QuantField(flatbuffers::voffset_t field, int32_t value) {
    const uint8_t* at = AsTable(t_->quantization())->GetAddressOf(field);
    REQUIRE(at != nullptr);
    Write(at, &value, sizeof value);
  }
  Status Load() const { return LoadStatus(bytes_); }

 private:
  // Writes through the buffer's own pointer (the FlatBuffers accessors are const views).
  void Write(const void* at, const void* value, size_t n) {
    const size_t offset = static_cast<size_t>(static_cast<const uint8_t*>(at) - bytes_.data());
    REQUIRE(offset + n <= bytes_.size());
    std::memcpy(bytes_.data() + offset, value, n);
  }

  testing::AlignedBytes bytes_;
  const schema::Tensor* t_ = nullptr;
};

TEST_CASE("limits: tensor records with absurd dims, offsets and sizes are refused by name",
          "[loader][limits]") {
  const char* name = "encoder.layers.0.fc1.weight";  // [24, 16]
  using T = schema::Tensor;
  struct Case {
    const char* what;
    void (*patch)(Patched*);
    const char* message;
  };
  const Case cases[] = {
      {"negative dim", [](Patched* p) { p->Dim(0, -24); }, "invalid dimension"},
      {"zero dim", [](Patched* p) { p->Dim(1, 0); }, "invalid dimension"},
      {"dim 2^31", [](Patched* p) { p->Dim(0, int64_t{1} << 31); }, "data_size"},
      {"dim INT64_MAX", [](Patched* p) { p->Dim(0, std::numeric_limits<int64_t>::max()); },
       "invalid dimension"},
      {"dim INT64_MIN", [](Patched* p) { p->Dim(1, std::numeric_limits<int64_t>::min()); },
       "invalid dimension"},
      {"dims multiplying past 2^40",
       [](Patched* p) {
         p->Dim(0, int64_t{1} << 21);
         p->Dim(1, int64_t{1} << 20);
       },
       "invalid dimension"},
      {"dims whose product wraps to the real size",
       [](Patched* p) {
         p->Dim(0, (int64_t{1} << 62) + 24);  // x 16 = 2^66 + 384: wraps to 384 elements in 64 bits
       },
       "invalid dimension"},
      {"unknown dtype", [](Patched* p) { p->Field<int8_t>(T::VT_DTYPE, 99); }, "unknown dtype"},
      {"data offset not aligned", [](Patched* p) { p->Field<uint64_t>(T::VT_DATA_OFFSET, 64 + 4); },
       "aligned"},
      {"data offset past the file",
       [](Patched* p) { p->Field<uint64_t>(T::VT_DATA_OFFSET, uint64_t{1} << 62); },
       "past the end"},
      {"data offset + size wrapping around",
       [](Patched* p) { p->Field<uint64_t>(T::VT_DATA_OFFSET, 0xFFFFFFFFFFFFFFC0ull); },
       "past the end"},
      {"data size 2^64 - 1", [](Patched* p) { p->Field<uint64_t>(T::VT_DATA_SIZE, ~uint64_t{0}); },
       "data_size"},
  };
  for (const Case& k : cases) {
    Patched p(name);
    k.patch(&p);
    const Status s = p.Load();
    INFO(k.what << ": " << s.message());
    CHECK(s.code() == StatusCode::kInvalidModel);
    CHECK_THAT(s.message(), ContainsSubstring(name));
    CHECK_THAT(s.message(), ContainsSubstring(k.message));
  }
}

TEST_CASE("limits: quantization records are checked: scales, groups, axis", "[loader][limits]") {
  const char* name = "decoder.layers.0.fc2.weight";  // [16, 24], int4 with groups of 8
  using Q = schema::Quantization;
  {
    Patched p(name, 34, DType::kI4);
    p.Scale(0, std::nanf(""));
    CHECK_THAT(p.Load().message(), ContainsSubstring("non-finite or negative scale"));
  }
  {
    Patched p(name, 34, DType::kI4);
    p.Scale(5, -INFINITY);
    CHECK_THAT(p.Load().message(), ContainsSubstring("non-finite or negative scale"));
  }
  {
    Patched p(name, 34, DType::kI4);
    p.QuantField(Q::VT_GROUP_SIZE, 25);  // more than the 24 columns
    CHECK_THAT(p.Load().message(), ContainsSubstring("group_size"));
  }
  {
    Patched p(name, 34, DType::kI4);
    p.QuantField(Q::VT_GROUP_SIZE, kIntMin);
    CHECK_THAT(p.Load().message(), ContainsSubstring("group_size"));
  }
  {
    Patched p(name, 34, DType::kI4);
    p.QuantField(Q::VT_GROUP_SIZE, 4);  // 6 groups per row need 96 scales, the file has 48
    CHECK_THAT(p.Load().message(), ContainsSubstring("scales, expected"));
  }
  {
    Patched p(name, 34, DType::kI8);
    p.QuantField(Q::VT_AXIS, 1);
    const Status s = p.Load();
    CHECK(s.code() == StatusCode::kNotSupported);
    CHECK_THAT(s.message(), ContainsSubstring("axis"));
  }
}

TEST_CASE("limits: session limits outside their bounds are refused by name", "[arena][limits]") {
  testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 35);
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  struct Case {
    void (*mutate)(Limits*);
    const char* field;
  };
  const Case cases[] = {
      {[](Limits* l) { l->max_batch = 4097; }, "limits.max_batch"},
      {[](Limits* l) { l->max_batch = kIntMax; }, "limits.max_batch"},
      {[](Limits* l) { l->max_batch = kIntMin; }, "limits.max_batch"},
      {[](Limits* l) { l->beam_size = 257; }, "limits.beam_size"},
      {[](Limits* l) { l->beam_size = 0; }, "limits.beam_size"},
      {[](Limits* l) { l->threads = 257; }, "limits.threads"},
      {[](Limits* l) { l->max_source_length = 0; }, "limits.max_source_length"},
      {[](Limits* l) { l->max_source_length = kIntMax; }, "limits.max_source_length"},
      {[](Limits* l) { l->max_target_length = -1; }, "limits.max_target_length"},
      {[](Limits* l) { l->max_target_length = 65; },
       "limits.max_target_length"},                                              // max_positions 64
      {[](Limits* l) { l->max_batch_tokens = 15; }, "limits.max_batch_tokens"},  // < source 16
      {[](Limits* l) { l->max_batch_tokens = -1; }, "limits.max_batch_tokens"},
      {[](Limits* l) { l->max_target_tokens = 15; }, "limits.max_target_tokens"},  // < target 16
      {[](Limits* l) { l->max_target_tokens = -1; }, "limits.max_target_tokens"},
  };
  for (const Case& k : cases) {
    Limits limits;
    limits.max_source_length = 16;
    limits.max_target_length = 16;
    k.mutate(&limits);
    auto need = Session::RequiredArenaBytes(model.value(), limits);
    REQUIRE_FALSE(need.ok());
    INFO(need.status().message());
    CHECK(need.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(need.status().message(), ContainsSubstring(k.field));
  }
}

TEST_CASE("limits: the largest limits a model allows give an exact arena size, not a wrapped one",
          "[arena][limits]") {
  // max_positions 2^20, batch 4096, beam 256: the self-attention K/V cache alone is
  // 2 layers x K,V x (4096 x 256 rows) x 2^20 steps x 16 x 4 bytes = 2^48 bytes. Planning it is
  // arithmetic only; a wrapped size would be small.
  convert::TernContents c = testing::RandomContents(testing::TinyConfig(), 36);
  c.config.max_positions = 1 << 20;
  testing::AlignedBytes bytes(convert::SerializeModel(c));
  auto model = Model::Load(bytes.data(), bytes.size());
  REQUIRE(model.ok());
  Limits limits;
  limits.backend = Backend::kReference;
  limits.max_batch = 4096;
  limits.beam_size = 256;
  limits.max_source_length = 1 << 20;
  limits.max_target_length = 1 << 20;
  auto need = Session::RequiredArenaBytes(model.value(), limits);
  if (need.ok()) {
    // Only a 64-bit size_t can hold it (on 32-bit targets the plan overflows: kOutOfRange).
    CHECK(static_cast<unsigned long long>(need.value()) >= (1ULL << 48));
  } else {
    CHECK(need.status().code() == StatusCode::kOutOfRange);
  }
  // A session never touches an arena it was not given enough of.
  std::vector<uint8_t> small(4096);
  Session session;
  const Status s = session.Prepare(model.value(), limits, small.data(), small.size());
  CHECK(s.code() == (need.ok() ? StatusCode::kArenaTooSmall : StatusCode::kOutOfRange));
}

TEST_CASE("limits: DecoderStateBytes saturates instead of wrapping for absurd limits",
          "[arena][limits]") {
  // Defense in depth: CheckLimits keeps real sessions far below this, but the beam state's size
  // must never wrap to a small number if it is ever reached with larger limits.
  // 2^40 rows x (2^31 - 1) steps x 4 bytes overflows 64 bits: CheckedMul saturates to SIZE_MAX,
  // and rounding that up to the 64-byte alignment must not wrap it to 0.
  Limits limits;
  limits.max_batch = 1 << 20;
  limits.beam_size = 1 << 20;
  limits.max_target_length = kIntMax;
  CHECK(DecoderStateBytes(testing::TinyConfig(), limits) == SIZE_MAX);
}

}  // namespace
}  // namespace tern
