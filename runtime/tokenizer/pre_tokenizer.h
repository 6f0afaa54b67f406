// The pre-tokenizer of a byte-level BPE tokenizer: a sequence of steps (Split with a known
// pattern, Digits, ByteLevel's prefix space), each applied to every piece the step before
// produced, as tokenizer.json's Sequence applies its pre-tokenizers. ByteLevel's byte-to-unicode
// mapping is not a step here: BPE works on the pieces' bytes directly (byte_level.h).
//
// No allocation: pieces are views of the text, except that PrefixSpace writes " " + piece into
// the caller's scratch buffer (so it may appear once in a pipeline).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/status.h"

namespace tern::bpe {

// The values of schema::PreTokenizerStep (tern.fbs).
enum class PreTokenizerStep : uint8_t {
  kSplitGpt2 = 0,
  kSplitLlama3 = 1,
  kSplitQwen2 = 2,
  kDigitsIndividual = 3,
  kDigitsContiguous = 4,
  kPrefixSpace = 5,
};
inline constexpr uint8_t kMaxPreTokenizerStep = 5;
// Longer pipelines are refused at load (real tokenizers use one to three steps).
inline constexpr size_t kMaxPreTokenizerSteps = 8;

const char* PreTokenizerStepName(PreTokenizerStep step);

// Receives the pieces of a pipeline run, in text order; a non-ok status stops the run.
class PieceSink {
 public:
  virtual Status Piece(const uint8_t* data, size_t size) = 0;

 protected:
  ~PieceSink() = default;
};

class PreTokenizer {
 public:
  PreTokenizer() = default;
  // Checks the steps (known values, at most one PrefixSpace, at most kMaxPreTokenizerSteps);
  // the steps must outlive the PreTokenizer.
  Status Init(const uint8_t* steps, size_t count);

  // Scratch bytes Run needs for a text of `size` bytes.
  size_t ScratchBytes(size_t size) const { return has_prefix_space_ ? size + 1 : 0; }

  // Splits valid UTF-8 text into pieces (none for empty text) and hands them to sink.
  Status Run(const uint8_t* text, size_t size, Span<uint8_t> scratch, PieceSink* sink) const;

 private:
  Status RunStep(size_t step, const uint8_t* text, size_t size, Span<uint8_t> scratch,
                 PieceSink* sink) const;

  const uint8_t* steps_ = nullptr;
  size_t count_ = 0;
  bool has_prefix_space_ = false;
};

}  // namespace tern::bpe
