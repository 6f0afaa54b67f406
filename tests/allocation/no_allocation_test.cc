// "After prepare, zero calls to malloc/new": counted, not claimed. Translating, encoding and
// decoding steps, and error paths inside translate run with the counter on.
#include <catch2/catch_test_macros.hpp>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tern/tern.h"
#include "tests/allocation/counting_allocator.h"
#include "tests/runtime/models/backend_models.h"
#include "tests/support/tiny_model.h"
#include "tests/support/tokenizer_model.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include <xnnpack.h>

#include "runtime/kernels/xnnpack/allocator.h"
#include "runtime/kernels/xnnpack/kernel_check.h"
#include "runtime/kernels/xnnpack/linear.h"
#endif

namespace tern {
namespace {

TEST_CASE("the counter sees allocations (it can fail)", "[allocation]") {
  // Volatile sinks keep the compiler from eliding the allocations.
  static std::vector<int>* volatile vector_sink;
  static void* volatile malloc_sink;
  testing::StartCountingAllocations();
  vector_sink = new std::vector<int>(100);
  malloc_sink = std::malloc(10);
  const size_t counted = testing::StopCountingAllocations();
  std::free(malloc_sink);
  delete vector_sink;
  CHECK(counted >= 3);
}

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
TEST_CASE("XNNPACK's requests outside prepare reach the counter", "[allocation]") {
  // tern's XNNPACK allocator serves the heap when no Prepare is running: were XNNPACK to ask
  // for memory while translating, the test below would see it.
  REQUIRE(xnn::Initialize().ok());
  xnn_operator_t op = nullptr;
  testing::StartCountingAllocations();
  const xnn_status status = xnn_create_convert_nc_f32_qd8(0, &op);
  const size_t counted = testing::StopCountingAllocations();
  CHECK(status == xnn_status_success);
  CHECK(counted >= 1);
  xnn_delete_operator(op);
}
#endif

// The batch every translation and generation below runs: 3 sources / prompts of 5, 12 and 2
// tokens, in rows of 12.
const int32_t kIds[3 * 12] = {4,  5, 6,  7,  2,  0,  0,  0,  0,  0,  0,  0,  //
                              8,  9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 2,  //
                              19, 2};
const int32_t kLengths[3] = {5, 12, 2};

// Limits for kIds with `max_target_length` positions.
Limits LimitsFor(Backend backend, int32_t max_target_length) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = 3;
  limits.max_source_length = 12;
  limits.max_target_length = max_target_length;
  return limits;
}

// A model and a Session or Generator prepared for it, in an arena of RequiredArenaBytes.
template <typename Runner>
struct Prepared {
  Model model;
  std::vector<uint8_t> arena;
  Runner runner;
};

template <typename Runner>
void Prepare(Prepared<Runner>* p, const testing::AlignedBytes& bytes, const Limits& limits) {
  auto model = Model::Load(bytes.data(), bytes.size());
  INFO(model.status().message());
  REQUIRE(model.ok());
  p->model = model.value();
  p->arena.resize(Runner::RequiredArenaBytes(p->model, limits).value());
  REQUIRE(p->runner.Prepare(p->model, limits, p->arena.data(), p->arena.size()).ok());
}

// testing::WideConfig as a decoder-only, pre-LN model.
ModelConfig WideDecoderOnly() {
  ModelConfig config = testing::WideConfig();
  config.architecture = Architecture::kDecoderOnly;
  config.encoder_layers = 0;
  config.src_vocab_size = 0;
  config.shared_embeddings = false;
  config.norm_placement = NormPlacement::kPre;
  return config;
}

struct Variant {
  const char* name;
  Backend backend;
  bool wide;  // testing::WideConfig (rows XNNPACK's blockwise int4 takes)
  DType dtype;
  int64_t group;         // int4 block size (0: per row)
  uint32_t unsupported;  // XNNPACK paths forced off (their fallbacks run)
  int32_t threads;
  int32_t beam;
  const char* expect;  // in the backend report
  CacheType kv_cache = CacheType::kFloat32;
  // Limits::max_target_tokens (0: none); with a budget every call decodes at most 6 tokens, so
  // that its 3 sentences fit (3 x 7 decoder steps with a forced first token).
  int32_t target_tokens = 0;
};

void TranslateWithoutAllocating(const Variant& v, const ModelConfig& config) {
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  xnn::SetUnsupportedPathsForTesting(v.unsupported);
#endif
  const testing::AlignedBytes bytes = testing::ModelBytes(config, 21, v.dtype, v.group);
  Limits limits = LimitsFor(v.backend, 10);
  limits.threads = v.threads;
  limits.beam_size = v.beam;
  limits.kv_cache = v.kv_cache;
  limits.max_target_tokens = v.target_tokens;
  Prepared<Session> p;
  Prepare(&p, bytes, limits);
  Session& session = p.runner;
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  xnn::SetUnsupportedPathsForTesting(0);
#endif
  INFO(session.backend_report());
  CHECK(session.backend() == v.backend);
  CHECK(std::string(session.backend_report()).find(v.expect) != std::string::npos);
  int32_t out[3 * 3 * 10];
  int32_t out_lengths[3 * 3];
  DecodingOptions options;
  options.beam_size = v.beam;
  if (v.target_tokens > 0) options.max_length = 6;

  testing::StartCountingAllocations();
  Status first = session.TranslateIds(kIds, 12, kLengths, 3, options, out, 10, out_lengths);
  Status second = session.TranslateIds(kIds, 12, kLengths, 1, options, out, 10, out_lengths);
  DecodingOptions forced = options;  // a forced first target token (NLLB's target language)
  forced.forced_bos_id = 5;
  Status third = session.TranslateIds(kIds, 12, kLengths, 3, forced, out, 10, out_lengths);
  const int32_t bad[] = {4, 99, 2};  // out-of-vocabulary id: an error, still no allocation
  size_t produced = 0;
  Status error =
      session.TranslateIds(Span<const int32_t>(bad, 3), Span<int32_t>(out, 10), &produced);
  const size_t allocations = testing::StopCountingAllocations();

  INFO(first.message() << second.message() << third.message());
  CHECK(first.ok());
  CHECK(second.ok());
  CHECK(third.ok());
  CHECK(error.code() == StatusCode::kOutOfRange);
  CHECK(allocations == 0);
  CHECK(tern::internal::encoder_decoder(session).kernel_fallback_calls() == 0);
}

// Every backend, weight dtype and XNNPACK path (fallbacks included), a thread pool, and beam
// search: translate twice (batch 3 and 1: row counts change, so XNNPACK operators are
// reshaped), plus an error path, with every allocation counted (all threads).
TEST_CASE("translate allocates nothing after prepare", "[allocation]") {
  std::vector<Variant> variants = {
      {"reference f32", Backend::kReference, false, DType::kF32, 0, 0, 1, 1, "reference"},
      {"reference f16", Backend::kReference, false, DType::kF16, 0, 0, 1, 1, "reference"},
      {"reference i8", Backend::kReference, false, DType::kI8, 0, 0, 1, 1, "reference"},
      {"reference i4", Backend::kReference, false, DType::kI4, 8, 0, 1, 1, "reference"},
      {"reference f32, fp16 caches, beam 2", Backend::kReference, false, DType::kF32, 0, 0, 1, 2,
       "reference", CacheType::kFloat16},
      {"reference i8, a target-token budget, beam 2", Backend::kReference, false, DType::kI8, 0, 0,
       1, 2, "reference", CacheType::kFloat32, 21},
  };
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  using xnn::LinearPath;
  // Where XNNPACK's f16 kernel is wrong on this CPU (kernel_check.h), f16 weights take the
  // f32-compute path.
  const char* const kF16Expect = xnn::PathTrusted(LinearPath::kF16)
                                     ? "fully_connected_nc_f16"
                                     : "33 fully_connected_nc_f32_f16; XNNPACK's";
  // ...and int4 per row tern's integer loops.
  const char* const kQc4wExpect = xnn::PathTrusted(LinearPath::kQd8Qc4w)
                                      ? "fully_connected_nc_qd8_f32_qc4w"
                                      : "kernels for them are wrong on this CPU";
  using xnn::PathBit;
  const Variant xnnpack[] = {
      {"xnnpack f32", Backend::kXnnpack, false, DType::kF32, 0, 0, 1, 1, "fully_connected_nc_f32"},
      {"xnnpack f16", Backend::kXnnpack, false, DType::kF16, 0, 0, 1, 1, kF16Expect},
      {"xnnpack f16 -> f32 compute", Backend::kXnnpack, false, DType::kF16, 0,
       PathBit(LinearPath::kF16), 1, 1, "fully_connected_nc_f32_f16"},
      {"xnnpack i8", Backend::kXnnpack, false, DType::kI8, 0, 0, 1, 1,
       "fully_connected_nc_qd8_f32_qc8w"},
      {"xnnpack i8 -> f32 activations", Backend::kXnnpack, false, DType::kI8, 0,
       PathBit(LinearPath::kQd8Qc8w), 1, 1, "fully_connected_nc_f32_qc8w"},
      {"xnnpack i4 per row", Backend::kXnnpack, false, DType::kI4, 0, 0, 1, 1, kQc4wExpect},
      {"xnnpack i4 per row -> f32 activations", Backend::kXnnpack, false, DType::kI4, 0,
       PathBit(LinearPath::kQd8Qc4w), 1, 1,
       xnn::PathTrusted(LinearPath::kQd8Qc4w) ? "fully_connected_nc_f32_qc4w" : kQc4wExpect},
      // Rows of 64 columns and 36 rows of sources: on an AMX CPU the encoder's int4 layers
      // quantize their rows once into the context's scratch (vec::QuantizedRows), with 2 threads
      // a share each.
      {"xnnpack i4 per row, wide", Backend::kXnnpack, true, DType::kI4, 0, 0, 1, 1, kQc4wExpect},
      {"xnnpack i4 per row, wide, 2 threads", Backend::kXnnpack, true, DType::kI4, 0, 0, 2, 1,
       "2 threads"},
      {"xnnpack i4 blocks of 32", Backend::kXnnpack, true, DType::kI4, 32, 0, 1, 1,
       xnn::PathTrusted(LinearPath::kQd8Qb4w) ? "fully_connected_nc_qd8_f32_qb4w"
                                              : "vectorized loops: XNNPACK has no operator"},
      {"xnnpack i4 blocks of 8 (vectorized loops)", Backend::kXnnpack, false, DType::kI4, 8, 0, 1,
       1, "vectorized loops: XNNPACK has no operator"},
      {"xnnpack i8, 2 threads", Backend::kXnnpack, true, DType::kI8, 0, 0, 2, 1, "2 threads"},
      {"xnnpack f32, 2 threads", Backend::kXnnpack, true, DType::kF32, 0, 0, 2, 1, "2 threads"},
      {"xnnpack i8, beam 3", Backend::kXnnpack, false, DType::kI8, 0, 0, 1, 3,
       "fully_connected_nc_qd8_f32_qc8w"},
      {"xnnpack f16, beam 2", Backend::kXnnpack, false, DType::kF16, 0, 0, 1, 2, kF16Expect},
      {"xnnpack i8, fp16 caches, beam 3", Backend::kXnnpack, false, DType::kI8, 0, 0, 1, 3,
       "fully_connected_nc_qd8_f32_qc8w", CacheType::kFloat16},
      {"xnnpack i8, fp16 caches, 2 threads", Backend::kXnnpack, true, DType::kI8, 0, 0, 2, 1,
       "2 threads", CacheType::kFloat16},
      {"xnnpack i8, a target-token budget, beam 2", Backend::kXnnpack, false, DType::kI8, 0, 0, 1,
       2, "fully_connected_nc_qd8_f32_qc8w", CacheType::kFloat32, 21},
      {"xnnpack i8, a target-token budget, 2 threads", Backend::kXnnpack, true, DType::kI8, 0, 0, 2,
       1, "2 threads", CacheType::kFloat32, 21},
  };
  variants.insert(variants.end(), std::begin(xnnpack), std::end(xnnpack));
#endif
  for (const Variant& v : variants) {
    INFO(v.name);
    TranslateWithoutAllocating(v, v.wide ? testing::WideConfig() : testing::TinyConfig());
  }
}

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
// Sessions whose packed weights are shared (tern::SharedWeights): the one that packed them and
// one that reuses them, each translating with every allocation counted.
TEST_CASE("translate with shared weights allocates nothing after prepare", "[allocation]") {
  for (DType dtype : {DType::kF32, DType::kI8, DType::kI4}) {
    INFO(DTypeName(dtype));
    const testing::AlignedBytes bytes = testing::ModelBytes(testing::WideConfig(), 21, dtype, 0);
    const Model model = Model::Load(bytes.data(), bytes.size()).value();
    const Limits limits = LimitsFor(Backend::kXnnpack, 10);
    std::vector<uint8_t> memory(SharedWeights::RequiredBytes(model, limits).value());
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), memory.size()).ok());
    const size_t need = Session::RequiredArenaBytes(model, limits, &shared).value();
    std::vector<uint8_t> arena_a(need), arena_b(need);
    Session a, b;
    REQUIRE(a.Prepare(model, limits, arena_a.data(), need, &shared).ok());
    REQUIRE(b.Prepare(model, limits, arena_b.data(), need, &shared).ok());
    int32_t out[3 * 10];
    int32_t out_lengths[3];
    testing::StartCountingAllocations();
    const Status first =
        a.TranslateIds(kIds, 12, kLengths, 3, DecodingOptions(), out, 10, out_lengths);
    const Status second =
        b.TranslateIds(kIds, 12, kLengths, 3, DecodingOptions(), out, 10, out_lengths);
    const size_t allocations = testing::StopCountingAllocations();
    CHECK(first.ok());
    CHECK(second.ok());
    CHECK(allocations == 0);
    // Packed by XNNPACK, or (int4 where its kernel is wrong) copied for tern's integer loops.
    CHECK(shared.packed());
  }
}
#endif

