// tern bench --linear: the XNNPACK fully-connected paths of this build, timed one layer at a time
// at several row counts M (1: a batch-1 decode step; 4, 16, 64: batched steps and beams; the
// encoder's source tokens), so the choice between 4-bit and 8-bit weights at a given batch size
// rests on a measurement of this CPU (issue 20: int4 at batch > 1).
#pragma once

#include <cstdint>
#include <vector>

namespace tern::cli {

struct LinearBenchSettings {
  // Layer shapes [n, k]: the model's (d x d, ffn x d, d x ffn, vocab x d), or paper base's.
  std::vector<std::pair<int64_t, int64_t>> shapes;
  std::vector<int64_t> rows{1, 4, 16, 64};
  int32_t threads = 1;
  int repeat = 20, warmup = 3;
  int64_t int4_block = 32;  // the converter's default block for int4 (qb4w)
  // The calls of one measurement cycle through copies of the layer (each with its own packed
  // weights) that together take at least this many bytes, so the weights come from memory, as
  // in a decode step where the other layers evicted them; 0: one copy, weights in cache.
  double working_set_bytes = 96.0 * 1024 * 1024;
  bool json = false;
  // > 0: instead of the table, the vocabulary shortlist's row kernel against gathering this
  // many rows into an operator of their own (the last shape: vocabulary x d).
  int64_t gather_rows = 0;
  // Instead of the table: int8 layers on `threads` threads two ways, XNNPACK's own tiling on
  // the pool (as a session runs them) against the output rows cut into one operator per
  // thread, each run as one pool task (issue 20: threads at batch > 1).
  bool split = false;
  // The weight types timed (bit i: kLinearBenchWeights[i]); the table's ratio columns print "-"
  // where one of their two types is left out. A 1B model's 128k-row vocabulary layer took over
  // 10 minutes with every type, most of it in f32 and f16.
  uint32_t weights = ~0u;
};

// --weights names, in the table's column order: f32, f16, int8 (qc8w), int4 per row (qc4w), int4
// per block (qb4w), and int8 / int4 per row as sessions run them.
inline constexpr const char* kLinearBenchWeights[] = {
    "f32", "f16", "int8", "int4row", "int4block", "int8-session", "int4-session"};
inline constexpr int kLinearBenchWeightCount =
    sizeof(kLinearBenchWeights) / sizeof(kLinearBenchWeights[0]);

// Times f32, f16, int8 (qc8w), int4 per row (qc4w) and int4 per block (qb4w) on random weights
// of each shape and prints the table (or JSON); returns the exit status. Throws
// std::runtime_error when XNNPACK is not usable or an operator cannot be created.
int BenchLinear(const LinearBenchSettings& s);

}  // namespace tern::cli
