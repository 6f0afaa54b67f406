// IEEE half -> double, written from the format's definition and independent of
// runtime/core/fp16.h on purpose: tests check the runtime's and the converter's conversions
// against it. Finite values only (exponent 31, inf and NaN, is not decoded).
#pragma once

#include <cmath>
#include <cstdint>

namespace tern::testing {

inline double HalfToDouble(uint16_t h) {
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  const double v = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

}  // namespace tern::testing
