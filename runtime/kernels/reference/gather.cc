#include "runtime/kernels/reference/gather.h"

#include <cstring>

namespace tern::ref {

void GatherRowsInGroups(float* rows, int64_t groups, int64_t group, int64_t row_floats,
                        int64_t used, const int32_t* sources, float* scratch) {
  const size_t bytes = static_cast<size_t>(used) * sizeof(float);
  for (int64_t g = 0; g < groups; ++g) {
    const int32_t* from = sources + g * group;
    bool identity = true;
    for (int64_t j = 0; j < group; ++j) identity = identity && from[j] == g * group + j;
    if (identity) continue;
    for (int64_t j = 0; j < group; ++j)
      std::memcpy(scratch + j * row_floats, rows + from[j] * row_floats, bytes);
    for (int64_t j = 0; j < group; ++j)
      std::memcpy(rows + (g * group + j) * row_floats, scratch + j * row_floats, bytes);
  }
}

}  // namespace tern::ref
