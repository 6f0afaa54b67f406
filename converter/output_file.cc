#include "converter/output_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "converter/error.h"

namespace tern::convert {

namespace {

std::string Reason() { return std::strerror(errno); }

std::string DirOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The temporary file a signal handler must remove: a fixed buffer, because the handler may
// only call async-signal-safe functions (unlink, sigaction, raise).
char g_temp_path[PATH_MAX + 1];
volatile sig_atomic_t g_temp_armed = 0;
struct sigaction g_old_int, g_old_term;

void RemoveTempAndReraise(int signal_number) {
  if (g_temp_armed) ::unlink(g_temp_path);
  g_temp_armed = 0;
  // Restore the previous disposition and end the process as that signal would have.
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  ::raise(signal_number);
}

void ArmSignals(const std::string& path) {
  if (path.size() > PATH_MAX) throw Error(path + ": path too long");
  std::memcpy(g_temp_path, path.c_str(), path.size() + 1);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = RemoveTempAndReraise;
  sigemptyset(&sa.sa_mask);
  g_temp_armed = 1;
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

void DisarmSignals() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  g_temp_armed = 0;
}

void FsyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw Error(dir + ": cannot open the directory to sync it (" + Reason() + ")");
  const int rc = ::fsync(fd);
  const std::string reason = Reason();
  ::close(fd);
  // Some file systems cannot sync a directory (EINVAL): the rename itself still happened.
  if (rc != 0 && errno != EINVAL) throw Error(dir + ": cannot sync the directory (" + reason + ")");
}

// mkostemp creates 0600; a model is as readable as any file the user creates (0666 & ~umask).
// umask can only be read by setting it: the converter is single-threaded here.
mode_t CreationMode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

std::string CheckOutputPath(const std::string& path, bool overwrite,
                            const std::vector<std::string>& inputs) {
  if (path.empty()) throw Error("the output path is empty");
  std::string target = path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // A link's target is what is replaced: resolve it (a dangling link is refused).
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) {
      throw Error(path + ": a symbolic link whose target cannot be resolved (" + Reason() + ")");
    }
    target = resolved;
  }
  if (::stat(target.c_str(), &st) != 0) {
    if (errno != ENOENT) throw Error(path + ": cannot check the output (" + Reason() + ")");
    struct stat dir;
    if (::stat(DirOf(target).c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode)) {
      throw Error(path + ": the directory " + DirOf(target) + " does not exist");
    }
    return target;
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(path + " exists and is not a regular file (a device, fifo or directory); " +
                "refusing to replace it");
  }
  for (const auto& input : inputs) {
    struct stat in;
    if (!input.empty() && ::stat(input.c_str(), &in) == 0 && in.st_dev == st.st_dev &&
        in.st_ino == st.st_ino) {
      throw Error(path + " is the input file " + input + "; refusing to overwrite it");
    }
  }
  if (!overwrite) throw Error(path + " exists; pass --force to overwrite it");
  return target;
}

TempFile::TempFile(const std::string& final_path) : final_path_(final_path) {
  const size_t slash = final_path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : final_path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? final_path : final_path.substr(slash + 1);
  std::string templ = dir + "." + name + ".tmp.XXXXXX";
  // The handler must be armed before the file exists: block the signals between the two.
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &block, &old);
  fd_ = ::mkostemp(&templ[0], O_CLOEXEC);
  const int error = errno;
  if (fd_ >= 0) {
    path_ = templ;
    ArmSignals(path_);
  }
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  if (fd_ < 0) {
    throw Error(templ + ": cannot create the temporary file (" + std::strerror(error) + ")");
  }
  ::fchmod(fd_, CreationMode());
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !path_.empty()) ::unlink(path_.c_str());
  if (!path_.empty()) DisarmSignals();
}

void TempFile::Write(const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(path_ + ": write failed (" + (n < 0 ? Reason() : "no progress") + ")");
    data += n;
    size -= static_cast<size_t>(n);
  }
  if (::fsync(fd_) != 0) throw Error(path_ + ": fsync failed (" + Reason() + ")");
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error(path_ + ": close failed (" + Reason() + ")");
  }
  fd_ = -1;
}

void TempFile::Commit(bool overwrite) {
  if (overwrite) {
    if (::rename(path_.c_str(), final_path_.c_str()) != 0) {
      throw Error(final_path_ + ": cannot rename " + path_ + " into place (" + Reason() + ")");
    }
  } else if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, final_path_.c_str(),
                         RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST) throw Error(final_path_ + " exists; pass --force to overwrite it");
    if (errno != EINVAL && errno != ENOSYS) {
      throw Error(final_path_ + ": cannot rename " + path_ + " into place (" + Reason() + ")");
    }
    // No renameat2 here: link() creates the name exclusively too.
    if (::link(path_.c_str(), final_path_.c_str()) != 0) {
      if (errno == EEXIST) throw Error(final_path_ + " exists; pass --force to overwrite it");
      throw Error(final_path_ + ": cannot link " + path_ + " into place (" + Reason() + ")");
    }
    ::unlink(path_.c_str());
  }
  committed_ = true;
  FsyncDirectory(DirOf(final_path_));
}

}  // namespace tern::convert