// The vocabulary shortlist's candidate lists, bitmap and row-indexed projection: in the arena.
TEST_CASE("translate with a vocabulary shortlist allocates nothing after prepare",
          "[allocation][shortlist]") {
  for (Backend backend : testing::Backends()) {
    // int8 (always per row) and int4 per row: XNNPACK's qd8 paths, which the row kernel
    // follows (QuantizeQd8); int4 in blocks of 32: float row dot products.
    const std::pair<DType, int64_t> cases[] = {
        {DType::kF32, 0}, {DType::kF16, 0}, {DType::kI8, 0}, {DType::kI4, 0}, {DType::kI4, 32}};
    for (const auto& [dtype, group] : cases) {
      INFO("backend " << static_cast<int>(backend) << ", " << DTypeName(dtype) << " group "
                      << group);
      const testing::AlignedBytes bytes =
          testing::ShortlistModelBytes(testing::WideConfig(), 21, dtype, group);
      Limits limits = LimitsFor(backend, 10);
      limits.beam_size = 2;
      Prepared<Session> p;
      Prepare(&p, bytes, limits);
      int32_t out[3 * 2 * 10];
      int32_t out_lengths[3 * 2];
      DecodingOptions options;
      testing::StartCountingAllocations();
      Status greedy = p.runner.TranslateIds(kIds, 12, kLengths, 3, options, out, 10, out_lengths);
      options.beam_size = 2;
      Status beam = p.runner.TranslateIds(kIds, 12, kLengths, 2, options, out, 10, out_lengths);
      const size_t allocations = testing::StopCountingAllocations();
      INFO(greedy.message() << beam.message());
      CHECK(greedy.ok());
      CHECK(beam.ok());
      CHECK(allocations == 0);
      CHECK(tern::internal::encoder_decoder(p.runner).shortlist_active());
      // The last call's first sentence ran on its candidate rows copied at Encode (the copy
      // path, beside the rows read in place of a sentence that no longer fits).
      CHECK(tern::internal::encoder_decoder(p.runner).shortlist_copied(0));
    }
  }
}

