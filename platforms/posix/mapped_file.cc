#include "platforms/posix/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace tern::posix {

void MappedFile::DropPages(void*, const void* data, size_t bytes) {
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0 || data == nullptr) return;
  const uintptr_t p = reinterpret_cast<uintptr_t>(data), size = static_cast<uintptr_t>(page);
  const uintptr_t first = (p + size - 1) / size * size, end = (p + bytes) / size * size;
  // Only whole pages: the neighbours' bytes on a shared page stay. A failure only means the
  // pages stay resident.
  if (end > first) {
    ::madvise(reinterpret_cast<void*>(first), end - first, MADV_DONTNEED);
    // What still reads these bytes (the embedding lookup of a tied output projection, a
    // fallback call) reads a row at a time: no readahead around it (a SmolLM-135M-shaped int8
    // model generating 32 tokens after 128: 112 -> 21 MB of the file resident).
    ::madvise(reinterpret_cast<void*>(first), end - first, MADV_RANDOM);
  }
}

namespace {

// Opens a regular, non-empty file for reading: its descriptor and size, or the error. verb names
// what the caller does with it ("mapped", "read") in the message.
Status OpenRegular(const char* path, const char* verb, int* fd_out, size_t* size) {
  // O_NONBLOCK: opening a fifo would otherwise wait for a writer forever; it is refused below
  // (for a regular file the flag changes nothing).
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Status::Error(StatusCode::kIoError, "cannot open %s: %s", path, std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Error(StatusCode::kIoError,
                         "%s is not a regular file (a fifo, device or directory cannot be %s)",
                         path, verb);
  }
  if (st.st_size == 0) {
    ::close(fd);
    return Status::Error(StatusCode::kInvalidModel, "%s is empty", path);
  }
  *fd_out = fd;
  *size = static_cast<size_t>(st.st_size);
  return Status::Ok();
}

}  // namespace

Result<MappedFile> MappedFile::Open(const char* path) {
  int fd = -1;
  MappedFile file;
  TERN_RETURN_IF_ERROR(OpenRegular(path, "mapped", &fd, &file.size_));
  void* data = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) {
    return Status::Error(StatusCode::kIoError, "cannot map %s: %s", path, std::strerror(errno));
  }
  file.data_ = static_cast<uint8_t*>(data);
  return file;
}

Result<MappedFile> MappedFile::Read(const char* path) {
  int fd = -1;
  MappedFile file;
  TERN_RETURN_IF_ERROR(OpenRegular(path, "read", &fd, &file.size_));
  // 64-byte aligned like the mapping's page alignment needs for tensor data.
  const size_t rounded = (file.size_ + 63) / 64 * 64;
  file.data_ = static_cast<uint8_t*>(std::aligned_alloc(64, rounded));
  file.heap_ = true;
  if (file.data_ == nullptr) {
    ::close(fd);
    return Status::Error(StatusCode::kIoError, "%s: cannot allocate %zu bytes to read it", path,
                         file.size_);
  }
  size_t done = 0;
  while (done < file.size_) {
    const ssize_t n = ::read(fd, file.data_ + done, file.size_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : 0;
      ::close(fd);
      return Status::Error(StatusCode::kIoError, "cannot read %s: %s", path,
                           error ? std::strerror(error) : "the file shrank while being read");
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return file;
}

void MappedFile::Release() {
  if (data_ == nullptr) return;
  if (heap_) {
    std::free(data_);
  } else {
    ::munmap(data_, size_);
  }
  data_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), heap_(other.heap_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = other.data_;
    size_ = other.size_;
    heap_ = other.heap_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { Release(); }

}  // namespace tern::posix
