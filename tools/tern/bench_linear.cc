// tern bench --linear (bench_linear.h). Each layer is built the way Session::Prepare builds one
// (LinearPlanner::Choose, the context's conversion operators, CreateLinear in an arena region of
// exactly the measured size) and run through RunLinear, the call the models make, so the times
// include what tern does around XNNPACK (quantizing activations per row for the qd8 paths,
// adding a bias) and nothing else.
#include "tools/tern/bench_linear.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "converter/host_tensor.h"
#include "converter/quantize.h"
#include "platforms/posix/arena_memory.h"
#include "runtime/kernels/backend.h"
#include "runtime/kernels/ops.h"
#include "runtime/kernels/vectorized/linear_rows.h"
#include "tools/tern/bench_util.h"

#if TERN_XNNPACK_BUILD
#include <pthreadpool.h>
#endif

namespace tern::cli {

#if TERN_XNNPACK_BUILD

namespace {

using bench::Clock;
using bench::Median;
using bench::Ms;

// A 64-byte aligned buffer (XNNPACK's arena regions and scratch must be).
class Aligned {
 public:
  explicit Aligned(size_t bytes) : storage_(bytes + 64, 0) {
    shift_ = (64 - reinterpret_cast<uintptr_t>(storage_.data()) % 64) % 64;
  }
  uint8_t* data() { return storage_.data() + shift_; }

 private:
  std::vector<uint8_t> storage_;
  size_t shift_ = 0;
};

struct Variant {
  const char* label;
  DType dtype;
  int64_t group;  // int4 only: 0 per row, else the block
  // As sessions choose (xnn::LinearSpec::prefer_loops): int8 on tern's AVX2 sign loops where
  // they beat XNNPACK on this CPU (vectorized/linear_sign.h), else the same operator.
  bool prefer_loops = false;
};

// One layer as Prepare creates it, in buffers of its own.
struct Layer {
  convert::EncodedTensor encoded;
  std::vector<float> bias;
  Aligned region{0}, scratch{0}, qd8_input{0}, qd8_params{0}, f16_input{0}, f16_output{0},
      qd8_rows{0};
  xnn::Context context;
  xnn::LinearKernel kernel;
  xnn::LinearChoice choice;
  size_t region_bytes = 0;  // the operators' (or the weight copy's) and context's arena bytes
  bool prefer_loops = false;