// The position variants keep their tables and scratch in the arena too: relative (Shaw, T5
// bias) and rotary positions, learned positions, none at all, with SwiGLU and RMSNorm, and
// grouped-query attention, on both backends.
TEST_CASE("translate allocates nothing after prepare: relative, rotary and learned positions",
          "[allocation]") {
  struct Positions {
    const char* name;
    void (*configure)(ModelConfig*);
  };
  const Positions kinds[] = {
      {"shaw",
       [](ModelConfig* c) {
         c->position = PositionKind::kRelative;
         c->relative_attention = RelativeAttention::kShaw;
         c->relative_max_distance = 3;
       }},
      {"t5 bias",
       [](ModelConfig* c) {
         c->position = PositionKind::kRelative;
         c->relative_attention = RelativeAttention::kT5Bias;
         c->relative_buckets = 8;
         c->relative_max_distance = 6;
       }},
      {"rotary + RMSNorm + SwiGLU",
       [](ModelConfig* c) {
         c->position = PositionKind::kRotary;
         c->rotary_dim = 6;
         c->norm_placement = NormPlacement::kPre;
         c->norm_kind = ref::NormKind::kRMSNorm;
         c->activation = ref::Activation::kSwiGLU;
       }},
      {"learned",
       [](ModelConfig* c) {
         c->position = PositionKind::kLearned;
         c->max_positions = 16;
       }},
      {"BART: learned + layernorm_embedding + a forced first token",
       [](ModelConfig* c) {
         c->position = PositionKind::kLearned;
         c->max_positions = 16;
         c->layernorm_embedding = true;
         c->forced_bos_id = c->tgt_vocab_size - 1;
       }},
      {"no positions", [](ModelConfig* c) { c->position = PositionKind::kNone; }},
      {"grouped-query attention (multi-query: 1 K/V head of 2) + rotary",
       [](ModelConfig* c) {
         c->kv_heads = 1;
         c->position = PositionKind::kRotary;
       }},
      {"head_dim 12 (heads * head_dim 24 > d_model 16) + GeGLU + llama3-scaled rotary",
       [](ModelConfig* c) {
         c->head_dim = 12;
         c->activation = ref::Activation::kGeGLU;
         c->position = PositionKind::kRotary;
         c->rotary_scaling = ref::RotaryScaling::kLlama3;
         c->rotary_scaling_factor = 8.0f;
         c->rotary_low_freq_factor = 1.0f;
         c->rotary_high_freq_factor = 4.0f;
         c->rotary_original_max_positions = 64;
       }},
  };
  std::vector<Variant> variants = {
    {"reference i8", Backend::kReference, false, DType::kI8, 0, 0, 1, 1, "reference"},
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
    {"xnnpack f32", Backend::kXnnpack, false, DType::kF32, 0, 0, 1, 1, "fully_connected_nc_f32"},
    {"xnnpack i8, beam 3", Backend::kXnnpack, false, DType::kI8, 0, 0, 1, 3,
     "fully_connected_nc_qd8_f32_qc8w"},
#endif
  };
  for (const Positions& kind : kinds) {
    for (const Variant& v : variants) {
      INFO(kind.name << ", " << v.name);
      ModelConfig config = testing::TinyConfig();
      kind.configure(&config);
      TranslateWithoutAllocating(v, config);
    }
  }
}

