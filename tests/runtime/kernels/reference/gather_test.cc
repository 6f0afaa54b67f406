// ref::GatherRowsInGroups against a copy made row by row from a snapshot: random permutations
// and repetitions within each group (rows that swap, a row taken by several), groups left as
// they are, and the floats past `used` untouched.
#include "runtime/kernels/reference/gather.h"

#include <catch2/catch_test_macros.hpp>
#include <cstdint>
#include <random>
#include <vector>

namespace {

TEST_CASE("GatherRowsInGroups: row j of each group takes over row sources[j]", "[kernels]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t groups = 1 + static_cast<int64_t>(rng() % 4);
    const int64_t group = 1 + static_cast<int64_t>(rng() % 5);
    const int64_t row_floats = 1 + static_cast<int64_t>(rng() % 7);
    const int64_t used = static_cast<int64_t>(rng() % (row_floats + 1));
    std::vector<float> rows(static_cast<size_t>(groups * group * row_floats));
    for (float& x : rows) x = static_cast<float>(rng() % 1000);
    std::vector<int32_t> sources(static_cast<size_t>(groups * group));
    for (int64_t r = 0; r < groups * group; ++r) {
      const int64_t g = r / group;
      const bool keep = trial % 3 == 0 && g == 0;  // one group that stays as it is
      sources[static_cast<size_t>(r)] =
          static_cast<int32_t>(keep ? r : g * group + static_cast<int64_t>(rng() % group));
    }
    const std::vector<float> before = rows;
    std::vector<float> scratch(static_cast<size_t>(group * row_floats), -1.0f);
    tern::ref::GatherRowsInGroups(rows.data(), groups, group, row_floats, used, sources.data(),
                                  scratch.data());
    for (int64_t r = 0; r < groups * group; ++r) {
      for (int64_t i = 0; i < row_floats; ++i) {
        const int64_t from = i < used ? sources[static_cast<size_t>(r)] : r;
        CHECK(rows[static_cast<size_t>(r * row_floats + i)] ==
              before[static_cast<size_t>(from * row_floats + i)]);
      }
    }
  }
}

}  // namespace
