#include "runtime/decoding/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/decoding/logits_processing.h"
#include "runtime/kernels/vectorized/log_sum_exp.h"

namespace tern {

void Pcg32::Seed(uint64_t seed, uint64_t stream) {
  // pcg32_srandom_r: the stream picks the (odd) increment, then the seed is mixed in.
  state = 0;
  increment = (stream << 1u) | 1u;
  Next();
  state += seed;
  Next();
}

uint32_t Pcg32::Next() {
  const uint64_t old = state;
  state = old * 6364136223846793005ULL + increment;
  const uint32_t xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
  const uint32_t rot = static_cast<uint32_t>(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

double Pcg32::NextDouble() {
  // 27 + 26 bits: the usual construction of a uniform double with 53 random mantissa bits.
  const uint64_t a = Next() >> 5;
  const uint64_t b = Next() >> 6;
  return static_cast<double>(a * 67108864u + b) * (1.0 / 9007199254740992.0);
}

Status CheckSamplingOptions(const SamplingOptions& o) {
  if (!(o.temperature >= 0.0f) || !std::isfinite(o.temperature)) {
    return Status::Error(StatusCode::kInvalidArgument, "temperature must be a finite value >= 0");
  }
  if (o.top_k < 0)
    return Status::Error(StatusCode::kInvalidArgument, "top_k = %d; must be >= 0", o.top_k);
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) {
    return Status::Error(StatusCode::kInvalidArgument, "top_p must be in (0, 1]");
  }
  return Status::Ok();
}

size_t SamplingScratchBytes(int32_t vocab) {
  const size_t v = vocab > 0 ? static_cast<size_t>(vocab) : 0;
  return v * (sizeof(double) + sizeof(int32_t));
}

int32_t Sample(const float* logits, int32_t vocab, const SamplingOptions& options, Pcg32* rng,
               void* scratch) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  auto z = [&](int32_t i) { return std::isnan(logits[i]) ? neg_inf : logits[i]; };
  double* weights = static_cast<double*>(scratch);
  int32_t* ids = reinterpret_cast<int32_t*>(weights + vocab);
  int32_t n = 0;
  for (int32_t i = 0; i < vocab; ++i) {
    if (z(i) > neg_inf) ids[n++] = i;
  }
  if (options.temperature == 0.0f || options.top_k == 1 || n <= 1) return ArgMax(logits, vocab);

  // Larger logit first, lower id first among equals: a strict total order, so std::sort and
  // std::partial_sort (in place, no allocation) give one result everywhere.
  auto before = [&](int32_t a, int32_t b) { return z(a) > z(b) || (z(a) == z(b) && a < b); };
  bool sorted = false;
  if (options.top_k > 0 && options.top_k < n) {
    std::partial_sort(ids, ids + options.top_k, ids + n, before);
    n = options.top_k;
    sorted = true;
  }
  const bool nucleus = options.top_p < 1.0f;
  if (nucleus && !sorted) {
    std::sort(ids, ids + n, before);
    sorted = true;
  }
  float max = z(ids[0]);
  if (!sorted) {
    for (int32_t j = 1; j < n; ++j) max = std::max(max, z(ids[j]));
  }
  const double inv_t = 1.0 / static_cast<double>(options.temperature);
  double total = 0.0;
  for (int32_t j = 0; j < n; ++j) {
    weights[j] = std::exp((static_cast<double>(z(ids[j])) - max) * inv_t);
    total += weights[j];
  }
  if (nucleus) {
    // Smallest prefix (in descending order) whose mass reaches top_p of the total.
    const double target = static_cast<double>(options.top_p) * total;
    double mass = 0.0;
    int32_t kept = n;
    for (int32_t j = 0; j < n; ++j) {
      mass += weights[j];
      if (mass >= target) {
        kept = j + 1;
        break;
      }
    }
    n = kept;
    total = 0.0;
    for (int32_t j = 0; j < n; ++j) total += weights[j];
  }
  const double u = rng->NextDouble() * total;  // renormalizing = scaling the draw
  double cumulative = 0.0;
  int32_t last = ids[0];
  for (int32_t j = 0; j < n; ++j) {
    if (weights[j] <= 0.0) continue;
    cumulative += weights[j];
    last = ids[j];
    if (u < cumulative) return ids[j];
  }
  return last;
}

float TokenLogProbability(const float* logits, int32_t vocab, const SamplingOptions& options,
                          int32_t token, void* scratch) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const float inv_t = options.temperature > 0.0f ? 1.0f / options.temperature : 1.0f;
  float* scaled = static_cast<float*>(scratch);
  for (int32_t i = 0; i < vocab; ++i) {
    scaled[i] = std::isnan(logits[i]) ? neg_inf : logits[i] * inv_t;  // branch-free select
  }
  if (!(scaled[token] > neg_inf)) return neg_inf;
  return scaled[token] - vec::LogSumExp(scaled, vocab);
}

}  // namespace tern
