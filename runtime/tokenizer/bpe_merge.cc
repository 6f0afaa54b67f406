#include "runtime/tokenizer/bpe_merge.h"

#include "tern_generated.h"

namespace tern::bpe {

namespace {

// One token of the piece being merged, in a doubly linked list over the piece's positions.
struct Symbol {
  int32_t id;
  int32_t prev;  // -1: first
  int32_t next;  // -1: last
};

// A candidate merge of the symbol at `pos` with the one after it, valid while both still hold
// the ids they had when it was pushed.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t left;
  int32_t right;
};

bool Before(const Candidate& a, const Candidate& b) {
  return a.rank != b.rank ? a.rank < b.rank : a.pos < b.pos;
}

// A min-heap of candidates in caller memory.
class CandidateHeap {
 public:
  CandidateHeap(Candidate* storage, size_t capacity) : items_(storage), capacity_(capacity) {}
  bool empty() const { return size_ == 0; }
  bool Push(const Candidate& c) {
    if (size_ == capacity_) return false;
    size_t i = size_++;
    while (i > 0) {
      const size_t parent = (i - 1) / 2;
      if (!Before(c, items_[parent])) break;
      items_[i] = items_[parent];
      i = parent;
    }
    items_[i] = c;
    return true;
  }
  Candidate Pop() {
    const Candidate top = items_[0];
    const Candidate last = items_[--size_];
    size_t i = 0;
    while (true) {
      const size_t left = 2 * i + 1;
      if (left >= size_) break;
      const size_t child =
          left + 1 < size_ && Before(items_[left + 1], items_[left]) ? left + 1 : left;
      if (!Before(items_[child], last)) break;
      items_[i] = items_[child];
      i = child;
    }
    if (size_ > 0) items_[i] = last;
    return top;
  }

 private:
  Candidate* items_;
  size_t capacity_;
  size_t size_ = 0;
};

// Each merge pushes at most two new candidates, and there are at most size - 1 merges.
size_t HeapCapacity(size_t size) { return size == 0 ? 0 : 3 * size; }

}  // namespace

size_t BpeMerger::WorkspaceBytes(size_t size) {
  return size * sizeof(Symbol) + HeapCapacity(size) * sizeof(Candidate);
}

const schema::BpeMerge* BpeMerger::Find(int32_t left, int32_t right) const {
  size_t lo = 0, hi = count_;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const schema::BpeMerge& m = merges_[mid];
    if (m.left() < left || (m.left() == left && m.right() < right)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < count_ && merges_[lo].left() == left && merges_[lo].right() == right) {
    return &merges_[lo];
  }
  return nullptr;
}

Status BpeMerger::MergePiece(const uint8_t* piece, size_t size, Span<uint8_t> workspace,
                             IdWriter* out) const {
  if (size == 0) return Status::Ok();
  if (size == 1) {
    out->Push(byte_tokens_[piece[0]]);
    return Status::Ok();
  }
  if (workspace.size() < WorkspaceBytes(size) ||
      reinterpret_cast<uintptr_t>(workspace.data()) % alignof(Symbol) != 0) {
    return Status::Error(StatusCode::kInternal,
                         "tokenizer: BPE workspace of %zu bytes for a piece of %zu bytes",
                         workspace.size(), size);
  }
  auto* symbols = reinterpret_cast<Symbol*>(workspace.data());
  CandidateHeap heap(reinterpret_cast<Candidate*>(symbols + size), HeapCapacity(size));
  const auto n = static_cast<int32_t>(size);
  for (int32_t i = 0; i < n; ++i) {
    symbols[i] = {byte_tokens_[piece[i]], i - 1, i + 1 < n ? i + 1 : -1};
  }
  auto push_pair = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return true;
    const schema::BpeMerge* m = Find(symbols[pos].id, symbols[next].id);
    return m == nullptr || heap.Push({m->rank(), pos, symbols[pos].id, symbols[next].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (!push_pair(i)) return Status::Error(StatusCode::kInternal, "tokenizer: BPE heap full");
  }
  while (!heap.empty()) {
    const Candidate c = heap.Pop();
    Symbol& s = symbols[c.pos];
    // Stale: the symbol was merged into the one before it (id -1), or either side changed.
    if (s.id != c.left || s.next < 0 || symbols[s.next].id != c.right) continue;
    const schema::BpeMerge* m = Find(c.left, c.right);
    if (m == nullptr) continue;  // cannot happen: the pair was pushed because it has a merge
    Symbol& absorbed = symbols[s.next];
    s.id = m->result();
    s.next = absorbed.next;
    if (absorbed.next >= 0) symbols[absorbed.next].prev = c.pos;
    absorbed.id = -1;
    if ((s.prev >= 0 && !push_pair(s.prev)) || !push_pair(c.pos)) {
      return Status::Error(StatusCode::kInternal, "tokenizer: BPE heap full");
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) out->Push(symbols[i].id);
  return Status::Ok();
}

}  // namespace tern::bpe
