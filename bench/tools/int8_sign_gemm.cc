// Whether an exact int8 GEMM built on AVX2's vpmaddubsw would beat the one XNNPACK 2024-11 runs
// on CPUs without AVX-512 or AVX-VNNI (qd8_f32_qc8w 4x8c8 "avx2": every weight widened to int16
// by vpmovsxbw, then vpmaddwd), for tern's int8 layers (docs/benchmarks.md, session 34).
//
// vpmaddubsw multiplies unsigned by signed bytes and adds pairs into int16 with saturation, so
// qd8's signed x cannot be fed to it as it is. The sign trick makes it exact: |x| is the
// unsigned side, and each weight takes x's sign (vpsignb). |x| <= 128 and |w| <= 127 (the
// converter's int8 range), so a pair sums to at most 2 x 128 x 127 = 32512 < 32767; vpmaddwd
// by ones then widens the pairs to int32. Per 32 multiply-adds: vpsignb, vpmaddubsw, vpmaddwd,
// vpaddd; XNNPACK's: two vpmaddwd of 16 and the widening of the weights (and of x).
//
// Tiles of 16 output columns x up to 4 rows of x, the weights packed as 16 columns x 4 k per 64
// bytes (each output stays in its own int32 lane: no horizontal sums), checked against a scalar
// int32 GEMM. Microseconds per call, median of the repeats; the calls cycle through copies of the
// weights that take --working-set MiB (0: one copy, in cache).
//   g++ -O2 -mavx2 -mfma bench/tools/int8_sign_gemm.cc -o int8_sign_gemm
//   ./int8_sign_gemm [working_set_mib] [rows,...]   (default 0 and 1,4,16,128,512)
// Compare with `tern bench --linear --rows ... --working-set ...` (XNNPACK's int8 column) in the
// same sitting, alternating the two (the machines here are noisy).
//
// Session 34, AMD EPYC (Zen 3, AVX2 only), weights in cache, 5 alternating pairs: the sign loop
// took 1.2-1.7x less time than XNNPACK's qc8w (median per shape: 512 x 512 1.41x / 1.20x / 1.29x
// at 4 / 16 / 512 rows; 2048 x 512 1.33x / 1.30x / 1.22x; 512 x 2048 1.70x / 1.74x / 1.61x;
// 32000 x 512 1.34x / 1.54x / 1.32x). It computes the int32 sums only: XNNPACK's time also
// holds x's quantization and the float epilogue (a few % at these sizes).
//
// Session 35, the same CPU model, did not see that margin again: the harness ran 47-58 G
// multiply-adds/s at 4 and 16 rows in cache, about XNNPACK's rate in `tern bench --linear`
// that day. Both take about one vector multiply per 16 multiply-adds (here vpmaddubsw plus
// vpmaddwd per 32), which seems to be what bounds them on Zen 3. The runtime's version
// (runtime/kernels/vectorized/linear_sign.cc: 3-row tiles, since session 36 4-row ones in
// assembly; the weights' row sums packed, a prefetch) runs 0.75-1.0x XNNPACK's time; its
// model-level gains are in docs/benchmarks.md.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int64_t kNr = 16;  // output columns per tile
constexpr int64_t kKg = 4;   // k per 32-bit lane

// w[n][k] -> [n / 16][k / 4][16][4], zero padded (k to 4, n to 16).
std::vector<int8_t> Pack(const std::vector<int8_t>& w, int64_t n, int64_t k) {
  const int64_t nb = (n + kNr - 1) / kNr, kg = (k + kKg - 1) / kKg;
  std::vector<int8_t> p(static_cast<size_t>(nb * kg * kNr * kKg), 0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t c = 0; c < k; ++c) {
      p[static_cast<size_t>(((j / kNr * kg + c / kKg) * kNr + j % kNr) * kKg + c % kKg)] =
          w[static_cast<size_t>(j * k + c)];
    }
  }
  return p;
}

// Rows of x padded to k4 = k rounded up to 4; xa = |x|.
struct Rows {
  std::vector<int8_t> x;
  std::vector<uint8_t> xa;
  int64_t m, k4;
};

// One row's step: 4 k of x against the 16 columns' weights b0, b1.
#define TERN_SIGN_ROW(i)                                                                     \
  if (MR > i) {                                                                              \
    int32_t a4, s4;                                                                          \
    std::memcpy(&a4, xa + i * r.k4 + g * 4, 4);                                              \
    std::memcpy(&s4, xs + i * r.k4 + g * 4, 4);                                              \
    const __m256i a = _mm256_set1_epi32(a4), s = _mm256_set1_epi32(s4);                      \
    c##i##0 = _mm256_add_epi32(                                                              \
        c##i##0, _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(b0, s)), ones)); \
    c##i##1 = _mm256_add_epi32(                                                              \
        c##i##1, _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(b1, s)), ones)); \
  }

