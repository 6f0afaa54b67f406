// A multilingual model's language table (format 1.7, schema Model.languages): language code ->
// token, sorted by code. The source sentence starts with its language's token (NLLB
// "[deu_Latn] tokens </s>", M2M100 "__de__ tokens </s>"), the target's token is the decoder's
// forced first token (DecodingOptions::forced_bos_id).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/status.h"

namespace tern {

namespace schema {
struct Model;
}  // namespace schema

// Load's check: codes non-empty, sorted and unique (the lookup is a binary search), every token
// inside both vocabularies (it is a source and a target token).
Status CheckLanguages(const schema::Model& model, int32_t src_vocab, int32_t tgt_vocab);

// The token of `code`. No table: kFailedPrecondition; an unknown code: kInvalidArgument naming
// the nearest known codes (edit distance, at most three).
Status FindLanguage(const schema::Model& model, const char* code, int32_t* token);

}  // namespace tern