// Decoder-only generation (tern::Generator): prefill of prompts of different lengths, greedy and
// sampled (top-k + top-p) steps, a batch then a single prompt (XNNPACK operators reshaped), and
// an error path, on every backend and weight dtype, GPT-2 style and LLaMA-style (rotary, RMSNorm,
// SwiGLU), with float and fp16 K/V caches, with every allocation counted.
TEST_CASE("generate allocates nothing after prepare", "[allocation]") {
  struct LmVariant {
    const char* name;
    Backend backend;
    DType dtype;
    int32_t threads;
    CacheType kv_cache = CacheType::kFloat32;
  };
  std::vector<LmVariant> variants = {
      {"reference f32", Backend::kReference, DType::kF32, 1},
      {"reference i8", Backend::kReference, DType::kI8, 1},
      {"reference f32, fp16 K/V cache", Backend::kReference, DType::kF32, 1, CacheType::kFloat16}};
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  variants.push_back({"xnnpack f32", Backend::kXnnpack, DType::kF32, 1});
  variants.push_back({"xnnpack f16", Backend::kXnnpack, DType::kF16, 1});
  variants.push_back({"xnnpack i8", Backend::kXnnpack, DType::kI8, 1});
  variants.push_back({"xnnpack i4", Backend::kXnnpack, DType::kI4, 1});
  variants.push_back({"xnnpack i8, 2 threads", Backend::kXnnpack, DType::kI8, 2});
  variants.push_back(
      {"xnnpack i4, fp16 K/V cache", Backend::kXnnpack, DType::kI4, 1, CacheType::kFloat16});
#endif
  for (const LmVariant& v : variants)
    for (int style : {0, 1, 2}) {
      const bool llama = style > 0;
      INFO(v.name << (style == 2 ? ", Gemma-style"
                      : llama    ? ", Mistral-style (sliding window)"
                                 : ", GPT-2 style"));
      ModelConfig config = WideDecoderOnly();
      config.activation = ref::Activation::kGELUTanh;
      config.position = PositionKind::kLearned;
      if (llama) {
        // Rotary tables and SwiGLU's up buffer come from the arena too; grouped-query attention
        // (half as many K/V heads, LLaMA 2/3 style) changes only buffer sizes.
        config.position = PositionKind::kRotary;
        config.kv_heads = config.heads / 2;
        config.norm_kind = ref::NormKind::kRMSNorm;
        config.activation = ref::Activation::kSwiGLU;
        config.tied_output = false;
        config.sliding_window = 5;  // Mistral: a ring cache, prompts of up to 12 tokens
      }
      if (style == 2) {  // GeGLU, a head size of its own, linear-scaled rotary, one K/V head
        config.sliding_window = 0;
        config.activation = ref::Activation::kGeGLU;
        config.head_dim = 2 * config.d_model / config.heads;
        config.kv_heads = 1;
        config.rotary_scaling = ref::RotaryScaling::kLinear;
        config.rotary_scaling_factor = 4.0f;
        config.tied_output = true;
      }
      const testing::AlignedBytes bytes = testing::RandomModelBytes(config, 23, v.dtype);
      Limits limits = LimitsFor(v.backend, 20);
      limits.threads = v.threads;
      limits.kv_cache = v.kv_cache;
      Prepared<Generator> p;
      Prepare(&p, bytes, limits);
      Generator& generator = p.runner;
      INFO(generator.backend_report());
      CHECK(generator.backend() == v.backend);
      int32_t out[3 * 20];
      int32_t out_lengths[3];
      GenerationOptions greedy;
      greedy.stop_at_eos = false;
      GenerationOptions sampled = greedy;
      sampled.max_new_tokens = 6;
      sampled.sampling.temperature = 0.9f;
      sampled.sampling.top_k = 8;
      sampled.sampling.top_p = 0.9f;
      sampled.sampling.seed = 3;

      testing::StartCountingAllocations();
      Status first = generator.Generate(kIds, 12, kLengths, 3, greedy, out, 20, out_lengths);
      Status second = generator.Generate(kIds, 12, kLengths, 1, sampled, out, 20, out_lengths);
      float log_probs[3 * 20];  // with log-probabilities
      Status third =
          generator.Generate(kIds, 12, kLengths, 3, sampled, out, 20, out_lengths, log_probs);
      const int32_t bad[] = {4, 99, 2};  // out-of-vocabulary id: an error, still no allocation
      size_t produced = 0;
      Status error =
          generator.Generate(Span<const int32_t>(bad, 3), Span<int32_t>(out, 20), &produced);
      const size_t allocations = testing::StopCountingAllocations();

      INFO(first.message() << second.message() << third.message());
      CHECK(first.ok());
      CHECK(second.ok());
      CHECK(third.ok());
      CHECK(log_probs[0] <= 0.0f);
      CHECK(out_lengths[0] == 6);
      CHECK(error.code() == StatusCode::kOutOfRange);
      CHECK(allocations == 0);
      CHECK(tern::internal::decoder_only(generator).kernel_fallback_calls() == 0);
    }
}

