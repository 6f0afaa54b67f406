// Beam search's reordering of a K/V cache (CTranslate2 gathers its caches the same way): the
// rows come in groups (a sentence's hypotheses), and row j of a group takes over what row
// sources[j] of the same group held. The copies go through scratch, so rows may swap.
#pragma once

#include <cstdint>

namespace tern::ref {

// rows: groups * group rows of row_floats floats each; sources[r]: the row (of r's group) that
// row r takes over. Only the first `used` floats of each row are copied. A group whose sources
// are its own rows is left as it is. scratch: group * row_floats floats.
void GatherRowsInGroups(float* rows, int64_t groups, int64_t group, int64_t row_floats,
                        int64_t used, const int32_t* sources, float* scratch);

}  // namespace tern::ref
