#include "tests/fuzz/fuzz_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>

#include "converter/error.h"

namespace tern::fuzz {

void Die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "tern fuzz invariant broken: %s%s%s\n", what, detail.empty() ? "" : ": ",
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

void Refused(const char* message) {
  static const bool verbose = [] {
    const char* v = std::getenv("TERN_FUZZ_VERBOSE");
    return v != nullptr && v[0] == '1';
  }();
  if (verbose) std::fprintf(stderr, "refused: %s\n", message);
}

MemFile::MemFile() {
  fd_ = memfd_create("tern-fuzz", MFD_CLOEXEC);
  if (fd_ < 0) Die("memfd_create failed");
}

MemFile::~MemFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string MemFile::Write(const uint8_t* data, size_t size) {
  if (::ftruncate(fd_, 0) != 0) Die("ftruncate failed");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) Die("pwrite failed");
    done += static_cast<size_t>(n);
  }
  return "/proc/self/fd/" + std::to_string(fd_);
}

void CheckAndReadCheckpoint(const convert::Checkpoint& checkpoint, size_t file_size,
                            int64_t max_elements) {
  // Overflow-checked int64 arithmetic (no __int128: the targets build for 32-bit ARM too).
  constexpr int64_t kHuge = int64_t{1} << 62;
  for (const auto& kv : checkpoint.tensors()) {
    const convert::CheckpointTensor& t = kv.second;
    const std::string where = "tensor \"" + kv.first + "\" (" + t.where + ")";
    if (t.shape.size() != t.strides.size()) Die("shape and strides differ in rank", where);
    uint64_t storage_bytes = 0;
    if (t.storage_elements < 0 ||
        __builtin_mul_overflow(static_cast<uint64_t>(t.storage_elements),
                               static_cast<uint64_t>(convert::SourceDTypeBytes(t.dtype)),
                               &storage_bytes) ||
        storage_bytes > file_size) {
      Die("storage is larger than the input file",
          where + ", storage_elements " + std::to_string(t.storage_elements));
    }
    bool empty = false;
    int64_t count = 1;  // saturates at kHuge: only "more than max_elements" matters below
    for (int64_t d : t.shape) {
      if (d < 0) Die("negative dimension", where);
      if (d == 0) {
        empty = true;
      } else if (__builtin_mul_overflow(count, d, &count) || count > kHuge) {
        count = kHuge;
      }
    }
    if (empty) continue;
    if (t.offset < 0) Die("negative offset", where);
    int64_t last = t.offset;
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (t.strides[i] < 0) Die("negative stride", where);
      int64_t step = 0;
      if (__builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &step) ||
          __builtin_add_overflow(last, step, &last)) {
        Die("view reaches past int64", where + ", shape " + t.shape_string());
      }
    }
    if (last >= t.storage_elements) {
      Die("view reaches past its storage",
          where + ", storage_elements " + std::to_string(t.storage_elements) + ", offset " +
              std::to_string(t.offset) + ", shape " + t.shape_string());
    }
    if (t.base == nullptr) Die("null base", where);
    if (count > max_elements) continue;
    try {
      if (convert::SourceDTypeIsFloat(t.dtype)) {
        const convert::HostTensor h = checkpoint.Float(kv.first);
        if (static_cast<int64_t>(h.values.size()) != count) {
          Die("Float returned the wrong element count", where);
        }
      } else {
        const std::vector<int64_t> v = checkpoint.Ints(kv.first);
        if (static_cast<int64_t>(v.size()) != count)
          Die("Ints returned the wrong element count", where);
      }
    } catch (const convert::Error&) {
      // An error naming the tensor is a fine answer (e.g. dtype surprise).
    }
  }
}

AlignedCopy::AlignedCopy(const uint8_t* data, size_t size) : size_(size) {
  // aligned_alloc's size must be a multiple of the alignment; operator new with an alignment
  // gives exactly `size` addressable bytes under ASan.
  data_ = static_cast<uint8_t*>(::operator new (size == 0 ? 1 : size, std::align_val_t{64}));
  if (size) std::memcpy(data_, data, size);
}

AlignedCopy::~AlignedCopy() { ::operator delete (data_, std::align_val_t{64}); }

std::vector<uint8_t> ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot read", path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace tern::fuzz