// The C generation calls are thin wrappers: after tern_generator_create they allocate nothing
// either (greedy, sampled with a callback, a batch, an error).
TEST_CASE("tern_generate_ids allocates nothing after tern_generator_create", "[allocation]") {
  ModelConfig config = WideDecoderOnly();
  config.position = PositionKind::kRotary;
  config.norm_kind = ref::NormKind::kRMSNorm;
  config.activation = ref::Activation::kSwiGLU;
  testing::AlignedBytes bytes = testing::RandomModelBytes(config, 29, DType::kI8);
  tern_model* model = nullptr;
  REQUIRE(tern_model_load_from_memory(bytes.data(), bytes.size(), &model) == TERN_OK);
  tern_limits limits = tern_default_limits();
  limits.max_batch = 2;
  limits.max_source_length = 8;
  limits.max_target_length = 16;
  size_t need = 0;
  REQUIRE(tern_generator_required_arena_bytes(model, &limits, &need) == TERN_OK);
  std::vector<uint8_t> arena(need);
  tern_generator* generator = nullptr;
  REQUIRE(tern_generator_create(model, &limits, arena.data(), arena.size(), &generator) == TERN_OK);
  const int32_t prompt[] = {4, 5, 6};
  const int32_t prompts[2 * 3] = {4, 5, 6, 7, 0, 0};
  const int32_t lengths[2] = {3, 1};
  int32_t out[2 * 16];
  int32_t out_lengths[2];
  size_t n = 0;
  tern_generate_options sampled = tern_default_generate_options();
  sampled.stop_at_eos = 0;
  sampled.temperature = 0.9f;
  sampled.top_k = 8;
  sampled.top_p = 0.9f;
  sampled.seed = 5;
  int tokens = 0;
  sampled.on_token = [](void* user, int32_t, int32_t, int32_t) {
    ++*static_cast<int*>(user);
    return 1;
  };
  sampled.user = &tokens;
  const int32_t bad[] = {4, 99};

  testing::StartCountingAllocations();
  const tern_status greedy = tern_generate_ids(generator, prompt, 3, nullptr, out, 10, &n);
  const tern_status sample = tern_generate_ids(generator, prompt, 3, &sampled, out, 10, &n);
  const tern_status batch =
      tern_generate_ids_batch(generator, prompts, 3, lengths, 2, &sampled, out, 16, out_lengths);
  const tern_status error = tern_generate_ids(generator, bad, 2, nullptr, out, 10, &n);
  const size_t allocations = testing::StopCountingAllocations();

  INFO(tern_last_error());
  CHECK(greedy == TERN_OK);
  CHECK(sample == TERN_OK);
  CHECK(batch == TERN_OK);
  CHECK(error == TERN_OUT_OF_RANGE);
  CHECK(tokens > 10);
  CHECK(allocations == 0);
  tern_generator_free(generator);
  tern_model_free(model);
}

