// Model::ConsumedHook: Prepare tells the model's provider which tensors the XNNPACK backend
// packed a copy of, and a file mapping that drops those pages (posix MappedFile::DropPages)
// still translates exactly as before, in a session prepared before the drop and in one prepared
// after it (the pages load again from the file). Issue 20: packed weights are not resident twice.
#include <unistd.h>

#include <catch2/catch_test_macros.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "platforms/posix/mapped_file.h"
#include "tests/runtime/models/backend_models.h"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

struct Range {
  const void* data;
  size_t bytes;
};

void Record(void* user, const void* data, size_t bytes) {
  static_cast<std::vector<Range>*>(user)->push_back({data, bytes});
}

ModelConfig WideConfig() {  // layers of several pages each (f32 128 x 128 = 64 KiB)
  ModelConfig c = testing::TinyConfig();
  c.d_model = 128;
  c.heads = 4;
  c.d_ff = 256;
  return c;
}

std::vector<int32_t> Translate(const Model& model, const Limits& limits) {
  auto need = Session::RequiredArenaBytes(model, limits);
  INFO(need.status().message());
  REQUIRE(need.ok());
  std::vector<uint8_t> arena(need.value());
  Session session;
  REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
  const std::vector<int32_t> src = {5, 9, 4, 11, 7, 2};
  std::vector<int32_t> out(static_cast<size_t>(limits.max_target_length));
  size_t length = 0;
  REQUIRE(session
              .TranslateIds(Span<const int32_t>(src.data(), src.size()),
                            Span<int32_t>(out.data(), out.size()), &length)
              .ok());
  out.resize(length);
  return out;
}

TEST_CASE("Prepare reports the packed weights and nothing else", "[xnnpack][memory]") {
  const testing::AlignedBytes bytes = testing::RandomModelBytes(WideConfig(), 3);
  Model model = Model::Load(bytes.data(), bytes.size()).value();
  std::vector<Range> told;
  model.set_consumed_hook(Record, &told);
  Limits limits;
  limits.max_source_length = 16;
  limits.max_target_length = 8;
  limits.backend = Backend::kReference;
  Translate(model, limits);
  CHECK(told.empty());  // the reference kernels read the model's bytes on every call
#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
  limits.backend = Backend::kXnnpack;
  Translate(model, limits);
  REQUIRE(!told.empty());
  // Each range is exactly one linear layer's weight tensor in the file.
  size_t weights = 0;
  for (size_t i = 0; i < model.tensor_count(); ++i) {
    const TensorInfo t = model.tensor(i);
    const std::string name = t.name;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0 && t.rank == 2 &&
        name.find("layer_norm") == std::string::npos && name.find("embed") == std::string::npos) {
      ++weights;
    }
  }
  for (const Range& r : told) {
    bool found = false;
    for (size_t i = 0; i < model.tensor_count() && !found; ++i) {
      const TensorInfo t = model.tensor(i);
      found = t.data == r.data && t.data_size == r.bytes;
    }
    CHECK(found);
  }
  // Every projection, and the tied output table (TinyConfig ties it to the shared embedding,
  // whose rows load back from the file as they are used).
  REQUIRE(model.config().tied_output);
  CHECK(told.size() == weights + 1);
#endif
}

#if defined(TERN_WITH_XNNPACK) && TERN_WITH_XNNPACK
// Two sentences' ids and greedy scores (sums of log-probabilities: they see every weight, where a
// random model's ids are often one token repeated), as floats.
std::vector<float> Scored(Session& session, const Limits& limits) {
  const int32_t src[2][6] = {{5, 9, 4, 11, 7, 2}, {12, 3, 30, 2, 0, 0}};
  const int32_t lengths[2] = {6, 4};
  const int64_t t = limits.max_target_length;
  std::vector<int32_t> ids(static_cast<size_t>(2 * t));
  int32_t out_lengths[2];
  float scores[2];
  REQUIRE(session
              .TranslateIds(&src[0][0], 6, lengths, 2, DecodingOptions(), ids.data(), t,
                            out_lengths, scores)
              .ok());
  std::vector<float> all = {scores[0], scores[1]};
  for (int b = 0; b < 2; ++b) {
    for (int32_t i = 0; i < out_lengths[b]; ++i) all.push_back(static_cast<float>(ids[b * t + i]));
  }
  return all;
}

