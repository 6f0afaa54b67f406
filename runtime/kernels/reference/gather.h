// Beam search's reordering of a K/V cache (CTranslate2 gathers its caches the same way): the
// rows come in groups (a sentence's hypotheses), and row j of a group takes over what row
// sources[j] of the same group held. The copies go through scratch, so rows may swap.
#pragma once

#include <cstdint>
#include <cstring>

namespace tern::ref {

// rows: groups * group rows of row_elements elements each (floats, or an fp16 cache's halves);
// sources[r]: the row (of r's group) that row r takes over. Only the first `used` elements of
// each row are copied. A group whose sources are its own rows is left as it is. scratch: group *
// row_elements elements.
template <typename T>
void GatherRowsInGroups(T* rows, int64_t groups, int64_t group, int64_t row_elements, int64_t used,
                        const int32_t* sources, T* scratch) {
  const size_t bytes = static_cast<size_t>(used) * sizeof(T);
  for (int64_t g = 0; g < groups; ++g) {
    const int32_t* from = sources + g * group;
    bool identity = true;
    for (int64_t j = 0; j < group; ++j) identity = identity && from[j] == g * group + j;
    if (identity) continue;
    for (int64_t j = 0; j < group; ++j)
      std::memcpy(scratch + j * row_elements, rows + from[j] * row_elements, bytes);
    for (int64_t j = 0; j < group; ++j)
      std::memcpy(rows + (g * group + j) * row_elements, scratch + j * row_elements, bytes);
  }
}

}  // namespace tern::ref