// The text path with a byte-level BPE tokenizer allocates only to grow its buffers: after one
// request, requests whose prompt and stop strings are no longer allocate nothing, whatever they
// generate, in C++ and through tern_generate_text (docs/api.md). Warm-up first, then counted.
TEST_CASE("text generation with a byte-level BPE model allocates nothing once warmed up",
          "[allocation]") {
  std::ifstream file(std::string(TERN_FIXTURES) + "/tokenizer/bpe_gpt2/tokenizer.json");
  const std::string json((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const convert::BpeTokenizerData bpe = convert::ParseTokenizerJson(json, "tokenizer.json");
  const testing::AlignedBytes bytes =
      testing::LanguageModelWithTokenizer(&bpe, {}, bpe.vocab_size(), 3);
  for (Backend backend : testing::Backends()) {
    INFO((backend == Backend::kReference ? "reference" : "xnnpack"));
    Limits limits = LimitsFor(backend, 40);
    limits.max_batch = 1;
    limits.max_source_length = 40;
    Prepared<Generator> p;
    Prepare(&p, bytes, limits);
    TextGenerator text;
    REQUIRE(text.Load(p.model).ok());
    const char* stops[] = {"\n\n", "never ever"};
    TextGenerationOptions o;
    o.generation.max_new_tokens = 20;
    o.generation.stop_at_eos = false;
    o.stop = stops;
    o.stop_count = 2;
    int pieces = 0;
    o.on_text = [](void* user, const TextPiece&) {
      ++*static_cast<int*>(user);
      return true;
    };
    o.user = &pieces;
    TextResult result;
    const std::string longest = "Der Bahnhof 日本語 🙂 and some more words";
    REQUIRE(text.Generate(p.runner, longest.c_str(), o, &result).ok());  // warm-up

    TextGenerationOptions sampled = o;
    sampled.generation.sampling.temperature = 0.8f;
    sampled.generation.sampling.top_k = 20;
    sampled.generation.sampling.seed = 4;
    testing::StartCountingAllocations();
    const Status first = text.Generate(p.runner, longest.c_str(), o, &result);
    // A shorter prompt (a longer continuation), sampled, and an error.
    const Status second = text.Generate(p.runner, "Hello", sampled, &result);
    const Status error = text.Generate(p.runner, "a\xFF", o, &result);  // still none
    const size_t allocations = testing::StopCountingAllocations();
    INFO(first.message() << second.message());
    CHECK(first.ok());
    CHECK(second.ok());
    CHECK(error.code() == StatusCode::kInvalidArgument);
    CHECK(pieces > 40);
    CHECK(allocations == 0);
  }

  // The C call on a handle: the same once its tokenizer is loaded (on the first call).
  tern_model* model = nullptr;
  REQUIRE(tern_model_load_from_memory(bytes.data(), bytes.size(), &model) == TERN_OK);
  tern_limits limits = tern_default_limits();
  limits.max_source_length = 32;
  limits.max_target_length = 32;
  size_t need = 0;
  REQUIRE(tern_generator_required_arena_bytes(model, &limits, &need) == TERN_OK);
  std::vector<uint8_t> arena(need);
  tern_generator* generator = nullptr;
  REQUIRE(tern_generator_create(model, &limits, arena.data(), arena.size(), &generator) == TERN_OK);
  tern_generate_text_options options = tern_default_generate_text_options();
  options.generate.max_new_tokens = 12;
  options.generate.stop_at_eos = 0;
  char out[512];
  tern_text_result result;
  REQUIRE(tern_generate_text(generator, "Der Bahnhof", &options, out, sizeof out, &result) ==
          TERN_OK);
  testing::StartCountingAllocations();
  const tern_status again =
      tern_generate_text(generator, "Der Bahnhof", &options, out, sizeof out, &result);
  const size_t allocations = testing::StopCountingAllocations();
  CHECK(again == TERN_OK);
  CHECK(result.new_tokens == 12);
  CHECK(allocations == 0);
  tern_generator_free(generator);
  tern_model_free(model);
}

}  // namespace
}  // namespace tern

