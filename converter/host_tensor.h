// A tensor as the converter handles it: a name, a shape, and values in float32 (every input
// dtype is widened on read; quantization happens on the way out).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::convert {

struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  std::string shape_string() const;
};

}  // namespace tern::convert
