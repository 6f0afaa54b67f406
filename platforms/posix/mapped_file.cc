#include "platforms/posix/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tern::posix {

Result<MappedFile> MappedFile::Open(const char* path) {
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
                         "%s is not a regular file (a fifo, device or directory cannot be mapped)",
                         path);
  }
  MappedFile file;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ == 0) {
    ::close(fd);
    return Status::Error(StatusCode::kInvalidModel, "%s is empty", path);
  }
  void* data = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) {
    return Status::Error(StatusCode::kIoError, "cannot map %s: %s", path, std::strerror(errno));
  }
  file.data_ = static_cast<uint8_t*>(data);
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace tern::posix
