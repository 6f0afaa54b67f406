#include "converter/readers/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "converter/error.h"

namespace tern::convert {

std::shared_ptr<const FileBytes> FileBytes::Open(const std::string& path) {
  // O_NONBLOCK: opening a fifo would otherwise wait for a writer forever; it is refused below
  // (for a regular file the flag changes nothing).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + ": not a regular file (a fifo, device or directory cannot be read)");
  }
  std::shared_ptr<FileBytes> file(new FileBytes());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      throw Error(path + ": cannot map (" + std::strerror(errno) + ")");
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
  }
  ::close(fd);
  return file;
}

std::shared_ptr<const FileBytes> FileBytes::FromMemory(std::string bytes,
                                                       const std::string& label) {
  std::shared_ptr<FileBytes> file(new FileBytes());
  file->owned_ = std::move(bytes);
  file->data_ = reinterpret_cast<const uint8_t*>(file->owned_.data());
  file->size_ = file->owned_.size();
  file->path_ = label;
  return file;
}

FileBytes::~FileBytes() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tern::convert
