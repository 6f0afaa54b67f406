// Element types of tensors in a .tern file and in the arena.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

// Values match schema/tern.fbs's DType.
enum class DType : uint8_t { kF32 = 0, kF16 = 1, kI8 = 2, kI4 = 3, kI32 = 4 };

const char* DTypeName(DType dtype);

// Bytes for `count` elements laid out as one row (I4: two per byte, rounded up).
inline size_t DTypeRowBytes(DType dtype, size_t count) {
  switch (dtype) {
    case DType::kF32:
      return count * 4;
    case DType::kF16:
      return count * 2;
    case DType::kI8:
      return count;
    case DType::kI4:
      return (count + 1) / 2;
    case DType::kI32:
      return count * 4;
  }
  return 0;
}

}  // namespace tern
