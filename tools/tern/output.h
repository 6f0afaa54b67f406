// Checked writes to stdout for the CLI commands. A full disk or a closed pipe must not pass for
// success: every command flushes through here and main() checks once more at exit.
#pragma once

#include <stdexcept>

namespace tern::cli {

// An output failure: not a per-line error, so no command goes on past it.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Flushes std::cout and stdout; throws OutputError ("cannot write to stdout: <strerror>") when
// any write so far or the flush failed.
void FlushStdout();

}  // namespace tern::cli
