// The converter is an offline tool and reports problems by exception; the message always names
// the file, tensor or field at fault. The CLI turns it into one line on stderr and exit 1.
#pragma once

#include <stdexcept>
#include <string>

namespace tern::convert {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace tern::convert
