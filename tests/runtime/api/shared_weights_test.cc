// tern::SharedWeights: the sessions of one model share one packed copy of the weights (issue 20).
// The first session packs into the caller's memory, the others reuse it: every session translates
// exactly as a session with its own copy does, a shared session's arena is smaller by the packed
// bytes, and a SharedWeights packed for one model refuses another.
#include <catch2/catch_test_macros.hpp>
#include <string>
#include <thread>
#include <vector>

#include "runtime/api/session_internal.h"
#include "tern/tern.hpp"
#include "tests/runtime/models/backend_models.h"

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
#include "runtime/kernels/xnnpack/kernel_check.h"
#include "runtime/kernels/xnnpack/linear.h"
#endif

namespace tern {
namespace {

const int32_t kIds[] = {5,  9, 4, 11, 7,  2,  0, 0, 0, 0, 0, 0,  //
                        8,  3, 2, 0,  0,  0,  0, 0, 0, 0, 0, 0,  //
                        13, 6, 6, 10, 17, 12, 3, 2, 0, 0, 0, 0};
const int32_t kLengths[] = {6, 3, 8};

Limits SmallLimits(Backend backend) {
  Limits limits;
  limits.backend = backend;
  limits.max_batch = 3;
  limits.max_source_length = 12;
  limits.max_target_length = 10;
  return limits;
}

struct Output {
  std::vector<int32_t> ids, lengths;
  bool operator==(const Output& o) const { return ids == o.ids && lengths == o.lengths; }
};

Output Translate(Session& session, int32_t batch, int32_t beam = 1) {
  Output out;
  out.ids.assign(3 * 10, -1);
  out.lengths.assign(3, -1);
  DecodingOptions options;
  options.beam_size = beam;
  const Status s = session.TranslateIds(kIds, 12, kLengths, batch, options, out.ids.data(), 10,
                                        out.lengths.data());
  INFO(s.message());
  REQUIRE(s.ok());
  return out;
}

// Translate without Catch2's macros, for other threads: Catch2 3.7's assertions and INFO are not
// thread-safe (INFO pushes onto one shared message stack; two threads corrupted the heap in 2 of
// 150 runs). The caller checks the status on the main thread.
[[maybe_unused]] Status TranslateOnThread(Session& session, Output* out) {  // XNNPACK builds
  out->ids.assign(3 * 10, -1);
  out->lengths.assign(3, -1);
  return session.TranslateIds(kIds, 12, kLengths, 3, DecodingOptions(), out->ids.data(), 10,
                              out->lengths.data());
}

struct Prepared {
  std::vector<uint8_t> arena;
  Session session;
};

Status PrepareSession(const Model& model, const Limits& limits, SharedWeights* shared,
                      Prepared* p) {
  auto need = Session::RequiredArenaBytes(model, limits, shared);
  if (!need.ok()) return need.status();
  p->arena.resize(need.value());
  return p->session.Prepare(model, limits, p->arena.data(), p->arena.size(), shared);
}

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
// Whether XNNPACK runs (and packs) int4 layers per row or in blocks of 32: not on CPUs where
// its kernel is wrong (kernel_check.h), whose int4 layers run tern's integer loops.
bool XnnpackTakesInt4(int64_t group) {
  return xnn::PathTrusted(group == 0 ? xnn::LinearPath::kQd8Qc4w : xnn::LinearPath::kQd8Qb4w);
}
#endif

struct Case {
  const char* name;
  DType dtype;
  int64_t group;
};

TEST_CASE("sessions sharing packed weights translate as sessions with their own",
          "[shared_weights]") {
  const Case cases[] = {{"f32", DType::kF32, 0},
                        {"f16", DType::kF16, 0},
                        {"i8", DType::kI8, 0},
                        {"i4 per row", DType::kI4, 0},
                        {"i4 blocks of 32", DType::kI4, 32}};
  for (const Case& c : cases)
    for (Backend backend : testing::Backends()) {
      INFO(c.name << (backend == Backend::kXnnpack ? ", xnnpack" : ", reference"));
      const testing::AlignedBytes bytes =
          testing::ModelBytes(testing::WideConfig(), 31, c.dtype, c.group);
      const Model model = Model::Load(bytes.data(), bytes.size()).value();
      const Limits limits = SmallLimits(backend);

      Prepared own;
      REQUIRE(PrepareSession(model, limits, nullptr, &own).ok());
      const Output expected = Translate(own.session, 3);

      // XNNPACK packs every layer, except int4 where its kernel is not trusted: those layers run
      // the integer loops on a copy of their bytes, which is shared the same way.
      const bool packs = backend == Backend::kXnnpack;
      auto shared_bytes = SharedWeights::RequiredBytes(model, limits);
      REQUIRE(shared_bytes.ok());
      CHECK((shared_bytes.value() > 0) == packs);
      std::vector<uint8_t> memory(shared_bytes.value() + 1);
      SharedWeights shared;
      REQUIRE(shared.Init(memory.data() + 1, shared_bytes.value()).ok());  // any alignment
      CHECK_FALSE(shared.packed());

      Prepared first, second;
      REQUIRE(PrepareSession(model, limits, &shared, &first).ok());
      CHECK(shared.packed() == packs);
      // A second session with other limits (a wider beam) reuses the same packed layers.
      Limits beam = limits;
      beam.beam_size = 2;
      const Status prepared = PrepareSession(model, beam, &shared, &second);
      INFO(prepared.message());
      REQUIRE(prepared.ok());
      INFO(second.session.backend_report());
      CHECK(Translate(first.session, 3) == expected);
      CHECK(Translate(second.session, 3) == expected);
      CHECK(Translate(second.session, 1) == Translate(own.session, 1));
      CHECK(Translate(second.session, 3, 2) == [&] {
        Prepared wide;
        REQUIRE(PrepareSession(model, beam, nullptr, &wide).ok());
        return Translate(wide.session, 3, 2);
      }());

      // A third with fp16 K/V caches (its decoder's K/V projections write with another stride)
      // reuses them too, and translates as an fp16-cache session with its own copy.
      Limits half = limits;
      half.kv_cache = CacheType::kFloat16;
      Prepared third, half_own;
      REQUIRE(PrepareSession(model, half, &shared, &third).ok());
      REQUIRE(PrepareSession(model, half, nullptr, &half_own).ok());
      CHECK(Translate(third.session, 3) == Translate(half_own.session, 3));

      const size_t own_arena = own.arena.size();
      const size_t shared_arena = first.arena.size();
      if (packs) {
        // The packed bytes left the arena: the shared memory holds them plus a table of the
        // layers (24 bytes each), the arena held them plus a 64-byte allocator header each
        // (measured: f32 613,120 left the arena, 611,840 shared, 20 layers).
        REQUIRE(shared.used_bytes() > 0);
        CHECK(own_arena - shared_arena + 1024 >= shared.used_bytes());
        CHECK(own_arena - shared_arena <= shared.used_bytes() + 64 * 64);
        CHECK(shared.used_bytes() <= shared_bytes.value());
      } else {
        CHECK(own_arena == shared_arena);
      }
    }
}

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
TEST_CASE("sessions sharing packed weights translate on two threads at once", "[shared_weights]") {
  const testing::AlignedBytes bytes = testing::ModelBytes(testing::WideConfig(), 7, DType::kI8, 0);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  const Limits limits = SmallLimits(Backend::kXnnpack);
  Prepared own;
  REQUIRE(PrepareSession(model, limits, nullptr, &own).ok());
  const Output expected = Translate(own.session, 3);

  std::vector<uint8_t> memory(SharedWeights::RequiredBytes(model, limits).value());
  SharedWeights shared;
  REQUIRE(shared.Init(memory.data(), memory.size()).ok());
  Prepared a, b;
  REQUIRE(PrepareSession(model, limits, &shared, &a).ok());
  REQUIRE(PrepareSession(model, limits, &shared, &b).ok());
  Output out_a, out_b;
  Status status_a, status_b;
  std::thread ta([&] {
    for (int i = 0; i < 20 && status_a.ok(); ++i) status_a = TranslateOnThread(a.session, &out_a);
  });
  std::thread tb([&] {
    for (int i = 0; i < 20 && status_b.ok(); ++i) status_b = TranslateOnThread(b.session, &out_b);
  });
  ta.join();
  tb.join();
  INFO(status_a.message() << " / " << status_b.message());
  REQUIRE(status_a.ok());
  REQUIRE(status_b.ok());
  CHECK(out_a == expected);
  CHECK(out_b == expected);
}

TEST_CASE("shared weights refuse what they were not packed for", "[shared_weights]") {
  const testing::XnnpackInt8ForTest xnnpack_int8;  // packed operators, cut per thread
  const testing::AlignedBytes bytes = testing::ModelBytes(testing::WideConfig(), 7, DType::kI8, 0);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  const Limits limits = SmallLimits(Backend::kXnnpack);
  const size_t need = SharedWeights::RequiredBytes(model, limits).value();
  Prepared p;

  SECTION("no memory") {
    SharedWeights shared;
    const Status s = PrepareSession(model, limits, &shared, &p);
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(std::string(s.message()).find("SharedWeights::Init") != std::string::npos);
  }
  SECTION("too little memory, then enough") {
    std::vector<uint8_t> memory(need);
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), need / 2).ok());
    const Status s = PrepareSession(model, limits, &shared, &p);
    INFO(s.message());
    CHECK(s.code() == StatusCode::kArenaTooSmall);
    CHECK_FALSE(shared.packed());
    REQUIRE(shared.Init(memory.data(), need).ok());
    CHECK(PrepareSession(model, limits, &shared, &p).ok());
    CHECK(shared.packed());
  }
  SECTION("another model") {
    std::vector<uint8_t> memory(need);
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), need).ok());
    REQUIRE(PrepareSession(model, limits, &shared, &p).ok());
    const testing::AlignedBytes other_bytes =
        testing::ModelBytes(testing::WideConfig(), 8, DType::kI8, 0);
    const Model other = Model::Load(other_bytes.data(), other_bytes.size()).value();
    Prepared q;
    const Status s = PrepareSession(other, limits, &shared, &q);
    INFO(s.message());
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(std::string(s.message()).find("another model") != std::string::npos);
  }
  SECTION("the same model with other kernels") {
    std::vector<uint8_t> memory(need);
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), need).ok());
    REQUIRE(PrepareSession(model, limits, &shared, &p).ok());
    // The layers now take the f32-activation int8 operator: another packed layout.
    xnn::SetUnsupportedPathsForTesting(xnn::PathBit(xnn::LinearPath::kQd8Qc8w));
    Prepared q;
    const Status s = PrepareSession(model, limits, &shared, &q);
    xnn::SetUnsupportedPathsForTesting(0);
    INFO(s.message());
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(std::string(s.message()).find("no packed layer like this one") != std::string::npos);
    CHECK(Translate(p.session, 3).lengths[0] > 0);  // the packed session is untouched
  }
  SECTION("sessions of another thread count") {
    // Two threads cut the layers into one operator per thread (xnnpack/linear.h), each part a
    // packed layer of its own: weights packed for one-thread sessions do not fit.
    std::vector<uint8_t> memory(need);
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), need).ok());
    REQUIRE(PrepareSession(model, limits, &shared, &p).ok());
    Limits two = limits;
    two.threads = 2;
    Prepared q;
    const Status s = PrepareSession(model, two, &shared, &q);
    INFO(s.message());
    CHECK(s.code() == StatusCode::kFailedPrecondition);
    CHECK(std::string(s.message()).find("another thread count") != std::string::npos);
  }
}