// Every layer's bytes are given back on XNNPACK's backend: those it packs, and those that run
// tern's own loops (int4 where XNNPACK's kernel is wrong, blocks it has no operator for), which
// read a copy in the arena (xnn::LinearSpec::copy_weight). Proof that nothing reads them after
// Prepare: the model's bytes of every range given back are overwritten with garbage, and the
// session still translates as before. (Not the tied embedding's: its rows are looked up.)
TEST_CASE("after Prepare a session reads no weight it packed or copied", "[xnnpack][memory]") {
  struct Case {
    const char* name;
    DType dtype;
    int64_t group;
  };
  for (const Case& c :
       {Case{"f32", DType::kF32, 0}, Case{"i8", DType::kI8, 0}, Case{"i4 per row", DType::kI4, 0},
        Case{"i4 blocks of 32", DType::kI4, 32}, Case{"i4 blocks of 16", DType::kI4, 16}}) {
    INFO(c.name);
    const testing::AlignedBytes pristine =
        testing::ModelBytes(testing::WideConfig(), 11, c.dtype, c.group);
    Limits limits;
    limits.max_source_length = 16;
    limits.max_target_length = 10;
    limits.backend = Backend::kXnnpack;
    limits.max_batch = 2;
    const Model pristine_model = Model::Load(pristine.data(), pristine.size()).value();
    auto pristine_need = Session::RequiredArenaBytes(pristine_model, limits);
    REQUIRE(pristine_need.ok());
    std::vector<uint8_t> pristine_arena(pristine_need.value());
    Session pristine_session;
    REQUIRE(pristine_session
                .Prepare(pristine_model, limits, pristine_arena.data(), pristine_arena.size())
                .ok());
    const std::vector<float> expected = Scored(pristine_session, limits);

    testing::AlignedBytes bytes = pristine;
    Model model = Model::Load(bytes.data(), bytes.size()).value();
    std::vector<Range> told;
    model.set_consumed_hook(Record, &told);
    auto need = Session::RequiredArenaBytes(model, limits);
    REQUIRE(need.ok());
    std::vector<uint8_t> arena(need.value());
    Session session;
    REQUIRE(session.Prepare(model, limits, arena.data(), arena.size()).ok());
    INFO(session.backend_report());
    size_t weights = 0, scribbled = 0;
    for (size_t i = 0; i < model.tensor_count(); ++i) {
      const TensorInfo t = model.tensor(i);
      const std::string name = t.name;
      weights += name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0 &&
                 t.rank == 2 && name.find("layer_norm") == std::string::npos &&
                 name.find("embed") == std::string::npos;
    }
    for (const Range& r : told) {
      bool embedding = false;
      for (size_t i = 0; i < model.tensor_count(); ++i) {
        const TensorInfo t = model.tensor(i);
        embedding = embedding ||
                    (t.data == r.data && std::string(t.name).find("embed") != std::string::npos);
      }
      if (embedding) continue;
      std::memset(const_cast<void*>(r.data), 0x5A, r.bytes);
      ++scribbled;
    }
    CHECK(scribbled == weights);  // every projection's bytes, whichever kernel runs it
    CHECK(Scored(session, limits) == expected);
  }
}

TEST_CASE("a mapping that drops the packed pages translates the same", "[xnnpack][memory]") {
  const testing::AlignedBytes bytes = testing::RandomModelBytes(WideConfig(), 5);
  char path[] = "/tmp/tern_consumed_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(fd);
  Limits limits;
  limits.max_source_length = 16;
  limits.max_target_length = 10;
  limits.backend = Backend::kXnnpack;
  const std::vector<int32_t> expected =
      Translate(Model::Load(bytes.data(), bytes.size()).value(), limits);
  {
    auto file = posix::MappedFile::Open(path);
    REQUIRE(file.ok());
    REQUIRE(file->mapped());
    Model model = Model::Load(file->data(), file->size()).value();
    model.set_consumed_hook(&posix::MappedFile::DropPages, nullptr);
    CHECK(Translate(model, limits) == expected);  // prepared, dropped, translated
    CHECK(Translate(model, limits) == expected);  // prepared again from reloaded pages
    // The reference kernels read every weight from the mapping, dropped pages included.
    limits.backend = Backend::kReference;
    CHECK(Translate(model, limits) ==
          Translate(Model::Load(bytes.data(), bytes.size()).value(), limits));
  }
  std::remove(path);
}
#endif

}  // namespace
}  // namespace tern
