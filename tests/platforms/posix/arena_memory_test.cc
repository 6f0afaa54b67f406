// posix::ArenaMemory: the tools' arena allocation (huge pages where offered). Whether the kernel
// backs it with huge pages is the machine's business and not checked; what a caller relies on is.
#include "platforms/posix/arena_memory.h"

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "tern/tern.hpp"
#include "tests/support/tiny_model.h"

namespace tern {
namespace {

TEST_CASE("ArenaMemory: zero-filled, 2 MiB aligned, writable, moved without a double unmap",
          "[platform]") {
  const size_t bytes = (size_t{5} << 20) + 3;  // not a whole number of huge pages
  auto allocated = posix::ArenaMemory::Allocate(bytes);
  REQUIRE(allocated.ok());
  posix::ArenaMemory memory = std::move(allocated.value());
  REQUIRE(memory.data() != nullptr);
  CHECK(memory.size() == bytes);
  CHECK(reinterpret_cast<uintptr_t>(memory.data()) % (size_t{2} << 20) == 0);
  for (size_t at : {size_t{0}, size_t{4095}, size_t{2} << 20, bytes - 1}) {
    CHECK(memory.data()[at] == 0);
    memory.data()[at] = 7;
    CHECK(memory.data()[at] == 7);
  }
  posix::ArenaMemory moved = std::move(memory);
  CHECK(memory.data() == nullptr);
  CHECK(moved.data()[bytes - 1] == 7);
  moved = posix::ArenaMemory();  // unmaps; the moved-from object's destructor must not
  CHECK(moved.data() == nullptr);
}

TEST_CASE("ArenaMemory: nothing asked, nothing mapped; an impossible size is an error",
          "[platform]") {
  auto empty = posix::ArenaMemory::Allocate(0);
  REQUIRE(empty.ok());
  CHECK(empty.value().data() == nullptr);
  auto huge = posix::ArenaMemory::Allocate(SIZE_MAX - 1);
  REQUIRE(!huge.ok());
  CHECK(huge.status().code() == StatusCode::kOutOfMemory);
}

TEST_CASE("a session prepared in ArenaMemory translates as in any other memory", "[platform]") {
  const testing::AlignedBytes bytes = testing::RandomModelBytes(testing::TinyConfig(), 7);
  auto loaded = Model::Load(bytes.data(), bytes.size());
  REQUIRE(loaded.ok());
  Limits limits;
  limits.max_source_length = 8;
  limits.max_target_length = 8;
  auto need = Session::RequiredArenaBytes(loaded.value(), limits);
  REQUIRE(need.ok());
  auto memory = posix::ArenaMemory::Allocate(need.value());
  REQUIRE(memory.ok());
  std::vector<uint8_t> plain(need.value());
  Session in_pages, in_vector;
  REQUIRE(in_pages.Prepare(loaded.value(), limits, memory.value().data(), need.value()).ok());
  REQUIRE(in_vector.Prepare(loaded.value(), limits, plain.data(), plain.size()).ok());
  const std::vector<int32_t> src = {5, 6, 7, 2};
  std::vector<int32_t> a(8), b(8);
  size_t na = 0, nb = 0;
  REQUIRE(in_pages
              .TranslateIds(Span<const int32_t>(src.data(), src.size()),
                            Span<int32_t>(a.data(), a.size()), &na)
              .ok());
  REQUIRE(in_vector
              .TranslateIds(Span<const int32_t>(src.data(), src.size()),
                            Span<int32_t>(b.data(), b.size()), &nb)
              .ok());
  CHECK(na > 0);
  CHECK(na == nb);
  CHECK(a == b);
}

}  // namespace
}  // namespace tern