TEST_CASE("two-thread sessions share their cut layers and translate as one thread does",
          "[shared_weights]") {
  const testing::XnnpackInt8ForTest xnnpack_int8;  // cut operators are what this is about
  for (DType dtype : {DType::kF32, DType::kI8, DType::kI4}) {
    INFO(DTypeName(dtype));
    const testing::AlignedBytes bytes = testing::ModelBytes(testing::WideConfig(), 9, dtype, 0);
    const Model model = Model::Load(bytes.data(), bytes.size()).value();
    const Limits limits = SmallLimits(Backend::kXnnpack);
    Prepared own;
    REQUIRE(PrepareSession(model, limits, nullptr, &own).ok());
    const Output expected = Translate(own.session, 3);
    Limits two = limits;
    two.threads = 2;
    std::vector<uint8_t> memory(SharedWeights::RequiredBytes(model, two).value());
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), memory.size()).ok());
    Prepared a, b;
    REQUIRE(PrepareSession(model, two, &shared, &a).ok());
    Limits two_beams = two;  // a second session with a wider beam reuses the same parts
    two_beams.beam_size = 2;
    REQUIRE(PrepareSession(model, two_beams, &shared, &b).ok());
    INFO(a.session.backend_report());
    // (int4 layers on the integer loops, where XNNPACK's kernel is wrong: cut per call instead.)
    if (dtype != DType::kI4 || XnnpackTakesInt4(0)) {
      CHECK(std::string(a.session.backend_report()).find("cut into 2 operators") !=
            std::string::npos);
    }
    CHECK(Translate(a.session, 3) == expected);
    CHECK(Translate(b.session, 3) == expected);
    CHECK(Translate(b.session, 3, 2) == [&] {
      Limits beam = limits;
      beam.beam_size = 2;
      Prepared wide;
      REQUIRE(PrepareSession(model, beam, nullptr, &wide).ok());
      return Translate(wide.session, 3, 2);
    }());
  }
}
#endif

