// "After prepare, zero calls to malloc/new": counted, not claimed. Translating, encoding and
// decoding steps, and error paths inside translate run with the counter on.
#include <catch2/catch_test_macros.hpp>
#include <cstdlib>
#include <vector>

#include "tests/allocation/counting_allocator.h"
#include "tests/support/tiny_model.h"

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

TEST_CASE("translate allocates nothing after prepare", "[allocation]") {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kI8, DType::kI4}) {
    testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 21, dtype);
    auto model = Model::Load(bytes.data(), bytes.size());
    REQUIRE(model.ok());
    Limits limits;
    limits.max_batch = 3;
    limits.max_source_length = 12;
    limits.max_target_length = 10;
    std::vector<uint8_t> arena(Session::RequiredArenaBytes(model.value(), limits).value());
    Session session;
    REQUIRE(session.Prepare(model.value(), limits, arena.data(), arena.size()).ok());
    const int32_t src[3 * 12] = {4, 5, 6, 7, 2, 0, 0, 0, 0, 0, 0, 0,  //
                                 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 2,  //
                                 19, 2};
    const int32_t lengths[3] = {5, 12, 2};
    int32_t out[3 * 10];
    int32_t out_lengths[3];
    GreedyOptions options;

    testing::StartCountingAllocations();
    Status first = session.TranslateIds(src, 12, lengths, 3, options, out, 10, out_lengths);
    Status second = session.TranslateIds(src, 12, lengths, 1, options, out, 10, out_lengths);
    const int32_t bad[] = {4, 99, 2};  // out-of-vocabulary id: an error, still no allocation
    size_t produced = 0;
    Status error = session.TranslateIds(Span<const int32_t>(bad, 3), Span<int32_t>(out, 10), &produced);
    const size_t allocations = testing::StopCountingAllocations();

    INFO(DTypeName(dtype) << ": " << first.message() << second.message());
    CHECK(first.ok());
    CHECK(second.ok());
    CHECK(error.code() == StatusCode::kOutOfRange);
    CHECK(allocations == 0);
  }
}

}  // namespace
}  // namespace tern
