// runtime/core/fp16.h against references written here: binary16 decoded with ldexp, and
// float -> half by searching the sorted table of every finite half for the nearest value
// (ties to the even code). Exhaustive over all 65536 halves; random floats over every exponent.
#include "runtime/core/fp16.h"

#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {

using tern::Fp16ToFp32;
using tern::Fp32ToFp16;

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

bool IsHalfNaN(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0; }

// Value of a non-NaN half in double (inf for exponent 31).
double HalfValue(uint16_t h) {
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  double v;
  if (e == 31) {
    v = std::numeric_limits<double>::infinity();
  } else if (e == 0) {
    v = std::ldexp(m, -24);
  } else {
    v = std::ldexp(1024 + m, e - 25);
  }
  return (h & 0x8000) ? -v : v;
}

// Round-to-nearest-even float -> half, independent of the code under test. Codes 0..0x7C00 are
// monotonic in value; 0x7C00 (inf) takes part in rounding as 2^16, the next value after 65504
// had the exponent range continued, which is how IEEE 754 defines overflow under RNE.
uint16_t RefToHalf(float f) {
  if (std::isnan(f)) return 0x7E00;
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  static const std::vector<double> table = [] {
    std::vector<double> t;
    for (uint32_t code = 0; code <= 0x7C00; ++code) {
      t.push_back(code == 0x7C00 ? 65536.0 : HalfValue(static_cast<uint16_t>(code)));
    }
    return t;
  }();
  if (a >= 65536.0) return static_cast<uint16_t>(sign | 0x7C00);
  // First code with value >= a.
  const auto it = std::lower_bound(table.begin(), table.end(), a);
  uint32_t hi = static_cast<uint32_t>(it - table.begin());
  if (table[hi] == a || hi == 0) return static_cast<uint16_t>(sign | hi);
  const uint32_t lo = hi - 1;
  const double dlo = a - table[lo];
  const double dhi = table[hi] - a;
  uint32_t pick;
  if (dlo < dhi) {
    pick = lo;
  } else if (dhi < dlo) {
    pick = hi;
  } else {
    pick = (lo % 2 == 0) ? lo : hi;
  }
  return static_cast<uint16_t>(sign | pick);
}

}  // namespace

TEST_CASE("fp16: every half converts to the exact float", "[core][fp16]") {
  for (uint32_t code = 0; code < 65536; ++code) {
    const uint16_t h = static_cast<uint16_t>(code);
    const float f = Fp16ToFp32(h);
    INFO("half 0x" << std::hex << code);
    if (IsHalfNaN(h)) {
      REQUIRE(std::isnan(f));
      REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));
      // The payload moves to the top of the float mantissa.
      REQUIRE(((Bits(f) >> 13) & 0x3FF) == (h & 0x3FFu));
    } else {
      const double want = HalfValue(h);
      REQUIRE(static_cast<double>(f) == want);
      REQUIRE(std::signbit(f) == ((h & 0x8000) != 0));  // -0 stays -0
    }
  }
}

TEST_CASE("fp16: every half round-trips bit-exactly (NaNs become quiet NaNs)", "[core][fp16]") {
  for (uint32_t code = 0; code < 65536; ++code) {
    const uint16_t h = static_cast<uint16_t>(code);
    const uint16_t back = Fp32ToFp16(Fp16ToFp32(h));
    INFO("half 0x" << std::hex << code << " back 0x" << back);
    if (IsHalfNaN(h)) {
      REQUIRE(IsHalfNaN(back));
      REQUIRE((back & 0x8000) == (h & 0x8000));
      REQUIRE((back & 0x0200) != 0);  // quiet bit set
    } else {
      REQUIRE(back == h);
    }
  }
}

TEST_CASE("fp16: random floats of every exponent round to nearest even", "[core][fp16]") {
  std::mt19937 rng(801);
  // All float bit patterns (every exponent, float subnormals, NaN, inf).
  for (int n = 0; n < 400000; ++n) {
    const float f = FromBits(static_cast<uint32_t>(rng()));
    const uint16_t got = Fp32ToFp16(f);
    INFO("float bits 0x" << std::hex << Bits(f) << " got 0x" << got);
    if (std::isnan(f)) {
      REQUIRE(IsHalfNaN(got));
    } else {
      REQUIRE(got == RefToHalf(f));
    }
  }
  // Floats in and around the half range: exponents 2^-27 .. 2^17, random mantissas.
  std::uniform_int_distribution<int> exponent(127 - 27, 127 + 17);
  for (int n = 0; n < 400000; ++n) {
    const uint32_t bits =
        (static_cast<uint32_t>(rng()) & 0x807FFFFFu) | (static_cast<uint32_t>(exponent(rng)) << 23);
    const float f = FromBits(bits);
    INFO("float bits 0x" << std::hex << bits);
    REQUIRE(Fp32ToFp16(f) == RefToHalf(f));
  }
}

