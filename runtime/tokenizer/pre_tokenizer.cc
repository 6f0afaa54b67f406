#include "runtime/tokenizer/pre_tokenizer.h"

#include <cstring>

#include "runtime/tokenizer/split_patterns.h"
#include "runtime/tokenizer/unicode_classes.h"
#include "runtime/tokenizer/utf8.h"

namespace tern::bpe {

const char* PreTokenizerStepName(PreTokenizerStep step) {
  switch (step) {
    case PreTokenizerStep::kSplitGpt2:
      return "Split(GPT-2 pattern)";
    case PreTokenizerStep::kSplitLlama3:
      return "Split(LLaMA 3 pattern)";
    case PreTokenizerStep::kSplitQwen2:
      return "Split(Qwen2 pattern)";
    case PreTokenizerStep::kDigitsIndividual:
      return "Digits(individual)";
    case PreTokenizerStep::kDigitsContiguous:
      return "Digits(contiguous)";
    case PreTokenizerStep::kPrefixSpace:
      return "ByteLevel prefix space";
  }
  return "unknown";
}

Status PreTokenizer::Init(const uint8_t* steps, size_t count) {
  if (count > kMaxPreTokenizerSteps) {
    return Status::Error(StatusCode::kInvalidModel,
                         "tokenizer: %zu pre-tokenizer steps, at most %zu are supported", count,
                         kMaxPreTokenizerSteps);
  }
  bool prefix_space = false;
  for (size_t i = 0; i < count; ++i) {
    if (steps[i] > kMaxPreTokenizerStep) {
      return Status::Error(StatusCode::kInvalidModel,
                           "tokenizer: pre-tokenizer step %zu is %u, which is unknown", i,
                           static_cast<unsigned>(steps[i]));
    }
    if (steps[i] == static_cast<uint8_t>(PreTokenizerStep::kPrefixSpace)) {
      if (prefix_space) {
        return Status::Error(StatusCode::kInvalidModel,
                             "tokenizer: more than one prefix-space pre-tokenizer step");
      }
      prefix_space = true;
    }
  }
  steps_ = steps;
  count_ = count;
  has_prefix_space_ = prefix_space;
  return Status::Ok();
}

Status PreTokenizer::Run(const uint8_t* text, size_t size, Span<uint8_t> scratch,
                         PieceSink* sink) const {
  if (scratch.size() < ScratchBytes(size)) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "tokenizer: pre-tokenizer scratch of %zu bytes, %zu needed",
                         scratch.size(), ScratchBytes(size));
  }
  if (size == 0) return Status::Ok();
  return RunStep(0, text, size, scratch, sink);
}

namespace {

// Digits: the pieces between \p{N} code points and the \p{N} code points themselves, each on its
// own (individual) or in runs (contiguous).
template <typename Emit>
Status SplitDigits(const uint8_t* text, size_t size, bool individual, Emit emit) {
  size_t start = 0, pos = 0;
  bool in_number = false;
  while (pos < size) {
    size_t length;
    const bool number =
        unicode::ClassOf(DecodeUtf8(text, size, pos, &length)) == unicode::CharClass::kNumber;
    if (pos > start && (number != in_number || (number && individual))) {
      TERN_RETURN_IF_ERROR(emit(text + start, pos - start));
      start = pos;
    }
    in_number = number;
    pos += length;
  }
  return emit(text + start, size - start);
}

}  // namespace

Status PreTokenizer::RunStep(size_t step, const uint8_t* text, size_t size, Span<uint8_t> scratch,
                             PieceSink* sink) const {
  if (step == count_) return sink->Piece(text, size);
  auto next = [&](const uint8_t* piece, size_t piece_size) {
    return RunStep(step + 1, piece, piece_size, scratch, sink);
  };
  const auto kind = static_cast<PreTokenizerStep>(steps_[step]);
  switch (kind) {
    case PreTokenizerStep::kSplitGpt2:
    case PreTokenizerStep::kSplitLlama3:
    case PreTokenizerStep::kSplitQwen2: {
      const SplitPattern pattern = kind == PreTokenizerStep::kSplitGpt2     ? SplitPattern::kGpt2
                                   : kind == PreTokenizerStep::kSplitLlama3 ? SplitPattern::kLlama3
                                                                            : SplitPattern::kQwen2;
      for (size_t pos = 0; pos < size;) {
        const size_t length = MatchSplitPattern(pattern, text, size, pos);
        TERN_RETURN_IF_ERROR(next(text + pos, length));
        pos += length;
      }
      return Status::Ok();
    }
    case PreTokenizerStep::kDigitsIndividual:
    case PreTokenizerStep::kDigitsContiguous:
      return SplitDigits(text, size, kind == PreTokenizerStep::kDigitsIndividual, next);
    case PreTokenizerStep::kPrefixSpace: {
      if (text[0] == ' ') return next(text, size);
      // Init allows one PrefixSpace step, and Run checked the scratch holds size + 1 bytes of
      // the whole text, so this piece fits.
      scratch[0] = ' ';
      std::memcpy(scratch.data() + 1, text, size);
      return next(scratch.data(), size + 1);
    }
  }
  return Status::Error(StatusCode::kInternal, "tokenizer: unknown pre-tokenizer step");
}

}  // namespace tern::bpe