// Up to 4 rows of x x 16 columns; the accumulators are named variables (an array of them was
// kept on the stack by GCC 12 -O2, a store per step, as in Debian's XNNPACK build).
template <int MR>
__attribute__((target("avx2"))) void SignTile(const Rows& r, int64_t i0, const int8_t* wp,
                                              int64_t kg, int32_t* y, int64_t ldy) {
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
          c30 = c00, c31 = c00;
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* xa = r.xa.data() + i0 * r.k4;
  const int8_t* xs = r.x.data() + i0 * r.k4;
  for (int64_t g = 0; g < kg; ++g, wp += 64) {
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(wp));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(wp + 32));
    TERN_SIGN_ROW(0)
    TERN_SIGN_ROW(1)
    TERN_SIGN_ROW(2)
    TERN_SIGN_ROW(3)
  }
  const __m256i out[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
  for (int i = 0; i < MR; ++i) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i * ldy), out[i][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i * ldy + 8), out[i][1]);
  }
}

using Tile = void (*)(const Rows&, int64_t, const int8_t*, int64_t, int32_t*, int64_t);

// y[m][n16] = x W^T (int32), tile by tile: every 16 columns, all rows 4 at a time, so a tile's
// weights (16 x k bytes) stay in L1 while x streams.
void Gemm(const Rows& r, const int8_t* wp, int64_t n, int64_t k, int32_t* y) {
  static const Tile tiles[4] = {SignTile<1>, SignTile<2>, SignTile<3>, SignTile<4>};
  const int64_t nb = (n + kNr - 1) / kNr, kg = (k + kKg - 1) / kKg, ldy = nb * kNr;
  for (int64_t j = 0; j < nb; ++j) {
    const int8_t* w = wp + j * kg * kNr * kKg;
    int64_t i = 0;
    for (; i + 4 <= r.m; i += 4) tiles[3](r, i, w, kg, y + i * ldy + j * kNr, ldy);
    if (i < r.m) tiles[r.m - i - 1](r, i, w, kg, y + i * ldy + j * kNr, ldy);
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const double ws_mib = argc > 1 ? std::atof(argv[1]) : 0;
  std::vector<int64_t> ms;
  {
    std::string s = argc > 2 ? argv[2] : "1,4,16,128,512";
    for (size_t p = 0; p < s.size();) {
      ms.push_back(std::atoll(s.c_str() + p));
      p = s.find(',', p);
      if (p == std::string::npos) break;
      ++p;
    }
  }
  const int64_t shapes[][2] = {{512, 512},   {2048, 512},  {512, 2048}, {32000, 512},
                               {2048, 2048}, {8192, 2048}, {2048, 8192}};
  std::mt19937 rng(7);
  std::printf("us per call (G multiply-adds/s); working set %.0f MiB\n", ws_mib);
  std::printf("%-12s %5s %18s\n", "n x k", "M", "sign");
  for (const auto& s : shapes) {
    const int64_t n = s[0], k = s[1], k4 = (k + 3) / 4 * 4;
    std::vector<int8_t> w(static_cast<size_t>(n * k));
    std::uniform_int_distribution<int> wd(-127, 127), xd(-128, 127);
    for (auto& v : w) v = static_cast<int8_t>(wd(rng));
    const std::vector<int8_t> one = Pack(w, n, k);
    const size_t bytes = one.size();
    const size_t copies = std::max<size_t>(1, static_cast<size_t>(ws_mib * 1048576.0 / bytes));
    int8_t* packed = static_cast<int8_t*>(std::aligned_alloc(64, (bytes * copies + 63) / 64 * 64));
    for (size_t c = 0; c < copies; ++c) std::memcpy(packed + c * bytes, one.data(), bytes);
    for (int64_t m : ms) {
      Rows r;
      r.m = m;
      r.k4 = k4;
      r.x.assign(static_cast<size_t>(m * k4), 0);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < k; ++c)
          r.x[static_cast<size_t>(i * k4 + c)] = static_cast<int8_t>(xd(rng));
      r.xa.resize(r.x.size());
      for (size_t e = 0; e < r.x.size(); ++e) {
        r.xa[e] = static_cast<uint8_t>(std::abs(static_cast<int>(r.x[e])));
      }
      const int64_t ldy = (n + kNr - 1) / kNr * kNr;
      std::vector<int32_t> ys(static_cast<size_t>(m * ldy));
      Gemm(r, packed, n, k, ys.data());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          int32_t want = 0;
          for (int64_t c = 0; c < k; ++c)
            want += r.x[static_cast<size_t>(i * k4 + c)] * w[static_cast<size_t>(j * k + c)];
          if (ys[static_cast<size_t>(i * ldy + j)] != want) {
            std::fprintf(stderr, "wrong at %lld x %lld, M %lld: row %lld col %lld\n",
                         static_cast<long long>(n), static_cast<long long>(k),
                         static_cast<long long>(m), static_cast<long long>(i),
                         static_cast<long long>(j));
            return 1;
          }
        }
        if (m * n * k > (int64_t{1} << 28)) break;  // big cases: the first row checked
      }
      const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
      const int reps = std::max(3, std::min(200, static_cast<int>(2e9 / macs)));
      std::vector<double> us;
      for (int rep = 0; rep < reps; ++rep) {
        const int8_t* wp = packed + static_cast<size_t>(rep) % copies * bytes;
        const auto t0 = std::chrono::steady_clock::now();
        Gemm(r, wp, n, k, ys.data());
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      const double t = Median(us);
      std::printf("%5lld x %-5lld %5lld %10.1f (%5.1f)\n", static_cast<long long>(n),
                  static_cast<long long>(k), static_cast<long long>(m), t, macs / t / 1e3);
    }
    std::free(packed);
  }
  return 0;
}
