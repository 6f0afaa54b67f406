#include "tools/tern/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

namespace tern::cli {

void FlushStdout() {
  errno = 0;
  std::cout.flush();
  const bool flush_failed = std::fflush(stdout) != 0;
  const int error = errno;
  if (flush_failed || std::ferror(stdout) || !std::cout) {
    // errno can be stale when an earlier buffered write failed; say so rather than guess.
    throw OutputError(std::string("cannot write to stdout: ") +
                      (error != 0 ? std::strerror(error) : "write error"));
  }
}

}  // namespace tern::cli
