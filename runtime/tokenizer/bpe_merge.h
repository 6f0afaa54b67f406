// Byte-pair merging of one pre-tokenized piece, as Hugging Face's BPE model does it (Rust
// tokenizers' Word::merge_all): start from one token per byte, then repeatedly merge the
// adjacent pair of lowest rank, the leftmost of equal ranks first, until no pair has a merge.
// A binary heap of candidate pairs keeps this O(n log n) in the piece's length; stale
// candidates (a side already merged away) are skipped when they come up.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/status.h"

namespace tern {
namespace schema {
struct BpeMerge;
}  // namespace schema

namespace bpe {

// Collects ids into a caller buffer; counts past its end, so the caller learns the size needed.
struct IdWriter {
  int32_t* ids = nullptr;
  size_t capacity = 0;
  size_t count = 0;
  void Push(int32_t id) {
    if (count < capacity) ids[count] = id;
    ++count;
  }
};

// Views of the merge table (schema::ByteLevelBpe::merges, sorted by (left, right)).
class BpeMerger {
 public:
  BpeMerger() = default;
  BpeMerger(const schema::BpeMerge* merges, size_t count, const int32_t* byte_tokens)
      : merges_(merges), count_(count), byte_tokens_(byte_tokens) {}

  // Workspace bytes MergePiece needs for a piece of `size` bytes.
  static size_t WorkspaceBytes(size_t size);

  // The merge of (left, right), or nullptr.
  const schema::BpeMerge* Find(int32_t left, int32_t right) const;

  // Merges the piece's bytes and pushes the resulting ids. The workspace must be 4-byte aligned
  // and hold WorkspaceBytes(size) bytes.
  Status MergePiece(const uint8_t* piece, size_t size, Span<uint8_t> workspace,
                    IdWriter* out) const;

 private:
  const schema::BpeMerge* merges_ = nullptr;
  size_t count_ = 0;
  const int32_t* byte_tokens_ = nullptr;  // 256 ids
};

}  // namespace bpe
}  // namespace tern