TEST_CASE("fp16: exact ties go to the even code, one ulp off goes the other way", "[core][fp16]") {
  // Midpoint between every pair of adjacent positive halves (finite, and 65504 | inf).
  for (uint32_t code = 0; code < 0x7C00; ++code) {
    const double lo = HalfValue(static_cast<uint16_t>(code));
    const double hi = code + 1 == 0x7C00 ? 65536.0 : HalfValue(static_cast<uint16_t>(code + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    INFO("between 0x" << std::hex << code << " and 0x" << code + 1);
    REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);  // exactly representable
    const uint32_t even = code % 2 == 0 ? code : code + 1;
    REQUIRE(Fp32ToFp16(mid) == even);
    REQUIRE(Fp32ToFp16(-mid) == (0x8000 | even));
    REQUIRE(Fp32ToFp16(std::nextafter(mid, 0.0f)) == code);
    REQUIRE(Fp32ToFp16(std::nextafter(mid, 1e30f)) == code + 1);
  }
}

TEST_CASE("fp16: overflow, subnormals, zeros and specials", "[core][fp16]") {
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(Fp32ToFp16(65504.0f) == 0x7BFF);
  REQUIRE(Fp32ToFp16(65519.996f) == 0x7BFF);
  REQUIRE(Fp32ToFp16(65520.0f) == 0x7C00);  // tie with 2^16 -> even -> inf
  REQUIRE(Fp32ToFp16(-65520.0f) == 0xFC00);
  REQUIRE(Fp32ToFp16(1e10f) == 0x7C00);
  REQUIRE(Fp32ToFp16(std::numeric_limits<float>::max()) == 0x7C00);
  REQUIRE(Fp32ToFp16(inf) == 0x7C00);
  REQUIRE(Fp32ToFp16(-inf) == 0xFC00);
  REQUIRE(IsHalfNaN(Fp32ToFp16(std::numeric_limits<float>::quiet_NaN())));
  REQUIRE(IsHalfNaN(Fp32ToFp16(std::numeric_limits<float>::signaling_NaN())));
  REQUIRE(Fp32ToFp16(0.0f) == 0x0000);
  REQUIRE(Fp32ToFp16(-0.0f) == 0x8000);
  REQUIRE(Fp32ToFp16(1.0f) == 0x3C00);
  REQUIRE(Fp32ToFp16(-2.0f) == 0xC000);
  REQUIRE(Fp32ToFp16(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  REQUIRE(Fp32ToFp16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  REQUIRE(Fp32ToFp16(std::ldexp(1.0f, -25)) == 0x0000);  // tie with 0 -> even -> 0
  REQUIRE(Fp32ToFp16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  REQUIRE(Fp32ToFp16(-std::ldexp(1.0f, -25)) == 0x8000);
  REQUIRE(Fp32ToFp16(3 * std::ldexp(1.0f, -25)) == 0x0002);  // tie 1|2 -> 2
  REQUIRE(Fp32ToFp16(5 * std::ldexp(1.0f, -25)) == 0x0002);  // tie 2|3 -> 2
  REQUIRE(Fp32ToFp16(std::numeric_limits<float>::denorm_min()) == 0x0000);
  REQUIRE(Fp32ToFp16(-std::numeric_limits<float>::denorm_min()) == 0x8000);
  // The largest subnormal rounding up into the smallest normal.
  REQUIRE(Fp32ToFp16(std::nextafter(std::ldexp(1.0f, -14), 0.0f)) == 0x0400);
  REQUIRE(Fp32ToFp16(1.0f / 3.0f) == 0x3555);
  REQUIRE(Fp16ToFp32(0x3555) == 0.333251953125f);
  REQUIRE(Fp16ToFp32(0x7BFF) == 65504.0f);
  REQUIRE(Fp16ToFp32(0x7C00) == inf);
  REQUIRE(Fp16ToFp32(0xFC00) == -inf);
  REQUIRE(Fp16ToFp32(0x0001) == std::ldexp(1.0f, -24));
  REQUIRE(Fp16ToFp32(0x03FF) == std::ldexp(1023.0f, -24));
}
