// BpeTokenizerData -> the schema's Tokenizer table of kind ByteLevelBpe (tern.fbs), with the
// lookup orders the runtime searches: merges sorted by (left, right), the byte-level tokens by
// their bytes, the added tokens by id and by content.
#pragma once

#include "converter/tokenizer/tokenizer_json.h"
#include "flatbuffers/flatbuffers.h"
#include "tern_generated.h"

namespace tern::convert {

flatbuffers::Offset<schema::Tokenizer> BuildBpeTokenizer(flatbuffers::FlatBufferBuilder& fbb,
                                                         const BpeTokenizerData& data);

}  // namespace tern::convert