namespace tern {
namespace {

// The Universal Transformer: the shared block's operators run T times per token, ACT state and
// the per-step caches live in the arena; greedy and beam, both backends, with and without ACT.
TEST_CASE("universal transformer translate allocates nothing after prepare",
          "[allocation][universal]") {
  for (Backend backend : testing::Backends()) {
    for (float act : {0.0f, 0.6f}) {
      for (DType dtype : {DType::kF32, DType::kI8}) {
        for (int32_t beam : {1, 2}) {
          INFO("backend " << static_cast<int>(backend) << ", act " << act << ", "
                          << DTypeName(dtype) << ", beam " << beam);
          ModelConfig config = testing::TinyConfig();
          config.architecture = Architecture::kUniversal;
          config.encoder_layers = config.decoder_layers = 1;
          config.universal_steps = 4;
          config.act_threshold = act;
          const testing::AlignedBytes bytes = testing::ModelBytes(config, 22, dtype, 0);
          Limits limits = LimitsFor(backend, 10);
          limits.beam_size = beam;
          Prepared<Session> p;
          Prepare(&p, bytes, limits);
          Session& session = p.runner;
          int32_t out[3 * 2 * 10];
          int32_t out_lengths[3 * 2];
          DecodingOptions options;
          options.beam_size = beam;
          testing::StartCountingAllocations();
          Status first = session.TranslateIds(kIds, 12, kLengths, 3, options, out, 10, out_lengths);
          Status second =
              session.TranslateIds(kIds, 12, kLengths, 1, options, out, 10, out_lengths);
          const size_t allocations = testing::StopCountingAllocations();
          INFO(first.message() << second.message());
          CHECK(first.ok());
          CHECK(second.ok());
          CHECK(allocations == 0);
          CHECK(tern::internal::encoder_decoder(session).kernel_fallback_calls() == 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tern