  // The weight as the layer's calls read it: a layer without an operator reads its copy in the
  // region (xnn::LinearSpec::copy_weight), as in a session.
  WeightView view() const {
    if (kernel.panel_weight.data != nullptr) return kernel.panel_weight;
    WeightView w;
    w.dtype = encoded.dtype;
    w.data = kernel.weight_copy != nullptr ? kernel.weight_copy : encoded.data.data();
    w.rows = encoded.shape[0];
    w.cols = encoded.shape[1];
    w.scales = encoded.scales.empty() ? nullptr : encoded.scales.data();
    w.group_size = encoded.group_size;
    return w;
  }
  // Bytes one call streams: the weights and their scales (what a decode step is bound by).
  double weight_bytes() const {
    return static_cast<double>(encoded.data.size()) +
           static_cast<double>(encoded.scales.size()) * sizeof(float);
  }
};

void Create(int64_t max_rows, pthreadpool_t pool, Layer* layer, int parts = 1,
            uint8_t* region = nullptr);

// parts: operators the output rows are cut into (a session's layer with a pool of 2 to 8
// threads: xnn::CutParts). region (optional, 64-byte aligned): where the operators (packed
// weights, or a layer's weight copy) go, layer->region_bytes of it; else a buffer of the layer's.
void Build(int64_t n, int64_t k, const Variant& v, int64_t max_rows, pthreadpool_t pool,
           Layer* layer, int parts = 1, uint8_t* region = nullptr) {
  convert::HostTensor t;
  t.name = "w";
  t.shape = {n, k};
  t.values.resize(static_cast<size_t>(n * k));
  std::mt19937 rng(static_cast<uint32_t>(n * 31 + k));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& x : t.values) x = dist(rng) * 0.05f;
  layer->encoded = convert::Encode(t, v.dtype, v.group);
  layer->prefer_loops = v.prefer_loops;
  Create(max_rows, pool, layer, parts, region);
}

// The second half of Build: the operators for layer->encoded, as Prepare creates them.
void Create(int64_t max_rows, pthreadpool_t pool, Layer* layer, int parts, uint8_t* region) {
  const int64_t n = layer->encoded.shape[0], k = layer->encoded.shape[1];
  layer->bias.assign(static_cast<size_t>(n), 0.01f);

  xnn::LinearSpec spec;
  spec.weight = layer->view();
  spec.bias = layer->bias.data();
  spec.max_rows = max_rows;
  spec.input_stride = k;
  spec.output_stride = n;
  spec.parts = parts;
  spec.copy_weight = true;  // as a session: a layer without an operator reads an arena copy
  spec.prefer_loops = layer->prefer_loops;
  xnn::LinearPlanner planner;
  bench::Check(planner.Choose(spec, &layer->choice), "choosing a path");
  xnn::ContextNeeds needs;
  needs.Add(spec, layer->choice.path);
  size_t context_bytes = 0;
  bench::Check(xnn::MeasureContext(needs, &context_bytes), "measuring the context");
  const size_t region_bytes = layer->choice.xnn_bytes + context_bytes;
  layer->region_bytes = region_bytes;
  if (region == nullptr) {
    layer->region = Aligned(region_bytes);
    region = layer->region.data();
  }
  layer->scratch = Aligned(layer->choice.scratch_bytes);
  layer->qd8_input = Aligned(needs.qd8_input_bytes);
  layer->qd8_params = Aligned(needs.qd8_params_bytes);
  layer->f16_input = Aligned(needs.f16_input_bytes);
  layer->f16_output = Aligned(needs.f16_output_bytes);
  layer->qd8_rows = Aligned(needs.qd8_rows_bytes);
  xnn::Context& c = layer->context;
  c.pool = pool;
  c.qd8_input = reinterpret_cast<int8_t*>(layer->qd8_input.data());
  c.qd8_input_bytes = needs.qd8_input_bytes;
  c.qd8_params = layer->qd8_params.data();
  c.qd8_params_bytes = needs.qd8_params_bytes;
  c.f16_input = reinterpret_cast<uint16_t*>(layer->f16_input.data());
  c.f16_input_bytes = needs.f16_input_bytes;
  c.f16_output = reinterpret_cast<uint16_t*>(layer->f16_output.data());
  c.f16_output_bytes = needs.f16_output_bytes;
  c.qd8_rows = layer->qd8_rows.data();
  c.qd8_rows_bytes = needs.qd8_rows_bytes;
  xnn::ArenaScope scope(region, region_bytes);
  bench::Check(xnn::CreateContext(needs, &c), "creating the context");
  bench::Check(xnn::CreateLinear(spec, layer->choice, &c, layer->scratch.data(), &layer->kernel),
               "creating the operator");
}

// What one call costs with its weights coming from memory, as in a decode step, where every
// layer's weights were evicted from the caches by the other layers' since its last call: the
// calls cycle through copies of the layer (each with its own packed weights) that together
// take s.working_set_bytes.
struct Shape {
  int64_t n = 0, k = 0, m = 0;
};

// One timed pass: every copy called once; microseconds per call. A layer XNNPACK has no path
// for (an int4 block that does not divide the row, int4 blocks on AVX512-VNNI) runs the
// vectorizable loops, as in a session (integer ones for int8 / int4: vectorized/linear_qd8.h).
double Pass(std::vector<Layer>& copies, const Shape& sh, const float* x, float* y) {
  const Clock::time_point t0 = Clock::now();
  for (Layer& layer : copies) {
    if (layer.kernel.path == xnn::LinearPath::kReference) {  // what ops::Linear runs then
      ops::Linear(x, sh.m, sh.k, layer.view(), layer.bias.data(), &layer.kernel, y, sh.n);
    } else if (!xnn::RunLinear(layer.kernel, x, sh.m, sh.k, y, sh.n)) {
      throw std::runtime_error("XNNPACK could not run a " + std::to_string(sh.m) + " x " +
                               std::to_string(sh.k) + " call");
    }
  }
  return Ms(t0, Clock::now()) * 1000.0 / static_cast<double>(copies.size());
}

// The vocabulary shortlist's two ways to compute C candidate rows of the output projection
// (docs/shortlist.md), on the model's vocabulary x d layer at int8 and int4 per row, weights
// from memory (calls cycle through copies, as Pass does):
//  - row kernel: every step quantizes x and computes the C rows' dot products from the full
//    weight (vec::QuantizeQd8 + LinearRowsQd8, what the runtime does);
//  - gather: once per sentence the C rows (and scales) are copied out and an XNNPACK operator
//    is created on them (packing, as Prepare does; the buffers, context and path choice are
//    made here too, which a runtime would make once: an upper bound), then every step runs that
//    operator on one row.
// Gathering pays after setup / (row step - gathered step) steps, if the gathered step is faster.
int BenchGather(const LinearBenchSettings& s, const Variant* variants, int count) {
  const int64_t n = s.shapes.back().first, k = s.shapes.back().second;
  const int64_t c = std::min(s.gather_rows, n);
  std::mt19937 rng(11);
  std::vector<int32_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int32_t> rows(all.begin(), all.begin() + c);
  std::sort(rows.begin(), rows.end());
  std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (auto& e : x) e = dist(rng);
  std::vector<int16_t> xq(static_cast<size_t>(k));
  std::printf("shortlist of %lld of %lld rows (k %lld), 1 thread, weights from memory; us\n",
              static_cast<long long>(c), static_cast<long long>(n), static_cast<long long>(k));
  std::printf("%-9s %10s | %12s %11s %11s | %12s %11s %11s\n", "weights", "rows/step", "pack/sent",
              "packed/step", "pays after", "copy/sent", "copied/step", "pays after");
  std::vector<int32_t> identity(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) identity[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  auto pays_after = [](double setup, double before, double after, char* out, size_t size) {
    if (after < before) {
      std::snprintf(out, size, "%.0f steps", std::ceil(setup / (before - after)));
    } else {
      std::snprintf(out, size, "never");
    }
  };
  for (int v = 0; v < count; ++v) {
    Layer probe;
    Build(n, k, variants[v], 1, nullptr, &probe);
    const size_t copies_count =
        static_cast<size_t>(std::max(1.0, std::ceil(s.working_set_bytes / probe.weight_bytes())));
    std::vector<Layer> copies(copies_count);
    for (Layer& layer : copies) Build(n, k, variants[v], 1, nullptr, &layer);
    std::vector<double> row_us, setup_us, gathered_us, copy_setup_us, copied_us;
    // The third way: the rows copied into one contiguous buffer per sentence (no packing), and
    // the row kernel on that copy at every step (rows 0..C-1, read front to back).
    const size_t row_bytes = probe.encoded.data.size() / static_cast<size_t>(n);
    std::vector<std::vector<uint8_t>> copied(
        copies.size(), std::vector<uint8_t>(row_bytes * static_cast<size_t>(c)));
    std::vector<std::vector<float>> copied_scales(copies.size(),
                                                  std::vector<float>(static_cast<size_t>(c)));
    std::vector<float> copied_bias(static_cast<size_t>(c), 0.01f);
    // The candidates' rows of every copy take only C x k bytes each, which the last-level cache
    // holds: before each timed part, untimed, a read of working_set_bytes evicts them, as the
    // other layers of a decode step do.
    std::vector<uint64_t> evict(
        static_cast<size_t>(std::max(s.working_set_bytes, 64.0 * 1024 * 1024) / 8), 1);
    uint64_t sink = 0;
    auto flush = [&] {
      for (uint64_t e : evict) sink += e;
    };
    for (int r = 0; r < s.warmup + s.repeat; ++r) {
      // Row kernel: one step per copy.
      flush();
      Clock::time_point t0 = Clock::now();
      for (Layer& layer : copies) {
        const WeightView w = layer.view();
        const vec::Qd8Row p = vec::QuantizeQd8(x.data(), k, xq.data());
        vec::LinearRowsQd8(xq.data(), p, w, layer.bias.data(), rows.data(), c, y.data());
      }
      const double row = Ms(t0, Clock::now()) * 1000.0 / static_cast<double>(copies.size());
      // Gather + create per copy (each a sentence), then one step on each gathered operator.
      std::vector<Layer> gathered(copies.size());
      t0 = Clock::now();
      for (size_t i = 0; i < copies.size(); ++i) {
        const convert::EncodedTensor& full = copies[i].encoded;
        convert::EncodedTensor& g = gathered[i].encoded;
        const size_t row_bytes = full.data.size() / static_cast<size_t>(n);
        g.dtype = full.dtype;
        g.shape = {c, k};
        g.data.resize(row_bytes * static_cast<size_t>(c));
        g.scales.resize(static_cast<size_t>(c));
        for (int64_t j = 0; j < c; ++j) {
          const size_t src = static_cast<size_t>(rows[static_cast<size_t>(j)]);
          std::memcpy(g.data.data() + static_cast<size_t>(j) * row_bytes,
                      full.data.data() + src * row_bytes, row_bytes);
          g.scales[static_cast<size_t>(j)] = full.scales[src];
        }
        Create(1, nullptr, &gathered[i]);
      }
      const double setup = Ms(t0, Clock::now()) * 1000.0 / static_cast<double>(copies.size());
      const Shape sh{c, k, 1};
      flush();
      const double step = Pass(gathered, sh, x.data(), y.data());
      // Copy per copy (each a sentence), then one step of the row kernel on each copy.
      flush();
      t0 = Clock::now();
      for (size_t i = 0; i < copies.size(); ++i) {
        const convert::EncodedTensor& full = copies[i].encoded;
        for (int64_t j = 0; j < c; ++j) {
          const size_t src = static_cast<size_t>(rows[static_cast<size_t>(j)]);
          std::memcpy(copied[i].data() + static_cast<size_t>(j) * row_bytes,
                      full.data.data() + src * row_bytes, row_bytes);
          copied_scales[i][static_cast<size_t>(j)] = full.scales[src];
        }
      }
      const double copy_setup = Ms(t0, Clock::now()) * 1000.0 / static_cast<double>(copies.size());
      flush();
      t0 = Clock::now();
      for (size_t i = 0; i < copies.size(); ++i) {
        WeightView w = copies[i].view();
        w.data = copied[i].data();
        w.rows = c;
        w.scales = copied_scales[i].data();
        const vec::Qd8Row p = vec::QuantizeQd8(x.data(), k, xq.data());
        vec::LinearRowsQd8(xq.data(), p, w, copied_bias.data(), identity.data(), c, y.data());
      }
      const double copied_step = Ms(t0, Clock::now()) * 1000.0 / static_cast<double>(copies.size());
      if (r >= s.warmup) {
        row_us.push_back(row);
        setup_us.push_back(setup);
        gathered_us.push_back(step);
        copy_setup_us.push_back(copy_setup);
        copied_us.push_back(copied_step);
      }
    }
    const double row = Median(row_us), setup = Median(setup_us), step = Median(gathered_us);
    const double copy_setup = Median(copy_setup_us), copied_step = Median(copied_us);
    char pays[32], copy_pays[32];
    pays_after(setup, row, step, pays, sizeof(pays));
    pays_after(copy_setup, row, copied_step, copy_pays, sizeof(copy_pays));
    std::printf("%-9s %10.1f | %12.1f %11.1f %11s | %12.1f %11.1f %11s\n", variants[v].label, row,
                setup, step, pays, copy_setup, copied_step, copy_pays);
    if (sink == 42) std::printf(" ");  // keeps the eviction reads
  }
  return 0;
}

// --split: one layer's output rows cut into `parts` slices, each an operator of its own (no pool:
// XNNPACK walks its tiles on the thread that runs it) writing its columns of the full output.
static_assert(xnn::kMaxParts == 8, "tern bench --split's usage message says 8 threads");

int BenchSplit(const LinearBenchSettings& s) {
  pthreadpool_t pool = pthreadpool_create(static_cast<size_t>(s.threads));
  if (pool == nullptr) throw std::runtime_error("could not create a thread pool");
  const Variant int8{"int8", DType::kI8, 0};
  const int64_t max_rows = *std::max_element(s.rows.begin(), s.rows.end());
  nlohmann::json out = nlohmann::json::array();
  if (!s.json) {
    std::printf(
        "int8 (qd8_f32_qc8w), us per call, calls cycling through %.0f MiB of layers: one thread; "
        "%d threads through XNNPACK's tiling of one operator; output rows cut into %d operators "
        "(as sessions run layers of at least %lld rows), one pool task each below %lld rows of "
        "x, from there each tiled over the pool in turn. Both governed as in a session; outputs "
        "checked identical.\n",
        s.working_set_bytes / (1024 * 1024), s.threads, s.threads,
        static_cast<long long>(s.threads * xnn::kPartAlign),
        static_cast<long long>(xnn::kTiledPartsRows));
    std::printf("%-12s %4s %12s %12s %8s %12s %8s\n", "n x k", "M", "1 thread", "tiled", "speedup",
                "cut", "speedup");
  }
  for (const auto& shape : s.shapes) {
    const int64_t n = shape.first, k = shape.second;
    // A layer too small to cut (fewer than 32 rows a part) is timed whole both ways.
    const int parts = xnn::CutParts(s.threads, n);
    Layer probe;
    Build(n, k, int8, max_rows, nullptr, &probe);
    const size_t count =
        static_cast<size_t>(std::max(1.0, std::ceil(s.working_set_bytes / probe.weight_bytes())));
    std::vector<Layer> single(count), tiled(count), cut(count);
    for (size_t c = 0; c < count; ++c) {
      Build(n, k, int8, max_rows, nullptr, &single[c]);
      Build(n, k, int8, max_rows, pool, &tiled[c]);
      Build(n, k, int8, max_rows, pool, &cut[c], parts);
    }
    for (int64_t m : s.rows) {
      const Shape sh{n, k, m};
      // 64-byte aligned, as a session's activations are: each part writes its columns of every
      // output row, and a cache line split between two parts would be written by both threads.
      const size_t x_count = static_cast<size_t>(m * k), y_count = static_cast<size_t>(m * n);
      Aligned x_bytes(x_count * sizeof(float)), y_bytes(y_count * sizeof(float)),
          y_cut_bytes(y_count * sizeof(float));
      float* x = reinterpret_cast<float*>(x_bytes.data());
      float* y = reinterpret_cast<float*>(y_bytes.data());
      float* y_cut = reinterpret_cast<float*>(y_cut_bytes.data());
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (size_t i = 0; i < x_count; ++i) x[i] = dist(rng);
      std::vector<double> t_single, t_tiled, t_cut;
      for (int r = 0; r < s.warmup + s.repeat; ++r) {
        const double a = Pass(single, sh, x, y);
        const double b = Pass(tiled, sh, x, y);
        const double c = Pass(cut, sh, x, y_cut);
        if (r >= s.warmup) {
          t_single.push_back(a);
          t_tiled.push_back(b);
          t_cut.push_back(c);
        }
      }
      // Every output column is computed by the same kernel from the same quantized row either
      // way: the cut layer must give the whole layer's bits.
      Pass(single, sh, x, y);
      if (std::memcmp(y, y_cut, y_count * sizeof(float)) != 0) {
        throw std::runtime_error("the cut layer's outputs differ from the whole layer's");
      }
      const double a = Median(t_single), b = Median(t_tiled), c = Median(t_cut);
      if (s.json) {
        out.push_back({{"n", n},
                       {"k", k},
                       {"rows", m},
                       {"threads", s.threads},
                       {"parts", parts},
                       {"one_thread_us", a},
                       {"tiled_us", b},
                       {"cut_us", c}});
        continue;
      }
      const std::string name = std::to_string(n) + " x " + std::to_string(k);
      std::printf("%-12s %4lld %12.1f %12.1f %7.2fx %12.1f %7.2fx%s\n", name.c_str(),
                  static_cast<long long>(m), a, b, a / b, c, a / c,
                  parts == 1 ? " (too few rows to cut: whole)" : "");
    }
  }
  if (s.json) std::printf("%s\n", out.dump(2).c_str());
  pthreadpool_destroy(pool);
  return 0;
}

}  // namespace

int BenchLinear(const LinearBenchSettings& s) {
  bench::Check(xnn::Initialize(), "XNNPACK");
  const Variant variants[] = {{"f32", DType::kF32, 0},
                              {"f16", DType::kF16, 0},
                              {"int8", DType::kI8, 0},
                              {"int4/row", DType::kI4, 0},
                              {"int4/block", DType::kI4, s.int4_block},
                              {"int8 session", DType::kI8, 0, true},
                              {"int4 session", DType::kI4, 0, true}};
  constexpr int kVariants = sizeof(variants) / sizeof(variants[0]);
  static_assert(kVariants == kLinearBenchWeightCount, "one --weights name per variant");
  auto timed = [&](int v) { return (s.weights >> v & 1u) != 0; };
  if (s.gather_rows > 0) return BenchGather(s, variants + 2, 2);  // int8, int4 per row
  if (s.split) return BenchSplit(s);
  pthreadpool_t pool = s.threads > 1 ? pthreadpool_create(static_cast<size_t>(s.threads)) : nullptr;
  const int64_t max_rows = *std::max_element(s.rows.begin(), s.rows.end());

  nlohmann::json out = nlohmann::json::array();
  if (!s.json) {
    std::printf(
        "us per call (GB/s of weights streamed) on %d thread%s, calls cycling through %.0f MiB "
        "of layers; last columns: int4 time / int8 time (< 1: int4 faster), and the int8 and "
        "int4 per-row layers as sessions run them (on AVX2-only CPUs tern's loops) / XNNPACK's\n",
        s.threads, s.threads == 1 ? "" : "s", s.working_set_bytes / (1024 * 1024));
    std::printf("%-12s %4s", "n x k", "M");
    for (int v = 0; v < kVariants; ++v) {
      if (timed(v)) std::printf(" %18s", variants[v].label);
    }
    std::printf(" %9s %9s %9s %9s\n", "row/int8", "block/int8", "sess/int8", "sess/row");
  }
  for (const auto& shape : s.shapes) {
    // copies[v]: variant v's layers, enough of them to stream from memory; their operators
    // (XNNPACK's packed weights, the loops' weight copies) in one block on huge pages each, as
    // a session's arena is (posix::ArenaMemory): read from 4 KiB pages, one row of int4 streamed
    // 8.4-10 GB/s against 12.2-12.7 on the AMX VM.
    std::vector<std::vector<Layer>> copies(kVariants);
    std::vector<posix::ArenaMemory> regions(kVariants);
    std::string paths[kVariants];
    for (int v = 0; v < kVariants; ++v) {
      if (!timed(v)) continue;
      Layer probe;
      // As a session builds it: with a pool, cut into one operator per thread when it is.
      const int parts = pool != nullptr ? xnn::CutParts(s.threads, shape.first) : 1;
      Build(shape.first, shape.second, variants[v], max_rows, pool, &probe, parts);
      const size_t count =
          static_cast<size_t>(std::max(1.0, std::ceil(s.working_set_bytes / probe.weight_bytes())));
      copies[static_cast<size_t>(v)] = std::vector<Layer>(count);
      const size_t stride = (probe.region_bytes + 63) / 64 * 64;
      auto memory = posix::ArenaMemory::Allocate(stride * count);
      bench::Check(memory.status(), "allocating the layers' regions");
      regions[static_cast<size_t>(v)] = std::move(memory.value());
      for (size_t i = 0; i < count; ++i) {
        Build(shape.first, shape.second, variants[v], max_rows, pool,
              &copies[static_cast<size_t>(v)][i], parts,
              regions[static_cast<size_t>(v)].data() + i * stride);
      }
      const xnn::LinearPath path = copies[static_cast<size_t>(v)][0].kernel.path;
      paths[v] =
          path != xnn::LinearPath::kReference ? std::string(xnn::LinearPathName(path))
          : copies[static_cast<size_t>(v)][0].kernel.panel_weight.data != nullptr
              ? "AVX2 loops on packed panels (vectorized/linear_sign.h)"
          : !vec::LinearQd8Takes(copies[static_cast<size_t>(v)][0].view())
              ? "vectorized loops"
              : std::string("integer loops (vectorized/linear_qd8.h, ") +
                    vec::Qd8IsaName(vec::LinearQd8Best(copies[static_cast<size_t>(v)][0].view())) +
                    ")";
    }
    for (int64_t m : s.rows) {
      const Shape sh{shape.first, shape.second, m};
      std::vector<float> x(static_cast<size_t>(m * sh.k)), y(static_cast<size_t>(m * sh.n));
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (auto& e : x) e = dist(rng);
      // Interleaved: each variant's median is over passes spread across the same time.
      std::vector<double> per[kVariants];
      for (int r = 0; r < s.warmup + s.repeat; ++r) {
        for (int v = 0; v < kVariants; ++v) {
          if (!timed(v)) continue;
          const double us = Pass(copies[static_cast<size_t>(v)], sh, x.data(), y.data());
          if (r >= s.warmup) per[v].push_back(us);
        }
      }
      double us[kVariants];
      for (int v = 0; v < kVariants; ++v) us[v] = timed(v) ? Median(per[v]) : 0.0;
      if (s.json) {
        for (int v = 0; v < kVariants; ++v) {
          if (!timed(v)) continue;
          const double bytes = copies[static_cast<size_t>(v)][0].weight_bytes();
          out.push_back({{"n", sh.n},
                         {"k", sh.k},
                         {"rows", m},
                         {"weights", variants[v].label},
                         {"path", paths[v]},
                         {"us", us[v]},
                         {"weight_gb_per_s", bytes / (us[v] * 1e3)},
                         {"gflops", 2.0 * static_cast<double>(m * sh.n * sh.k) / (us[v] * 1e3)}});
        }
        continue;
      }
      const std::string name = std::to_string(sh.n) + " x " + std::to_string(sh.k);
      std::printf("%-12s %4lld", name.c_str(), static_cast<long long>(m));
      for (int v = 0; v < kVariants; ++v) {
        if (!timed(v)) continue;
        const double gbs = copies[static_cast<size_t>(v)][0].weight_bytes() / (us[v] * 1e3);
        std::printf(" %10.1f (%5.1f)", us[v], gbs);
      }
      // time over time of two weight types ("-": one of them not timed)
      auto ratio = [&](int a, int b) {
        if (timed(a) && timed(b)) {
          std::printf(" %9.2f", us[a] / us[b]);
        } else {
          std::printf(" %9s", "-");
        }
      };
      ratio(3, 2);
      ratio(4, 2);
      ratio(5, 2);
      ratio(6, 3);
      std::printf("\n");
    }
    if (!s.json && &shape == &s.shapes.back()) {
      std::printf("paths: ");
      const char* separator = "";
      for (int v = 0; v < kVariants; ++v) {
        if (!timed(v)) continue;
        std::printf("%s%s = %s", separator, variants[v].label, paths[v].c_str());
        separator = ", ";
      }
      std::printf("\n");
    }
  }
  if (s.json) std::printf("%s\n", out.dump(2).c_str());
  if (pool) pthreadpool_destroy(pool);
  return 0;
}

#else

int BenchLinear(const LinearBenchSettings&) {
  throw std::runtime_error("tern bench --linear: this build has no XNNPACK");
}

#endif

}  // namespace tern::cli
