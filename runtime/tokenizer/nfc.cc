#include "runtime/tokenizer/nfc.h"

#include "runtime/tokenizer/utf8.h"

namespace tern::unicode {

namespace {

// Unicode 3.12, conjoining jamo.
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

const Decomposition* FindDecomposition(uint32_t cp) {
  size_t lo = 0, hi = kDecompositionCount;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (kDecompositions[mid].code_point < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < kDecompositionCount && kDecompositions[lo].code_point == cp ? &kDecompositions[lo]
                                                                          : nullptr;
}

// The primary composite of (first, second), or 0.
uint32_t Compose(uint32_t first, uint32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
      second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  size_t lo = 0, hi = kCompositionCount;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    const Composition& c = kCompositions[mid];
    if (c.first < first || (c.first == first && c.second < second)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < kCompositionCount && kCompositions[lo].first == first &&
      kCompositions[lo].second == second) {
    return kCompositions[lo].composite;
  }
  return 0;
}

size_t Utf8Length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void PutUtf8(uint32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
  } else if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  } else {
    out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
}

Status TooSmall(const char* what) {
  return Status::Error(StatusCode::kInternal, "NFC: the %s is too small", what);
}

}  // namespace

uint8_t CombiningClass(uint32_t cp) {
  if (cp < 0x300) return 0;
  size_t lo = 0, hi = kCombiningClassCount;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (kCombiningClasses[mid].last < cp) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo < kCombiningClassCount && kCombiningClasses[lo].first <= cp
             ? kCombiningClasses[lo].combining_class
             : 0;
}

Status NormalizeNfc(const uint8_t* text, size_t size, Span<uint32_t> work, Span<uint8_t> out,
                    size_t* out_size) {
  *out_size = 0;
  bool ascii = true;
  for (size_t i = 0; i < size && ascii; ++i) ascii = text[i] < 0x80;
  if (ascii) {  // already NFC
    if (out.size() < size) return TooSmall("output");
    for (size_t i = 0; i < size; ++i) out[i] = text[i];
    *out_size = size;
    return Status::Ok();
  }
  // 1. Full canonical decomposition.
  size_t n = 0;
  auto put = [&](uint32_t cp) {
    if (n == work.size()) return false;
    work[n++] = cp;
    return true;
  };
  for (size_t pos = 0; pos < size;) {
    size_t length;
    const uint32_t cp = DecodeUtf8(text, size, pos, &length);
    pos += length;
    bool ok = true;
    if (cp >= kSBase && cp < kSBase + kSCount) {
      const uint32_t s = cp - kSBase;
      ok = put(kLBase + s / kNCount) && put(kVBase + (s % kNCount) / kTCount);
      if (s % kTCount != 0) ok = ok && put(kTBase + s % kTCount);
    } else if (const Decomposition* d = FindDecomposition(cp)) {
      for (uint8_t k = 0; k < d->length && ok; ++k) ok = put(kDecompositionPool[d->offset + k]);
    } else {
      ok = put(cp);
    }
    if (!ok) return TooSmall("working memory");
  }
  // 2. Canonical ordering: marks between starters sorted by combining class, stably.
  for (size_t i = 1; i < n; ++i) {
    const uint32_t cp = work[i];
    const uint8_t cc = CombiningClass(cp);
    if (cc == 0) continue;
    size_t j = i;
    while (j > 0 && CombiningClass(work[j - 1]) > cc) {
      work[j] = work[j - 1];
      --j;
    }
    work[j] = cp;
  }
  // 3. Canonical composition: each mark (or following starter) that is not blocked from the
  // last starter and composes with it replaces it; `last_class` is the class of the last code
  // point kept since that starter (-1: none).
  size_t kept = 0, starter = 0;
  bool have_starter = false;
  int last_class = -1;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t cp = work[i];
    const uint8_t cc = CombiningClass(cp);
    if (have_starter && (last_class == -1 || (last_class != 0 && last_class < cc))) {
      const uint32_t composite = Compose(work[starter], cp);
      if (composite != 0) {
        work[starter] = composite;
        continue;
      }
    }
    if (cc == 0) {
      starter = kept;
      have_starter = true;
      last_class = -1;
    } else {
      last_class = cc;
    }
    work[kept++] = cp;
  }
  // 4. Back to UTF-8.
  size_t bytes = 0;
  for (size_t i = 0; i < kept; ++i) {
    const size_t length = Utf8Length(work[i]);
    if (bytes + length > out.size()) return TooSmall("output");
    PutUtf8(work[i], out.data() + bytes);
    bytes += length;
  }
  *out_size = bytes;
  return Status::Ok();
}

}  // namespace tern::unicode
