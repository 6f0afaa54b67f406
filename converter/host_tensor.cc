#include "converter/host_tensor.h"

namespace tern::convert {

std::string HostTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace tern::convert
