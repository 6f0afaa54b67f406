// The pre-tokenizer split patterns of the byte-level BPE tokenizers, as hand-written matchers
// (no regex engine at run time). Each matcher returns what Oniguruma, the regex engine of
// Hugging Face's Rust tokenizers, matches at a position: the first alternative that matches,
// each quantifier greedy with backtracking. \p{L}, \p{N} and \s (White_Space) come from
// unicode_classes.h.
//
//   GPT-2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   LLaMA 3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//            ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2:   LLaMA 3's, with \p{N} in place of \p{N}{1,3}
//
// Every code point is in \p{L}, \p{N}, \s or [^\s\p{L}\p{N}], so each pattern matches at every
// position, at least one code point: splitting (behavior Isolated) is matching from the start,
// then from the end of each match, and the matches are the pieces.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern::bpe {

enum class SplitPattern : uint8_t { kGpt2, kLlama3, kQwen2 };

// Bytes of the pattern's match at text[pos] (valid UTF-8, pos < size, pos at a code point):
// at least one code point.
size_t MatchSplitPattern(SplitPattern pattern, const uint8_t* text, size_t size, size_t pos);

}  // namespace tern::bpe
