// Where `tern convert` writes: the rules for the output path, and the temporary file that
// becomes it. The output is never written in place: bytes go to a temporary file beside it,
// which is fsynced, then moved onto the final name in one step (a reader that mapped the old
// file keeps it intact), and the directory is fsynced so the new name survives a crash.
//
//   - a symbolic link as OUTPUT: its target is replaced (the link itself stays a link);
//   - OUTPUT that exists and is not a regular file (a device, a fifo, a directory): refused;
//   - OUTPUT that is one of the input files (same device and inode): refused, even with --force;
//   - without overwrite the final name is created exclusively (renameat2 RENAME_NOREPLACE, or
//     link() where the file system has no renameat2): of two concurrent converts to one path,
//     exactly one succeeds and the other reports that the file exists;
//   - SIGINT / SIGTERM while the temporary file exists removes it, then ends the process as the
//     signal would have.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tern::convert {

// The path the output really names (a symlink's target, resolved), after checking the rules
// above against what exists now. Throws convert::Error naming the path and the reason.
std::string CheckOutputPath(const std::string& path, bool overwrite,
                            const std::vector<std::string>& inputs);

// A temporary file in the directory of `final_path`, removed by the destructor unless
// committed, and by SIGINT / SIGTERM while it exists (one at a time per process).
class TempFile {
 public:
  explicit TempFile(const std::string& final_path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  const std::string& path() const { return path_; }
  // Writes all bytes and fsyncs them; throws with strerror on failure.
  void Write(const uint8_t* data, size_t size);
  // Moves the file onto final_path (replacing it only when overwrite) and fsyncs the directory.
  void Commit(bool overwrite);

 private:
  std::string final_path_;
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace tern::convert
