#include "runtime/core/dtype.h"

namespace tern {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kI8:
      return "i8";
    case DType::kI4:
      return "i4";
    case DType::kI32:
      return "i32";
  }
  return "unknown";
}

}  // namespace tern