TEST_CASE("a generator shares packed weights too", "[shared_weights]") {
  ModelConfig config = testing::WideConfig();
  config.architecture = Architecture::kDecoderOnly;
  config.encoder_layers = 0;
  config.src_vocab_size = 0;
  config.shared_embeddings = false;
  config.norm_placement = NormPlacement::kPre;
  const testing::AlignedBytes bytes = testing::RandomModelBytes(config, 11, DType::kI8);
  const Model model = Model::Load(bytes.data(), bytes.size()).value();
  for (Backend backend : testing::Backends()) {
    Limits limits;
    limits.backend = backend;
    limits.max_source_length = 8;
    limits.max_target_length = 16;
    const int32_t prompt[] = {3, 7, 1};
    auto run = [&](SharedWeights* shared) {
      auto need = Generator::RequiredArenaBytes(model, limits, shared);
      INFO(need.status().message());
      REQUIRE(need.ok());
      std::vector<uint8_t> arena(need.value());
      Generator g;
      const Status s = g.Prepare(model, limits, arena.data(), arena.size(), shared);
      INFO(s.message());
      REQUIRE(s.ok());
      std::vector<int32_t> out(12);
      size_t n = 0;
      GenerationOptions options;
      options.max_new_tokens = 12;
      REQUIRE(g.Generate(Span<const int32_t>(prompt, 3), Span<int32_t>(out.data(), out.size()), &n,
                         options)
                  .ok());
      out.resize(n);
      return out;
    };
    auto need = SharedWeights::RequiredBytes(model, limits);
    INFO(need.status().message());
    REQUIRE(need.ok());
    std::vector<uint8_t> memory(need.value());
    SharedWeights shared;
    REQUIRE(shared.Init(memory.data(), memory.size()).ok());
    const std::vector<int32_t> expected = run(nullptr);
    CHECK(run(&shared) == expected);  // packs
    CHECK(run(&shared) == expected);  // reuses
    CHECK(shared.packed() == (backend == Backend::kXnnpack));
  }
}

}  // namespace
}  // namespace tern
