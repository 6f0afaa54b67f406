// Beam search's reordering of a K/V cache (CTranslate2 gathers its caches the same way): the
// rows come in groups (a sentence's hypotheses), and row j of a group takes over what row
// sources[j] of the same group held. Rows may swap (copies of changing sources go through
// scratch).
#pragma once

#include <cstdint>
#include <cstring>

namespace tern::ref {

// rows: groups * group rows of row_elements elements each (floats, or an fp16 cache's halves);
// sources[r]: the row (of r's group) that row r takes over. Only the first `used` elements of
// each row are copied. scratch: group * row_elements elements.
//
// Only rows that take over another row are written. Such a row reads its source from the cache
// when the source keeps its own contents, and from a copy in scratch (taken before any write)
// when the source changes too. A beam step mostly keeps some hypotheses in place and extends one
// parent twice, e.g. sources {0, 0, 1, 2} (two saved rows and three writes) or {0, 1, 1, 3} (one
// write), where copying every row of the group through scratch made eight copies each: at
// beam 4 on the paper-base model that was half the search's time between decoder steps.
template <typename T>
void GatherRowsInGroups(T* rows, int64_t groups, int64_t group, int64_t row_elements, int64_t used,
                        const int32_t* sources, T* scratch) {
  const size_t bytes = static_cast<size_t>(used) * sizeof(T);
  if (bytes == 0) return;
  for (int64_t g = 0; g < groups; ++g) {
    const int32_t* from = sources + g * group;
    T* first = rows + g * group * row_elements;
    auto changes = [&](int64_t j) { return from[j] != g * group + j; };
    // Sources that change, saved once each (in the slot of their own index).
    for (int64_t j = 0; j < group; ++j) {
      if (!changes(j)) continue;
      const int64_t s = from[j] - g * group;
      if (!changes(s)) continue;
      bool saved = false;
      for (int64_t i = 0; i < j && !saved; ++i) saved = changes(i) && from[i] == from[j];
      if (!saved) std::memcpy(scratch + s * row_elements, first + s * row_elements, bytes);
    }
    for (int64_t j = 0; j < group; ++j) {
      if (!changes(j)) continue;
      const int64_t s = from[j] - g * group;
      const T* source = changes(s) ? scratch + s * row_elements : first + s * row_elements;
      std::memcpy(first + j * row_elements, source, bytes);
    }
  }
}

}  // namespace tern::ref
